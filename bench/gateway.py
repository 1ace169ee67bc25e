"""The gateway's cost, against the same requests sent straight through ``route.auth``.

    python bench/gateway.py [--quick]

The gateway runs in a process of its own (``copilot-host serve`` through the CLI's test
seam, its upstream an emulator), so its CPU time and memory are its own; each emulator
runs in another process, and the clients in this one. Measured in one run:

1. **Latency at 1 client**: non-streaming Chat requests, alternately straight to the
   emulator through ``route.auth`` and through the gateway, over keep-alive connections.
   Added latency = gateway minus direct, at the median and at p99 (targets: <= 1 ms,
   <= 3 ms). Also the gateway's CPU time per request (target <= 1.5 ms), beside a
   baseline run the same way: a bare uvicorn app that relays with one httpx2 request.
   Both on the default stack (``[fast]``: httptools, the aiohttp transport under httpx2,
   orjson, when installed) and on the pure-Python one, the base install's (h11 on
   asyncio, httpx2's own transport, json: ``COPILOT_HOST_PURE_PYTHON=1`` in the
   children), taken alternately ``--rounds`` times (default 2), medians side by side;
   the baseline runs on the same stack, over the same upstream transport. Targets:
   gateway / baseline <= 1.4x on [fast], <= 1.3x on the pure stack.
2. **64 concurrent clients**: requests per second through the gateway as a share of the
   same load sent direct (target >= 70%).
3. **A 1,000-event stream**: a tap between the emulator and its clients (direct, or the
   gateway) notes when each event passes it; the client notes when it arrives. The added
   delay per event is the gateway's (arrival - tap) minus direct's, at the median
   (target <= 0.1 ms). Events come 1 ms apart, so each is relayed on its own.
4. **256 concurrent streams** through the gateway: errors (target none) and the gateway's
   resident memory while they are open (target < 150 MB).
5. **Session exchanges**: 256 concurrent first requests to a fresh gateway, then 256 more
   once its session is due (emulated sessions live 10 s): exchanges seen upstream each time
   (target: exactly one).
6. **Where the time goes**: the gateway process once more under cProfile for the latency
   run (on the default stack); its busy time split into socket writes, HTTP parsing (h11
   or httptools, both sides), the server (uvicorn), the upstream client (httpx2 and its
   transport: aiohttp, or httpcore2 and anyio), the gateway's own code, route.auth and the
   session check, the access log and masking, the event loop.

Figures are printed, not asserted; this machine is shared and small. ``--quick`` cuts
the counts (for a smoke run); ``--only-cpu`` stops after section 1.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "How are you?"}]}
STREAM = {**CHAT, "stream": True}


# -- the roles of the child processes -----------------------------------------------------------


def role_emulator(groups: dict[str, Any]) -> None:
    """An emulator (``groups``: the ``replies`` and ``session`` groups' fields, as JSON
    carries them; ``"websocket": true`` lists ``ws:/responses`` for gpt-5-mini;
    ``"inventory": "whole"`` serves every model and takes any shape); prints its
    port, then answers commands on stdin until it closes: ``count ENDPOINT`` prints how
    many requests reached it, ``clear`` forgets them, ``socket`` prints the port of its
    Copilot WebSocket."""
    from copilot_host.testing import (
        GitHubEmulator,
        Inventory,
        Replies,
        Scenario,
        Session,
        minimal_models,
    )

    models = minimal_models()
    if groups.get("websocket"):
        models = tuple(
            _with_socket(item) if item.get("id") == "gpt-5-mini" else item for item in models
        )
    # "whole": an agent's bodies, so every model served (the default inventory) and any
    # shape taken.
    whole = groups.get("inventory") == "whole"
    scenario = Scenario(
        inventory=Inventory() if whole else Inventory(models=models),
        replies=Replies(**groups.get("replies", {})),
        session=Session(**groups.get("session", {})),
        lenient=whole,
    )
    with GitHubEmulator(scenario) as emulator:
        print(emulator.port, flush=True)
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "count":
                print(len(emulator.requests_to(argument)), flush=True)
            elif command == "clear":
                emulator.clear_requests()
                print("ok", flush=True)
            elif command == "socket":
                print(emulator.socket_port, flush=True)


def _with_socket(item: Mapping[str, object]) -> dict[str, object]:
    """An inventory entry that lists ``ws:/responses`` too."""
    listed = item.get("supported_endpoints")
    return {**item, "supported_endpoints": [*(listed or []), "ws:/responses"]}  # type: ignore[misc]


def role_tap(target: int) -> None:
    """A TCP relay in front of an emulator that notes the monotonic time at which each
    event end (a blank line) passed it toward the client. Prints its port; ``take`` on
    stdin prints the times noted since the last ``take``, ``sent`` the bytes that went
    toward the emulator since the last ``sent``."""
    times: list[float] = []
    sent = [0]

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, note: bool) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                if note:
                    now = time.monotonic()
                    times.extend([now] * data.count(b"\n\n"))
                else:
                    sent[0] += len(data)
                await sink.drain()
        except ConnectionError:
            pass
        finally:
            sink.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        for stream in (writer, up_writer):
            sock = stream.get_extra_info("socket")
            sock.setsockopt(6, 1, 1)  # TCP_NODELAY: an event goes out when it comes in
        await asyncio.gather(pump(reader, up_writer, False), pump(up_reader, writer, True))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            if line.strip() == "take":
                taken, times[:] = list(times), []
                print(json.dumps(taken), flush=True)
            elif line.strip() == "sent":
                print(sent[0], flush=True)
                sent[0] = 0

    asyncio.run(main())


def role_gateway(upstream: int, emulator: int, sockets: int | None = None) -> None:
    """``copilot-host serve --port 0 --json`` with the emulator behind the CLI's test seam
    (the host's requests to ``emulator``, model requests to ``upstream``, and with
    ``sockets`` Copilot's WebSocket to that port)."""
    from copilot_host_cli import main as cli
    from copilot_host_cli._context import CliSeam

    linger = os.environ.get("BENCH_LEDGER_LINGER")
    if linger:  # instructions.py: the writer's wait stretched as valgrind stretches time
        from copilot_host.gateway._ledger import _writer

        _writer.LINGER = float(linger)

    from copilot_host.gateway import upstream_transport
    from copilot_host.gateway._app import UPSTREAM_LIMITS
    from copilot_host.github import AsyncGitHubCopilotHost
    from copilot_host.testing import async_loopback_transport, loopback_socket_connector

    def host(*, store: Any, clock: Any) -> AsyncGitHubCopilotHost:
        return AsyncGitHubCopilotHost(store=store, transport=async_loopback_transport(emulator))

    def model_transport() -> httpx2.AsyncBaseTransport:
        # Over the transport serve gives an app on this stack (aiohttp on [fast]), as wide
        # as the gateway's own pool on the real network.
        inner = upstream_transport()
        if inner is None:
            return async_loopback_transport(upstream, limits=UPSTREAM_LIMITS)
        return async_loopback_transport(upstream, inner=inner)

    seam = CliSeam(
        async_host_factory=host,
        upstream_transport=model_transport,
        upstream_sockets=(lambda: loopback_socket_connector(sockets)) if sockets else None,
    )
    cli(["serve", "--port", "0", "--json"], obj=seam, prog_name="copilot-host")


def role_bare(upstream: int, emulator: int) -> None:
    """The baseline: a bare uvicorn app (no access log; on the server stack serve would
    use in this environment, unhardened, and over the same upstream transport) that sends
    each request body upstream with one ``httpx2.AsyncClient`` request (headers fixed
    once, as route.auth set them for a first request) and answers with what came back.
    Prints its port."""
    from copilot_host.gateway import upstream_transport
    from copilot_host.gateway._app import UPSTREAM_LIMITS
    from copilot_host.testing import async_loopback_transport, loopback_transport

    def client() -> httpx2.AsyncClient:
        inner = upstream_transport()
        return httpx2.AsyncClient(
            transport=async_loopback_transport(upstream, limits=UPSTREAM_LIMITS)
            if inner is None
            else async_loopback_transport(upstream, inner=inner)
        )

    serve_bare_relay(loopback_transport(emulator), client)


def serve_bare_relay(
    transport: httpx2.BaseTransport | None, client: Callable[[], httpx2.AsyncClient]
) -> None:
    """Serve the bare relay for the first model route of the login in
    ``$COPILOT_HOST_HOME`` (its GitHub calls over ``transport``), each request sent with
    one request of the client ``client()`` makes; prints the port, then serves until
    stopped. ``bench/copilot_api.py`` runs the same baseline over TLS."""
    import socket

    import uvicorn

    import copilot_host as ch
    from copilot_host.gateway._server._malloc import tune_malloc
    from copilot_host.gateway._server._stack import server_stack
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore

    # As serve does: without it, whether each socket read maps memory depends on the heap's
    # history, which would differ between the two processes for no reason of theirs.
    tune_malloc()
    home = Path(os.environ["COPILOT_HOST_HOME"])
    with GitHubCopilotHost(store=CredentialStore(home, key_file=True), transport=transport) as host:
        route = ch.register_models(ch.Catalog(), host).routes[0]
        first = httpx2.Request("POST", route.url, content=b"{}")
        headers = list(next(route.auth.sync_auth_flow(first)).headers.raw)
    headers = [(k, v) for k, v in headers if k.lower() not in (b"host", b"content-length")]
    origin = httpx2.URL(route.url).copy_with(path="/")
    upstream: httpx2.AsyncClient | None = None

    urls: dict[str, httpx2.URL] = {}

    def url_of(path: str) -> httpx2.URL:
        # Made once per path, as 0.4.0's baseline made its one URL once: a URL built per
        # request would add httpx2's parse to the baseline and flatter the gateway's ratio.
        url = urls.get(path)
        if url is None:
            # Copilot's paths: /chat/completions and /responses without /v1, /v1/messages with.
            kept = path if path == "/v1/messages" else path.removeprefix("/v1")
            url = urls[path] = origin.copy_with(path=kept)
        return url

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal upstream
        if upstream is None:
            upstream = client()
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        answer = await upstream.post(url_of(scope["path"]), content=body, headers=headers)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status_code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answer.content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer.content})

    # IPPROTO_TCP named, as serve does: asyncio turns Nagle off only on sockets so made.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(
        app,
        lifespan="off",
        access_log=False,
        log_level="warning",
        http=server_stack().http,
        loop="asyncio",
    )
    uvicorn.Server(config).run(sockets=[listener])


# -- the parent's handles on them ---------------------------------------------------------------


class Child:
    def __init__(
        self, argv: list[str], env: dict[str, str] | None = None, stdout: int = subprocess.PIPE
    ) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

    def line(self) -> str:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        if not text:
            raise RuntimeError(f"{self.process.args!r} ended")
        return text.strip()

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.line()

    def cpu_seconds(self) -> float:
        """The process's CPU time so far: the scheduler's own count of each live thread's
        time on a CPU (``/proc/PID/task/*/schedstat``, nanoseconds) where Linux keeps it,
        else ``/proc/PID/stat``'s user and system time, which is sampled at each clock tick
        (10 ms) and charges a whole tick to whichever thread it finds running."""
        tasks = Path(f"/proc/{self.process.pid}/task")
        try:
            return (
                sum(int((task / "schedstat").read_text().split()[0]) for task in tasks.iterdir())
                / 1e9
            )
        except (OSError, ValueError, IndexError):
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self, field: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Emulator:
    child: Child
    port: int

    def count(self, endpoint: str) -> int:
        return int(self.child.ask(f"count {endpoint}"))


@dataclass
class Gateway:
    child: Child
    base_url: str
    key: str


def _me(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


@contextmanager
def emulator(**groups: Any) -> Iterator[Emulator]:
    """An emulator in a child process; ``groups`` are ``Scenario`` groups' fields by group
    (``replies={"stream_events": 20}``), the groups ``role_emulator`` takes."""
    child = Child(_me("--role", "emulator", json.dumps(groups)))
    try:
        yield Emulator(child, int(child.line()))
    finally:
        child.stop()


@contextmanager
def tap(target: int) -> Iterator[tuple[Child, int]]:
    child = Child(_me("--role", "tap", str(target)))
    try:
        yield child, int(child.line())
    finally:
        child.stop()


def login(home: Path, emulator_port: int) -> None:
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import loopback_transport

    home.mkdir(mode=0o700, exist_ok=True)
    with GitHubCopilotHost(
        store=CredentialStore(home, key_file=True),
        transport=loopback_transport(emulator_port),
    ) as person:
        person.login(sleep=lambda _seconds: None)


# The stacks section 1 compares by default: the default one and the pure-Python one.
# ``--stacks`` may add ones only the bench's children can be put on (BENCH_SERVER_STACK):
# ``h11`` (the pure-Python parser with the other accelerations: what httptools gives),
# ``uvloop`` (the default on libuv's event loop, when installed: what uvloop would give),
# and ``+unhardened`` ones (``httptools+unhardened``: uvicorn's own protocol, to see what
# serve's connection bounds cost).
STACKS = ("default", "pure-python")
# Gateway CPU per request over the baseline's on the same stack (issue 28): "default" is
# [fast] when installed, "pure-python" the base install's stack.
CPU_TARGETS = {"default": 1.4, "pure-python": 1.3}


def _stack_env(stack: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COPILOT_HOST_PURE_PYTHON", "BENCH_SERVER_STACK")
    }
    if stack == "pure-python":
        env["COPILOT_HOST_PURE_PYTHON"] = "1"
    elif stack != "default":
        env["BENCH_SERVER_STACK"] = stack
    return env


def _forced_stack() -> None:
    """In a child: put serve (and the baseline) on BENCH_SERVER_STACK when set."""
    wanted = os.environ.get("BENCH_SERVER_STACK")
    if not wanted:
        return
    from copilot_host.gateway._server import _serving, _stack

    if wanted.endswith("+unhardened"):
        # What serve's connection bounds cost: uvicorn's own protocol instead.
        wanted = wanted.removesuffix("+unhardened")

        def plain(_book: object, *, http: str = "h11", **_bounds: object) -> Any:
            from uvicorn.protocols.http.h11_impl import H11Protocol
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

            return HttpToolsProtocol if http == "httptools" else H11Protocol

        setattr(_serving, "hardened_protocol", plain)  # noqa: B010 (replaced for this run)
    if wanted == "uvloop":
        uvloop = importlib.import_module("uvloop")  # not a dependency: installed by hand

        uvloop.install()  # the children start their loops with asyncio.run
        return
    # The parser forced; the upstream transport as the environment has it.
    stack = _stack.ServerStack(
        http=wanted,  # type: ignore[arg-type]
        transport=_stack.server_stack().transport,
    )
    _serving.server_stack = lambda environ=None: stack  # type: ignore[attr-defined]


@contextmanager
def gateway(
    home: Path,
    emulator_port: int,
    upstream: int | None = None,
    profile: Path | None = None,
    stack: str = "default",
    sockets: int | None = None,
    ledger: bool = True,
    wrap: Sequence[str] = (),
    extra_env: dict[str, str] | None = None,
) -> Iterator[Gateway]:
    """``role_gateway`` in a process of its own, its argv after ``wrap`` (a profiler)."""
    env = {
        **_stack_env(stack),
        "COPILOT_HOST_HOME": str(home),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(ROOT),
    }
    if not ledger:
        env["COPILOT_HOST_LEDGER"] = "off"
    argv = _me("--role", "gateway", str(upstream or emulator_port), str(emulator_port))
    if sockets is not None:
        argv.append(str(sockets))
    if profile is not None:
        argv = [sys.executable, "-m", "cProfile", "-o", str(profile), *argv[1:]]
    child = Child([*wrap, *argv], {**env, **(extra_env or {})})
    try:
        listening = json.loads(child.line())
        yield Gateway(child, listening["base_url"], listening["api_key"])
    finally:
        child.stop()


@contextmanager
def bare(
    home: Path, emulator_port: int, stack: str = "default", wrap: Sequence[str] = ()
) -> Iterator[Gateway]:
    """The baseline server (role_bare), with the same handle as a gateway's."""
    env = {**_stack_env(stack), "COPILOT_HOST_HOME": str(home), "PYTHONPATH": str(ROOT)}
    child = Child([*wrap, *_me("--role", "bare", str(emulator_port), str(emulator_port))], env)
    try:
        port = int(child.line())
        yield Gateway(child, f"http://127.0.0.1:{port}/v1", "bare-baseline-key")
    finally:
        child.stop()


@contextmanager
def keyed_gateway() -> Iterator[tuple[Gateway, str, dict[str, str]]]:
    """A gateway in its own process on a logged-in emulator of its own, with its root URL
    (no ``/v1``) and the headers of a keyed JSON request (for the one-question benches)."""
    with tempfile.TemporaryDirectory() as folder, emulator() as emu:
        home = Path(folder) / "home"
        login(home, emu.port)
        with gateway(home, emu.port) as gw:
            key = {"Authorization": f"Bearer {gw.key}", "Content-Type": "application/json"}
            yield gw, gw.base_url.removesuffix("/v1"), key


# -- measurements -------------------------------------------------------------------------------


def direct_route(home: Path, emulator_port: int) -> tuple[Any, Any]:
    """A blocking host on the same login and the gpt-4.1 route registered through it."""
    import copilot_host as ch
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import loopback_transport

    host = GitHubCopilotHost(
        store=CredentialStore(home, key_file=True), transport=loopback_transport(emulator_port)
    )
    catalog = ch.Catalog()
    ch.register_models(catalog, host)
    route = catalog.get("github-copilot/gpt-4.1")
    assert route is not None
    return host, route


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def latency(
    gw: Gateway, route: Any, emulator_port: int, relay_port: int, count: int
) -> dict[str, Any]:
    """Round trips of one non-streaming request, in turn: direct, through a bare TCP relay
    process (what any extra hop costs here), through the gateway."""
    from copilot_host.testing import loopback_transport

    times: dict[str, list[float]] = {"direct": [], "relay": [], "gateway": []}
    body = json.dumps(CHAT).encode()
    headers = {"Content-Type": "application/json"}
    with (
        httpx2.Client(auth=route.auth, transport=loopback_transport(emulator_port)) as direct,
        httpx2.Client(auth=route.auth, transport=loopback_transport(relay_port)) as relayed,
        httpx2.Client(headers={"Authorization": f"Bearer {gw.key}"}) as through,
    ):
        calls: dict[str, Callable[[], httpx2.Response]] = {
            "direct": lambda: direct.post(route.url, content=body, headers=headers),
            "relay": lambda: relayed.post(route.url, content=body, headers=headers),
            "gateway": lambda: through.post(
                f"{gw.base_url}/chat/completions", content=body, headers=headers
            ),
        }
        for _ in range(20):  # warm every path (connections, registration)
            for call in calls.values():
                call().raise_for_status()
        cpu_before = gw.child.cpu_seconds()
        for _ in range(count):
            for kind, call in calls.items():
                start = time.perf_counter()
                answer = call()
                times[kind].append((time.perf_counter() - start) * 1000)
                answer.raise_for_status()
        cpu = gw.child.cpu_seconds() - cpu_before
    found: dict[str, Any] = {"gateway_cpu_us": cpu / count * 1e6}
    for kind, values in times.items():
        found[kind] = (statistics.median(values), percentile(values, 0.99))
    return found


async def _hammer(client: httpx2.AsyncClient, url: str, clients: int, each: int) -> int:
    body = json.dumps(CHAT).encode()
    errors = 0

    async def one() -> None:
        nonlocal errors
        for _ in range(each):
            answer = await client.post(
                url, content=body, headers={"Content-Type": "application/json"}
            )
            errors += answer.status_code != 200

    await asyncio.gather(*(one() for _ in range(clients)))
    return errors


def throughput(gw: Gateway, route: Any, emulator_port: int, each: int) -> dict[str, float]:
    from copilot_host.testing import async_loopback_transport

    limits = httpx2.Limits(max_connections=128, max_keepalive_connections=128)
    results = {}

    async def run(kind: str) -> None:
        if kind == "direct":
            # Direct is an application on httpx2's own transport, whatever the gateway's.
            transport = async_loopback_transport(emulator_port, limits=limits)
            client = httpx2.AsyncClient(auth=route.auth, transport=transport, timeout=60)
            url = route.url
        else:
            client = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {gw.key}"}, limits=limits, timeout=60
            )
            url = f"{gw.base_url}/chat/completions"
        async with client:
            await _hammer(client, url, 64, 2)  # warm-up: 64 connections open
            start = time.perf_counter()
            errors = await _hammer(client, url, 64, each)
            elapsed = time.perf_counter() - start
        results[f"{kind}_rps"] = 64 * each / elapsed
        results[f"{kind}_errors"] = errors

    for kind in ("direct", "gateway", "direct", "gateway"):
        asyncio.run(run(kind))
    return results


def _events(response: httpx2.Response) -> list[float]:
    """The arrival time of each event of a streamed answer."""
    times: list[float] = []
    for chunk in response.iter_raw():
        now = time.monotonic()
        times.extend([now] * chunk.count(b"\n\n"))
    return times


def stream_delay(
    gw: Gateway, route: Any, tap_child: Child, tap_port: int, hop_port: int, runs: int
) -> dict[str, Any]:
    """Per event, (arrival at the client) - (passage through the tap), for the stream
    taken direct, through one more bare relay hop, and through the gateway."""
    from copilot_host.testing import loopback_transport

    delays: dict[str, list[float]] = {"direct": [], "relay": [], "gateway": []}
    counts = set()
    with (
        httpx2.Client(
            auth=route.auth, transport=loopback_transport(tap_port), timeout=60
        ) as direct,
        httpx2.Client(auth=route.auth, transport=loopback_transport(hop_port), timeout=60) as hop,
        httpx2.Client(headers={"Authorization": f"Bearer {gw.key}"}, timeout=60) as through,
    ):
        tap_child.ask("take")
        for run in range(runs + 1):
            for kind in delays:
                if kind == "gateway":
                    opened = through.stream("POST", f"{gw.base_url}/chat/completions", json=STREAM)
                else:
                    opened = (direct if kind == "direct" else hop).stream(
                        "POST", route.url, json=STREAM
                    )
                with opened as response:
                    arrived = _events(response)
                passed = json.loads(tap_child.ask("take"))
                if len(passed) != len(arrived):
                    raise RuntimeError(
                        f"{kind}: {len(passed)} events passed the tap, {len(arrived)} arrived"
                    )
                counts.add(len(arrived))
                if run:  # the first round warms up
                    delays[kind] += [(a - p) * 1000 for a, p in zip(arrived, passed, strict=True)]
    found: dict[str, Any] = {"events": sorted(counts)}
    for kind, values in delays.items():
        found[kind] = (statistics.median(values), percentile(values, 0.99))
    return found


def stream_cpu(gw: Gateway) -> float:
    """The gateway's CPU time (user and system) per event relayed, events 1 ms apart."""
    with httpx2.Client(headers={"Authorization": f"Bearer {gw.key}"}, timeout=60) as client:
        before = gw.child.cpu_seconds()
        events = 0
        for _ in range(2):
            with client.stream("POST", f"{gw.base_url}/chat/completions", json=STREAM) as answer:
                events += sum(chunk.count(b"\n\n") for chunk in answer.iter_raw())
        return (gw.child.cpu_seconds() - before) / events * 1e6


def many_streams(gw: Gateway, streams: int) -> dict[str, Any]:
    peak = 0.0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, gw.child.rss_mb())

    async def run() -> tuple[int, int, list[str]]:
        limits = httpx2.Limits(max_connections=streams + 16, max_keepalive_connections=streams)
        failures: list[str] = []
        events = 0
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {gw.key}"}, limits=limits, timeout=120
        ) as client:

            async def one() -> None:
                nonlocal events
                try:
                    async with client.stream(
                        "POST", f"{gw.base_url}/chat/completions", json=STREAM
                    ) as response:
                        if response.status_code != 200:
                            failures.append(str(response.status_code))
                        async for chunk in response.aiter_raw():
                            events += chunk.count(b"\n\n")
                except httpx2.HTTPError as exc:
                    failures.append(type(exc).__name__)

            await asyncio.gather(*(one() for _ in range(streams)))
        return streams, events, failures

    idle = gw.child.rss_mb()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    count, events, failures = asyncio.run(run())
    elapsed = time.perf_counter() - start
    done.set()
    watcher.join()
    return {
        "streams": count,
        "events": events,
        "errors": failures,
        "seconds": elapsed,
        "rss_idle_mb": idle,
        "rss_peak_mb": max(peak, gw.child.rss_mb()),
        "hwm_mb": gw.child.rss_mb("VmHWM"),
    }


def exchanges(gw: Gateway, emu: Emulator, burst: int) -> dict[str, Any]:
    async def fire() -> list[int]:
        limits = httpx2.Limits(max_connections=burst + 16)
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {gw.key}"}, limits=limits, timeout=120
        ) as client:
            answers = await asyncio.gather(
                *(client.post(f"{gw.base_url}/chat/completions", json=CHAT) for _ in range(burst))
            )
        return [a.status_code for a in answers]

    emu.child.ask("clear")
    cold = asyncio.run(fire())
    cold_exchanges = emu.count("copilot_token")
    cold_discoveries = emu.count("models")
    # Emulated sessions live 10 s (no refresh_in): from 5 s on one is due for a refresh,
    # and from 9 s on everyone must wait for it. Wait for the second.
    time.sleep(9.3)
    emu.child.ask("clear")
    due = asyncio.run(fire())
    return {
        "cold_ok": cold.count(200),
        "cold_exchanges": cold_exchanges,
        "cold_discoveries": cold_discoveries,
        "due_ok": due.count(200),
        "due_exchanges": emu.count("copilot_token"),
        "burst": burst,
    }


# Where a function's own time is counted: by the file it is in (the first bucket whose
# needle is in "file:function" wins), or for built-ins by their name.
BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "socket writes and reads (kernel; on 2 cores this includes the peer waking)",
        (
            "method 'send' of '_socket",
            "method 'recv' of '_socket",
            "method 'sendall' of",
        ),
    ),
    ("HTTP parsing and writing, both sides (h11, httptools)", ("/h11/", "httptools")),
    (
        "server: uvicorn and the gateway's hardening",
        ("/uvicorn/", "gateway/_server/"),
    ),
    (
        "upstream client: httpx2 and its transport (aiohttp, or httpcore2 and anyio)",
        (
            "/httpx2/",
            "/httpcore2/",
            "/anyio/",
            "/sniffio/",
            "/aiohttp/",
            "/yarl/",
            "/multidict/",
            "/propcache/",
            "gateway/_aiotransport",
        ),
    ),
    ("the bench's loopback seam (copilot_host.testing; not in production)", ("/testing/",)),
    (
        "route.auth and the session check",
        (
            "copilot_host/_sessions/",
            "copilot_host/store/",
            "copilot_host/github/",
            "posix.lstat",
        ),
    ),
    (
        "access log (formatting, redaction, the stderr writer thread) and masking",
        (
            "/logging/",
            "copilot_host/_safety/",
            "gateway/_lines",
            "cli/_logging",
            "/threading.py",
            "method 'acquire' of '_thread",
            "method 'release' of '_thread",
            "posix.write",
        ),
    ),
    # After the access log and the server, whose gateway modules count there.
    ("the gateway app", ("copilot_host/gateway/",)),
    (
        "event loop (asyncio, selectors, uvloop)",
        ("/asyncio/", "selectors.py", "_contextvars", "uvloop"),
    ),
)
# Waiting in epoll: asyncio's selector; under uvloop, libuv waits inside the loop's run,
# which cProfile does not see as a call of its own, so its time lands on the Runner's run
# that started it (the callbacks it makes are counted on their own).
IDLE = ("method 'poll' of 'select.epoll'", "asyncio/runners.py:run")


def where_time_goes(profile: Path, requests: int) -> tuple[float, list[tuple[str, float, float]]]:
    """(idle seconds, [(bucket, share of busy time %, us per request)]) from cProfile's own
    times (wall clock, as cProfile measures)."""
    stats = pstats.Stats(str(profile))
    totals: dict[str, float] = {}
    idle = 0.0
    for (filename, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        own = row[2]
        where = f"{filename}:{name}"
        if any(needle in where for needle in IDLE):
            idle += own
            continue
        label = "other (built-ins called from all of the above; start-up imports)"
        for bucket, needles in BUCKETS:
            if any(needle in where for needle in needles):
                label = bucket
                break
        totals[label] = totals.get(label, 0.0) + own
    busy = sum(totals.values())
    rows = sorted(
        ((label, share / busy * 100, share / requests * 1e6) for label, share in totals.items()),
        key=lambda row: -row[1],
    )
    return idle, rows


# -- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="alternate runs per stack in section 1"
    )
    parser.add_argument("--only-cpu", action="store_true", help="section 1 only")
    parser.add_argument(
        "--stacks",
        default=",".join(STACKS),
        help="server stacks section 1 compares (default, pure-python, httptools-asyncio, ...)",
    )
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("role_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "emulator":
        return role_emulator(json.loads(args.role_args[0]))
    if args.role == "tap":
        return role_tap(int(args.role_args[0]))
    _forced_stack()
    if args.role == "gateway":
        sockets = int(args.role_args[2]) if len(args.role_args) > 2 else None
        return role_gateway(int(args.role_args[0]), int(args.role_args[1]), sockets)
    if args.role == "bare":
        return role_bare(int(args.role_args[0]), int(args.role_args[1]))

    scale = 0.1 if args.quick else 1.0
    said: Callable[..., None] = print
    said(f"gateway benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)

        # 1, 2, 6: the emulator's default answers.
        with emulator() as emu, tap(emu.port) as (_relay_child, relay_port):
            home = base / "home-1"
            login(home, emu.port)
            host, route = direct_route(home, emu.port)
            count = max(200, int(2000 * scale))
            stacks = args.stacks.split(",")
            cpu: dict[str, list[float]] = {stack: [] for stack in stacks}
            floor_cpu: dict[str, list[float]] = {stack: [] for stack in stacks}
            added: dict[str, list[float]] = {stack: [] for stack in stacks}
            lat: dict[str, Any] = {}
            for _round in range(args.rounds):
                for stack in stacks:
                    with gateway(home, emu.port, stack=stack) as gw:
                        found = latency(gw, route, emu.port, relay_port, count)
                    with bare(home, emu.port, stack=stack) as baseline:
                        floor = latency(baseline, route, emu.port, relay_port, count)
                    cpu[stack].append(found["gateway_cpu_us"])
                    floor_cpu[stack].append(floor["gateway_cpu_us"])
                    added[stack].append(found["gateway"][0] - found["direct"][0])
                    if stack == stacks[0]:
                        lat = found  # the latency figures: the first stack's last run
            said(f"\n1. latency at 1 client ({count} non-streaming Chat requests each way)")
            for kind in ("direct", "relay", "gateway"):
                median, p99 = lat[kind]
                said(f"   {kind:8} median {median:6.2f} ms   p99 {p99:6.2f} ms")
            for kind in ("relay", "gateway"):
                median = lat[kind][0] - lat["direct"][0]
                p99 = lat[kind][1] - lat["direct"][1]
                said(f"   added by the {kind:7}: median {median:.2f} ms, p99 {p99:.2f} ms")
            said(
                "   (targets for the gateway: <= 1 ms, <= 3 ms; the relay is a bare asyncio\n"
                "   byte relay process: what any extra hop costs here)\n"
                f"   CPU per request, medians of {args.rounds} alternate runs (target for the"
                " gateway <= 1500 us):"
            )
            for stack in stacks:
                mine, floor_us = statistics.median(cpu[stack]), statistics.median(floor_cpu[stack])
                taken = " ".join(f"{value:.0f}" for value in cpu[stack])
                target = CPU_TARGETS.get(stack)
                verdict = (
                    ""
                    if target is None
                    else f" (target <= {target}x: {'ok' if mine / floor_us <= target else 'OVER'})"
                )
                said(
                    f"   {stack:17} gateway {mine:5.0f} us ({taken}); baseline (bare uvicorn app"
                    f" + one httpx2 request) {floor_us:5.0f} us; gateway / baseline"
                    f" {mine / floor_us:.2f}x{verdict}; added latency median"
                    f" {statistics.median(added[stack]):.2f} ms"
                )
            if args.only_cpu:
                host.close()
                return None
            with gateway(home, emu.port) as gw:
                each = max(5, int(40 * scale))
                tput = throughput(gw, route, emu.port, each)
                direct_rps, gateway_rps = tput["direct_rps"], tput["gateway_rps"]
                said(
                    f"\n2. 64 concurrent clients ({64 * each} requests a run, two runs each way)\n"
                    f"   direct  {direct_rps:.0f} req/s   gateway {gateway_rps:.0f} req/s"
                    f"   ratio {gateway_rps / direct_rps:.0%} (target >= 70%)"
                    f"   errors {int(tput['direct_errors'])}/{int(tput['gateway_errors'])}"
                )
            profile = Path(os.environ.get("BENCH_PROFILE", base / "gateway.prof"))
            with gateway(home, emu.port, profile=profile) as gw:
                latency(gw, route, emu.port, relay_port, count)
            host.close()
            idle, rows = where_time_goes(profile, count + 20)
            said(
                f"\n6. where the gateway's time goes (cProfile, {count + 20} requests; busy"
                f" time only, {idle:.1f} s waiting in epoll left out; profiled times are"
                " inflated)"
            )
            for label, share, per in rows:
                said(f"   {share:5.1f}%  {per:7.0f} us/request  {label}")

        # 3: streams of 1,000 text events, 1 ms apart, through a tap (and one more hop).
        with (
            emulator(replies={"stream_events": 1000, "stream_pause": 0.001}) as emu,
            tap(emu.port) as (tap_child, tap_port),
            tap(tap_port) as (_hop_child, hop_port),
        ):
            home = base / "home-3"
            login(home, emu.port)
            host, route = direct_route(home, emu.port)
            with gateway(home, emu.port, upstream=tap_port) as gw:
                runs = max(2, int(5 * scale))
                sse = stream_delay(gw, route, tap_child, tap_port, hop_port, runs)
                said(f"\n3. {runs} streams of {sse['events']} events (1 ms apart) each way")
                for kind in ("direct", "relay", "gateway"):
                    median, p99 = sse[kind]
                    said(f"   {kind:8} tap to client: median {median:.3f} ms   p99 {p99:.3f} ms")
                for kind in ("relay", "gateway"):
                    said(
                        f"   added per event by the {kind:7}: median "
                        f"{sse[kind][0] - sse['direct'][0]:.3f} ms"
                    )
                said("   (target for the gateway: <= 0.1 ms)")
                gw_cpu = stream_cpu(gw)
                said(
                    f"   gateway CPU per relayed event: {gw_cpu:.0f} us (kernel time of its"
                    " loopback writes included)"
                )
            host.close()

        # 4: streams that stay open for about 2 s each.
        with emulator(replies={"stream_events": 20, "stream_pause": 0.1}) as emu:
            home = base / "home-4"
            login(home, emu.port)
            with gateway(home, emu.port) as gw:
                many = many_streams(gw, 256)
                said(
                    f"\n4. {many['streams']} concurrent streams through the gateway "
                    f"({many['events']} events in {many['seconds']:.1f} s)\n"
                    f"   errors {len(many['errors'])} {sorted(set(many['errors']))}"
                    f"   gateway RSS idle {many['rss_idle_mb']:.0f} MB,"
                    f" peak {many['rss_peak_mb']:.0f} MB (high-water {many['hwm_mb']:.0f} MB;"
                    " target < 150)"
                )

        # 5: sessions that live 10 s.
        with emulator(session={"session_lifetime": 10, "refresh_in": None}) as emu:
            home = base / "home-5"
            login(home, emu.port)
            with gateway(home, emu.port) as gw:
                ex = exchanges(gw, emu, 256)
                said(
                    f"\n5. session exchanges ({ex['burst']} concurrent requests)\n"
                    f"   first requests to a fresh gateway: {ex['cold_exchanges']} exchange,"
                    f" {ex['cold_discoveries']} discovery ({ex['cold_ok']} answered 200)\n"
                    f"   when its session is due: {ex['due_exchanges']} exchange"
                    f" ({ex['due_ok']} answered 200)   (target: exactly 1)"
                )
    return None


if __name__ == "__main__":
    main()
