"""The gateway beside the npm ``copilot-api`` 0.7.0 gateway, in one run, both over TLS.

    python bench/copilot_api.py [--workload chat|claude|codex] [--requests N] [--rounds 3]
                                [--copilot-api DIR]
    python bench/copilot_api.py --against OTHER_TREE [--python OTHER_PYTHON]
                                [--stack default|pure-python] [--runs 4] [...]

``copilot-api`` sends to fixed ``https://`` hosts (``api.github.com``,
``api.githubcopilot.com``) with certificate checks on, so the comparison runs inside a
network and mount namespace of its own (``unshare --net --mount``: root, Linux), where

* only loopback exists, and ``/etc/hosts`` (bind-mounted over for the namespace alone)
  names ``github.com``, ``api.github.com`` and ``api.githubcopilot.com`` 127.0.0.1;
* a TLS terminator on 127.0.0.1:443 holds a certificate for those names, signed by a CA
  made for the run, and relays each connection's bytes to the emulator (which routes by
  the ``Host`` header, as the real hosts do);
* ``copilot-api`` trusts that CA through ``NODE_EXTRA_CA_CERTS``, and ``copilot-host
  serve`` (the real command, no test seam) and the baseline through ``SSL_CERT_FILE``.

So all three pay the same TLS to the same upstream. Measured, on each stack: the CPU time
(user + system, every thread) of each server process per non-streaming chat request, the
requests sent sequentially over one kept-alive connection, the three servers taken in
turn ``--rounds`` times (medians); printed as ratios to the baseline (a bare uvicorn app
that relays with one httpx2 request, on the same stack) measured in the same run.
``copilot-api`` counts each request's tokens (gpt-tokenizer) and logs a line per request:
that is its own work, left in.

``--workload`` picks the requests: ``chat`` (default, 1,500 of them) a small Chat
Completions request; ``claude`` a Claude Code turn on ``/v1/messages`` and ``codex`` a Codex
turn on ``/v1/responses`` as the agents send them (``bench/bodies.py``: 200 KB and 150 KB,
every change of the table with work to do; 300 requests). For those the emulator takes any
shape (``lenient``): the baseline and ``copilot-api`` send what they get unchanged or
translated, and only the gateway makes the shapes Copilot takes. ``copilot-api`` 0.7.0
serves no ``/v1/responses``, so ``codex`` compares the gateway with the baseline alone.

``--against OTHER_TREE`` (a release's checkout; ``--python``, its interpreter) measures
side by side instead: this tree's ``serve``, the other tree's ``serve`` (logged in by that
tree's own bench), the baseline and ``copilot-api``, all on one stack, all running at once,
one client sending the same request to each in turn (the turn reversed every round), fresh
processes every run and the two trees' start order alternating between runs, as
``bench/against.py`` does in plaintext. One after the other, separate processes of the same
program read up to 10% apart, and the machine's speed moves between them; side by side, a
swing falls on all four alike.

``--copilot-api DIR`` names a folder where
``npm install copilot-api@0.7.0`` was run; without it the bench installs it in a
temporary one (npm needs the network before the namespace is entered).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
import bodies
import gateway as bench

from tests._tls import ca_and_server

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("github.com", "api.github.com", "api.githubcopilot.com")
COPILOT = "https://api.githubcopilot.com"
VERSION = "0.7.0"
# workload: (path, body, extra headers, default requests)
WORKLOADS: dict[str, tuple[str, bytes, dict[str, str], int]] = {
    "chat": ("/chat/completions", json.dumps(bench.CHAT).encode(), {}, 1500),
    "claude": (
        "/messages",
        bodies.encoded(bodies.claude_turn(200_000)),
        {"anthropic-beta": bodies.BETAS, "anthropic-version": "2023-06-01"},
        300,
    ),
    "codex": ("/responses", bodies.encoded(bodies.codex_turn(150_000)), {}, 300),
}


# -- the children -------------------------------------------------------------------------


def role_emulator(workload: str) -> None:
    """An emulator whose sessions name api.githubcopilot.com (the host copilot-api sends
    to for an individual account); prints its port, then waits for stdin to close. For an
    agent's workload: the whole inventory (its models), and any shape taken."""
    from copilot_host.testing import GitHubEmulator, Scenario, Session, minimal_models
    from copilot_host.testing import Inventory as Models

    if workload == "chat":
        scenario = Scenario(
            session=Session(api_endpoint=COPILOT), inventory=Models(models=minimal_models())
        )
    else:
        scenario = Scenario(session=Session(api_endpoint=COPILOT), lenient=True)
    with GitHubEmulator(scenario) as emulator:
        print(emulator.port, flush=True)
        sys.stdin.read()


def role_terminator(target: int, cert: str, key: str) -> None:
    """TLS on 127.0.0.1:443, each connection's bytes relayed to 127.0.0.1:``target``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            sink.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 443, ssl=context)
        print("443", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def role_bare() -> None:
    """The baseline (bench/gateway.py's, over TLS to the real names): a bare uvicorn app
    relaying each body with one httpx2 request, on the stack serve would use, the headers
    route.auth sets fixed once. Prints its port."""
    from copilot_host.gateway import upstream_transport
    from copilot_host.gateway._app import UPSTREAM_LIMITS

    bench.serve_bare_relay(
        None,
        lambda: httpx2.AsyncClient(transport=upstream_transport(), limits=UPSTREAM_LIMITS),
    )


# -- the namespace --------------------------------------------------------------------------


def _enter_namespace(folder: Path) -> None:
    """In the namespace (this process is its first): loopback up, and the names above
    pointing at it in this namespace's /etc/hosts."""
    subprocess.run([_tool("ip"), "link", "set", "lo", "up"], check=True)
    hosts = folder / "hosts"
    hosts.write_text("127.0.0.1 localhost " + " ".join(NAMES) + "\n::1 localhost\n")
    subprocess.run([_tool("mount"), "--bind", str(hosts), "/etc/hosts"], check=True)


def _github_token(emulator_port: int) -> str:
    """A GitHub token from the emulator's device flow, as copilot-api's ``auth`` would
    have stored one (the emulator authorizes at once)."""
    from copilot_host.testing import loopback_transport

    with httpx2.Client(transport=loopback_transport(emulator_port)) as client:
        code = client.post(
            "https://github.com/login/device/code",
            data={"client_id": "Iv1.b507a08c87ecfe98", "scope": "read:user"},
            headers={"Accept": "application/json"},
        ).json()
        for _ in range(10):
            answer = client.post(
                "https://github.com/login/oauth/access_token",
                data={
                    "client_id": "Iv1.b507a08c87ecfe98",
                    "device_code": code["device_code"],
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                },
                headers={"Accept": "application/json"},
            ).json()
            if "access_token" in answer:
                return str(answer["access_token"])
            time.sleep(0.1)
    raise RuntimeError(f"the emulator gave no token: {answer}")


def _wait_for_port(port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listened on {port} within {seconds:.0f} s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed")
    return found


def _me(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


@contextmanager
def _server(
    argv: list[str], env: dict[str, str], *, port_line: bool
) -> Iterator[tuple[bench.Child, str]]:
    child = bench.Child(argv, env)
    try:
        yield child, child.line() if port_line else ""
    finally:
        child.stop()


def _cpu_per_request(
    child: bench.Child, root: str, headers: dict[str, str], count: int, workload: str
) -> float:
    """The CPU (us) ``child`` spends per request of ``workload`` sent to ``root`` (a
    ``.../v1`` URL)."""
    path, body, extra, _count = WORKLOADS[workload]
    with httpx2.Client(
        headers={"Content-Type": "application/json", **extra, **headers}, timeout=60
    ) as client:
        for _ in range(20):  # warm: the connection, the registration, the JIT
            client.post(root + path, content=body).raise_for_status()
        before = child.cpu_seconds()
        for _ in range(count):
            client.post(root + path, content=body).raise_for_status()
        return (child.cpu_seconds() - before) / count * 1e6


@contextmanager
def _upstream(workload: str) -> Iterator[tuple[Path, dict[str, str], int]]:
    """In a namespace of this process's own: the emulator behind the TLS terminator on the
    real names; yields a scratch folder, the servers' environment and the emulator's port."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _enter_namespace(folder)
        ca, cert, key = ca_and_server(folder, NAMES)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SSL_CERT_FILE": str(ca),
            "NODE_EXTRA_CA_CERTS": str(ca),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
            "HOME": str(folder / "home"),
        }
        (folder / "home").mkdir()
        with (
            _server(_me("--role", "emulator", workload), env, port_line=True) as (
                _emu,
                emulator_port,
            ),
            _server(
                _me("--role", "terminator", emulator_port, str(cert), str(key)), env, port_line=True
            ),
        ):
            yield folder, env, int(emulator_port)


@contextmanager
def _copilot_api(
    copilot_api: Path, token: str, env: dict[str, str]
) -> Iterator[tuple[bench.Child, int]]:
    """``copilot-api start`` on a free port, once it listens."""
    node_port = _free_port()
    child = bench.Child(
        [
            _tool("node"),
            str(copilot_api / "node_modules" / "copilot-api" / "dist" / "main.js"),
            "start",
            "--github-token",
            token,
            "--port",
            str(node_port),
        ],
        env,
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(node_port)
        yield child, node_port
    finally:
        child.stop()


def inside(copilot_api: Path, requests: int, rounds: int, workload: str) -> None:
    with _upstream(workload) as (folder, env, emulator_port):
        home = folder / "copilot-host"
        bench.login(home, emulator_port)
        token = _github_token(emulator_port)
        ours = {**env, "COPILOT_HOST_HOME": str(home)}
        cli = [sys.executable, "-c", "from copilot_host_cli import main; main()"]
        with _copilot_api(copilot_api, token, env) as (copilot_api_child, node_port):
            results: dict[str, list[float]] = {}
            for _ in range(rounds):
                for stack in bench.STACKS:
                    # The pure stack is the base install's (bench/gateway.py's).
                    stack_env = bench._stack_env(stack) | {
                        k: v for k, v in ours.items() if k != "COPILOT_HOST_PURE_PYTHON"
                    }
                    with _server(
                        [*cli, "serve", "--port", "0", "--json"], stack_env, port_line=True
                    ) as (gw, line):
                        listening = json.loads(line)
                        found = _cpu_per_request(
                            gw,
                            listening["base_url"],
                            {"Authorization": f"Bearer {listening['api_key']}"},
                            requests,
                            workload,
                        )
                    results.setdefault(f"gateway {stack}", []).append(found)
                    with _server(_me("--role", "bare"), stack_env, port_line=True) as (
                        bare,
                        port,
                    ):
                        found = _cpu_per_request(
                            bare, f"http://127.0.0.1:{port}/v1", {}, requests, workload
                        )
                    results.setdefault(f"baseline {stack}", []).append(found)
                if workload == "codex":
                    continue  # copilot-api 0.7.0 serves no /v1/responses
                node_root = f"http://127.0.0.1:{node_port}/v1"
                found = _cpu_per_request(copilot_api_child, node_root, {}, requests, workload)
                results.setdefault("copilot-api", []).append(found)
    median = {name: statistics.median(values) for name, values in results.items()}
    node = median.get("copilot-api", float("nan"))
    what = {
        "chat": "non-streaming chat request",
        "claude": "Claude Code turn (200 KB on /v1/messages)",
        "codex": "Codex turn (150 KB on /v1/responses; copilot-api serves none)",
    }[workload]
    print(
        f"CPU per {what} over TLS, medians of {rounds} rounds of {requests}, as ratios to "
        "the baseline on each stack (a bare uvicorn app relaying with one httpx2 request):"
    )
    print(f"  {'stack':12} {'copilot-host serve':>19} {f'copilot-api {VERSION}':>19}")
    for stack in bench.STACKS:
        base = median[f"baseline {stack}"]
        ratio = median[f"gateway {stack}"] / base
        theirs = "not served" if math.isnan(node) else f"{node / base:.2f}x"
        print(f"  {stack:12} {ratio:18.2f}x {theirs:>19}")
    print(
        "  (CPU per request of each run, us: "
        + "; ".join(
            f"{name} {' '.join(f'{value:.0f}' for value in values)}"
            for name, values in results.items()
        )
        + ")"
    )
    fast = median[f"gateway {bench.STACKS[0]}"]
    if math.isnan(node):
        return
    print(
        f"  copilot-host serve ({bench.STACKS[0]}) uses {fast / node:.2f}x the CPU of "
        f"copilot-api (Node {_node_version()})"
    )


# -- side by side with another tree (``--against``) -----------------------------------------------

_LOGIN_OTHER = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1] + "/bench", sys.argv[1]]
import gateway
gateway.login(Path(sys.argv[2]), int(sys.argv[3]))
"""


# ``python -c`` puts the working directory (this tree) first on sys.path, where it would
# shadow the other tree's package: each tree's serve imports from its PYTHONPATH alone.
_SERVE_FROM_PYTHONPATH = "import sys; del sys.path[0]; from copilot_host_cli import main; main()"


def _side_by_side(
    targets: list[tuple[str, bench.Child, str, dict[str, str]]],
    requests: int,
    rounds: int,
    workload: str,
) -> dict[str, float]:
    """Medians over ``rounds`` of each target's CPU (us) per request, one client sending
    the same request to each target in turn (``(name, child, root, headers)``), the turn
    reversed every other round."""
    path, body, extra, _count = WORKLOADS[workload]
    clients = [
        (
            name,
            child,
            root + path,
            httpx2.Client(
                headers={"Content-Type": "application/json", **extra, **headers}, timeout=60
            ),
        )
        for name, child, root, headers in targets
    ]
    try:
        for _ in range(20):  # warm: connections, registrations, the JIT
            for _name, _child, url, client in clients:
                client.post(url, content=body).raise_for_status()
        taken: dict[str, list[float]] = {name: [] for name, *_ in clients}
        for round_ in range(rounds):
            turn = clients if round_ % 2 == 0 else clients[::-1]
            before = {name: child.cpu_seconds() for name, child, _u, _c in turn}
            for _ in range(requests):
                for _name, _child, url, client in turn:
                    client.post(url, content=body).raise_for_status()
            for name, child, _u, _c in turn:
                taken[name].append((child.cpu_seconds() - before[name]) / requests * 1e6)
        return {name: statistics.median(values) for name, values in taken.items()}
    finally:
        for *_rest, client in clients:
            client.close()


def inside_against(
    copilot_api: Path,
    other: Path,
    other_python: str,
    *,
    stack: str,
    requests: int,
    rounds: int,
    runs: int,
    workload: str,
) -> None:
    with _upstream(workload) as (folder, env, emulator_port):
        trees = {"this": (ROOT, sys.executable), "other": (other, other_python)}
        homes = {name: folder / f"{name}-home" for name in trees}
        bench.login(homes["this"], emulator_port)
        subprocess.run(
            [other_python, "-c", _LOGIN_OTHER, str(other), str(homes["other"]), str(emulator_port)],
            env={**env, "PYTHONPATH": str(other)},
            check=True,
        )
        token = _github_token(emulator_port)
        # The pure stack is the base install's (bench/gateway.py's).
        stack_env = bench._stack_env(stack) | {
            k: v for k, v in env.items() if k != "COPILOT_HOST_PURE_PYTHON"
        }
        found: dict[str, list[float]] = {}
        with _copilot_api(copilot_api, token, env) as (node, node_port):
            for run in range(runs):
                order = ["this", "other"] if run % 2 == 0 else ["other", "this"]
                with contextlib.ExitStack() as started:
                    targets: list[tuple[str, bench.Child, str, dict[str, str]]] = []
                    for name in order:
                        tree, python = trees[name]
                        child, line = started.enter_context(
                            _server(
                                [
                                    python,
                                    "-c",
                                    _SERVE_FROM_PYTHONPATH,
                                    "serve",
                                    "--port",
                                    "0",
                                    "--json",
                                ],
                                stack_env
                                | {"PYTHONPATH": str(tree), "COPILOT_HOST_HOME": str(homes[name])},
                                port_line=True,
                            )
                        )
                        listening = json.loads(line)
                        auth = {"Authorization": f"Bearer {listening['api_key']}"}
                        targets.append((f"{name} serve", child, listening["base_url"], auth))
                    bare, port = started.enter_context(
                        _server(
                            _me("--role", "bare"),
                            stack_env | {"COPILOT_HOST_HOME": str(homes["this"])},
                            port_line=True,
                        )
                    )
                    targets.append(("baseline", bare, f"http://127.0.0.1:{port}/v1", {}))
                    if workload != "codex":  # copilot-api 0.7.0 serves no /v1/responses
                        targets.append(
                            ("copilot-api", node, f"http://127.0.0.1:{node_port}/v1", {})
                        )
                    cpu = _side_by_side(targets, requests, rounds, workload)
                figures = {
                    "this / baseline": cpu["this serve"] / cpu["baseline"],
                    "other / baseline": cpu["other serve"] / cpu["baseline"],
                    "this / other": cpu["this serve"] / cpu["other serve"],
                }
                if "copilot-api" in cpu:
                    figures["this / copilot-api"] = cpu["this serve"] / cpu["copilot-api"]
                    figures["other / copilot-api"] = cpu["other serve"] / cpu["copilot-api"]
                for name, value in figures.items():
                    found.setdefault(name, []).append(value)
                shown = "  ".join(f"{name} {value:.3f}" for name, value in figures.items())
                print(f"   run {run + 1} ({order[0]} first): {shown}", flush=True)
    print(
        f"this tree against {other}, {stack} stack, {workload} over TLS, {runs} runs of "
        f"{rounds} rounds of {requests}; means: "
        + "  ".join(f"{name} {statistics.fmean(values):.3f}" for name, values in found.items())
    )


def _node_version() -> str:
    return subprocess.run(
        [_tool("node"), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="chat")
    parser.add_argument("--requests", type=int, help="default: 1500 chat, 300 agent turns")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copilot-api", type=Path)
    parser.add_argument("--against", type=Path, help="another tree, measured side by side")
    parser.add_argument("--python", default=sys.executable, help="the other tree's Python")
    parser.add_argument("--stack", default="default", choices=bench.STACKS, help="with --against")
    parser.add_argument("--runs", type=int, default=4, help="with --against: fresh processes each")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("role_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "emulator":
        return role_emulator(args.role_args[0])
    if args.role == "terminator":
        return role_terminator(int(args.role_args[0]), args.role_args[1], args.role_args[2])
    if args.role == "bare":
        return role_bare()
    requests = args.requests or WORKLOADS[args.workload][3]
    if args.inside and args.against is not None:
        return inside_against(
            args.copilot_api,
            args.against,
            args.python,
            stack=args.stack,
            requests=requests,
            rounds=args.rounds,
            runs=args.runs,
            workload=args.workload,
        )
    if args.inside:
        return inside(args.copilot_api, requests, args.rounds, args.workload)
    missing = [tool for tool in ("unshare", "mount", "ip", "node", "npm") if not shutil.which(tool)]
    if missing or os.geteuid() != 0:
        sys.exit(f"needs root and {', '.join(missing) or 'Linux namespaces'}: skipped")
    with tempfile.TemporaryDirectory() as installed:
        where = args.copilot_api
        if where is None:
            where = Path(installed)
            subprocess.run(
                [
                    _tool("npm"),
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--silent",
                    "--prefix",
                    str(where),
                    f"copilot-api@{VERSION}",
                ],
                check=True,
            )
        argv = _me(
            "--inside",
            "--copilot-api",
            str(where.resolve()),
            "--workload",
            args.workload,
            "--requests",
            str(requests),
            "--rounds",
            str(args.rounds),
        )
        if args.against is not None:
            argv += [
                "--against",
                str(args.against.resolve()),
                "--python",
                args.python,
                "--stack",
                args.stack,
                "--runs",
                str(args.runs),
            ]
        subprocess.run([_tool("unshare"), "--net", "--mount", *argv], check=True)
    return None


if __name__ == "__main__":
    main()
