"""The fault suite: what breaks at each step leaves the store and the catalog unchanged or
fully updated (never torn) and surfaces as one clear, typed error.

* every network step (device code, poll, the login's entitlement exchange, user, session
  exchange, discovery, inference) x {connection refused, timeout, body cut mid-way, 5xx,
  slow answer bounded by a short client timeout}, sync and async;
* disk full (ENOSPC injected into the store's writes) during a login and a re-login;
* concurrent full logins from separate processes against one emulator;
* cancellation at every await point of the async flows (a sweep: cancel at point 0, 1,
  2, ... until the flow completes untouched).

Already proven elsewhere and not repeated here: SIGKILL during store writes and 16
concurrent store processes (tests/store/test_processes.py), slow login answers and
slow/oversized/malformed discovery (tests/github/test_github_hostile.py), one retry after a
429/5xx (tests/github/test_github_exchange.py), SIGINT/SIGTERM during the CLI's login wait
(tests/cli/test_processes.py).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
import threading
import types
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import keyring
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore, Deleted
from copilot_host.testing import DeviceFlow, Faults, GitHubEmulator, RawAnswer, Scenario
from tests._clock import FakeClock
from tests.conftest import MemoryKeyring
from tests.github._support import REALISTIC_ROUTES
from tests.security._support import AsyncFailingTransport, CliRun, FailingTransport
from tests.store._file_keyring import FileKeyring

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
SHORT = httpx2.Timeout(0.25)

# step -> (emulator endpoint name, does the fault happen during login?)
STEPS = {
    "device_code": ("device_code", True),
    "poll": ("access_token", True),
    "login_exchange": ("copilot_token", True),
    "user": ("user", True),
    "exchange": ("copilot_token", False),
    "models": ("models", False),
}
PATHS = {
    "device_code": "/login/device/code",
    "access_token": "/login/oauth/access_token",
    "copilot_token": "/copilot_internal/v2/token",
    "user": "/user",
    "models": "/models",
    "chat": "/chat/completions",
}
FAULTS = ("refused", "timeout", "cut_body", "5xx", "slow")
# What each fault must become (the code of the typed error).
EXPECTED = {
    "refused": {"network_error"},
    "timeout": {"timeout"},
    "cut_body": {"network_error"},
    "5xx": {"server_error"},
    "slow": {"timeout"},
}


def _no_sleep(_seconds: float) -> None:
    return None


async def _no_asleep(_seconds: float) -> None:
    return None


def _scenario(endpoint: str, fault: str) -> Scenario:
    if fault == "5xx":
        body = b"<html>502 Bad Gateway</html>"
        answer = RawAnswer(502, body, (("Content-Type", "text/html"),))
        return Scenario(login=DeviceFlow(interval=1), faults=Faults(answers={endpoint: answer}))
    if fault == "slow":
        return Scenario(login=DeviceFlow(interval=1), faults=Faults(slow={endpoint: 1.5}))
    return Scenario(login=DeviceFlow(interval=1))


def _matches(endpoint: str) -> Callable[[httpx2.Request], bool]:
    path = PATHS[endpoint]
    return lambda request: request.url.path == path


def _error_for(fault: str) -> Exception | None:
    if fault == "refused":
        return httpx2.ConnectError("[Errno 111] Connection refused")
    if fault == "timeout":
        return httpx2.ReadTimeout("timed out")
    return None


def _wrap(emu: GitHubEmulator, endpoint: str, fault: str) -> httpx2.BaseTransport:
    if fault in ("refused", "timeout", "cut_body"):
        return FailingTransport(
            emu.transport(), _matches(endpoint), _error_for(fault), truncate=fault == "cut_body"
        )
    return emu.transport()


def _awrap(emu: GitHubEmulator, endpoint: str, fault: str) -> httpx2.AsyncBaseTransport:
    if fault in ("refused", "timeout", "cut_body"):
        return AsyncFailingTransport(
            emu.async_transport(),
            _matches(endpoint),
            _error_for(fault),
            truncate=fault == "cut_body",
        )
    return emu.async_transport()


class _State:
    """What must not change: the store's files and keyring entries, and the catalog."""

    def __init__(self, store: CredentialStore, memory: MemoryKeyring, catalog: ch.Catalog) -> None:
        self.files = _files(store.home)
        self.keys = dict(memory.items)
        self.routes = dict(catalog.routes())
        self._store, self._memory, self._catalog = store, memory, catalog

    def unchanged(self) -> None:
        assert _files(self._store.home) == self.files
        assert self._memory.items == self.keys
        assert dict(self._catalog.routes()) == self.routes


def _files(home: Path) -> dict[str, bytes]:
    return {
        name: (home / name).read_bytes()
        for name in sorted(os.listdir(home))
        if name != "credential.lock"  # the lock file exists once anyone locked: not state
    }


def _check(error: BaseException, fault: str) -> None:
    assert isinstance(error, ch.CopilotHostError), repr(error)
    assert error.code in EXPECTED[fault], (fault, error)
    assert error.retryable
    assert error.message and "\n" not in error.message
    # A clear error: the raw httpx2 exception is not chained into what people see.
    assert not isinstance(error.__cause__, httpx2.HTTPError)


@pytest.fixture(scope="module")
def healthy_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubCopilotHost]:
    """A healthy emulator, store and host, shared by the module's fault tests: each test's
    earlier registration is made through it, so the faulted endpoint is never touched.
    (Its key is in a key file: the keyring is each test's own.)"""
    folder = tmp_path_factory.mktemp("elsewhere")
    folder.chmod(0o700)
    with GitHubEmulator() as healthy:
        store = CredentialStore(folder, key_file=True)
        store.save("octocat", ch.Secret(healthy.github_token))
        with GitHubCopilotHost(store=store, transport=healthy.transport()) as host:
            yield host


def _prepare(
    store: CredentialStore, emu: GitHubEmulator, login: bool, healthy: GitHubCopilotHost
) -> ch.Catalog:
    """A catalog holding an earlier registration of this provider (made through another,
    healthy emulator and store) and, for steps after the login, a stored login;
    "unchanged" is then a real claim."""
    catalog = ch.Catalog()
    ch.register_models(catalog, healthy)
    assert len(catalog) == REALISTIC_ROUTES
    if not login:
        store.save("octocat", ch.Secret(emu.github_token))
    return catalog


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("step", list(STEPS))
def test_sync_fault_at_each_step(
    step: str,
    fault: str,
    copilot_home: Path,
    healthy_host: GitHubCopilotHost,
    memory_keyring: MemoryKeyring,
) -> None:
    endpoint, during_login = STEPS[step]
    store = CredentialStore(copilot_home)
    with GitHubEmulator(_scenario(endpoint, fault)) as emu:
        catalog = _prepare(store, emu, during_login, healthy_host)
        before = _State(store, memory_keyring, catalog)
        timeout = SHORT if fault == "slow" else None
        with (
            GitHubCopilotHost(
                store=store, transport=_wrap(emu, endpoint, fault), timeout=timeout, sleep=_no_sleep
            ) as host,
            pytest.raises(ch.CopilotHostError) as caught,
        ):
            if during_login:
                host.login(sleep=_no_sleep)
            else:
                ch.register_models(catalog, host)
        _check(caught.value, fault)
        before.unchanged()
        if during_login:
            assert store.availability() is None


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("step", list(STEPS))
def test_async_fault_at_each_step(
    step: str,
    fault: str,
    copilot_home: Path,
    healthy_host: GitHubCopilotHost,
    memory_keyring: MemoryKeyring,
) -> None:
    endpoint, during_login = STEPS[step]
    store = CredentialStore(copilot_home)

    async def main(emu: GitHubEmulator, catalog: ch.Catalog) -> None:
        timeout = SHORT if fault == "slow" else None
        async with AsyncGitHubCopilotHost(
            store=store, transport=_awrap(emu, endpoint, fault), timeout=timeout, sleep=_no_asleep
        ) as host:
            if during_login:
                await host.login(sleep=_no_asleep)
            else:
                await ch.aregister_models(catalog, host)

    with GitHubEmulator(_scenario(endpoint, fault)) as emu:
        catalog = _prepare(store, emu, during_login, healthy_host)
        before = _State(store, memory_keyring, catalog)
        with pytest.raises(ch.CopilotHostError) as caught:
            asyncio.run(main(emu, catalog))
        _check(caught.value, fault)
        before.unchanged()


@pytest.mark.parametrize("fault", ["refused", "timeout", "cut_body", "5xx"])
def test_inference_faults_leave_the_session_and_catalog_usable(
    fault: str, copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    """The inference request is the application's own: its transport failure reaches the
    application as httpx2's error (or the 5xx as a response), and the next request works
    on the same session, with no new exchange."""
    store = CredentialStore(copilot_home)
    with (
        GitHubEmulator() as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        store.save("octocat", ch.Secret(emu.github_token))
        catalog = ch.Catalog()
        ch.register_models(catalog, host)
        before = _State(store, memory_keyring, catalog)
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        exchanges = len(emu.requests_to("copilot_token"))
        failing = (
            FailingTransport(emu.transport(), _matches("chat"), status=502)
            if fault == "5xx"
            else _wrap(emu, "chat", fault)
        )
        with httpx2.Client(transport=failing, auth=route.auth) as client:
            if fault == "5xx":
                assert client.post(route.url, json=CHAT).status_code == 502
            else:
                with pytest.raises(httpx2.TransportError):
                    client.post(route.url, json=CHAT).read()
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            assert client.post(route.url, json=CHAT).status_code == 200
        assert len(emu.requests_to("copilot_token")) == exchanges
        before.unchanged()


@pytest.mark.parametrize("fault", ["refused", "timeout", "cut_body", "5xx"])
def test_a_failed_exchange_inside_route_auth_is_typed_and_the_next_request_recovers(
    fault: str, copilot_home: Path
) -> None:
    store = CredentialStore(copilot_home)
    with GitHubEmulator() as emu:
        store.save("octocat", ch.Secret(emu.github_token))
        transport = _wrap(emu, "copilot_token", fault if fault != "5xx" else "refused")
        with GitHubCopilotHost(store=store, transport=emu.transport(), sleep=_no_sleep) as good:
            session = good.exchange(store.load()[0])
        with GitHubCopilotHost(store=store, transport=transport, sleep=_no_sleep) as host:
            auth = ch.CopilotAuth(
                ch.SessionResolver(host), session.endpoint, host.request_headers()
            )
            with (
                httpx2.Client(transport=emu.transport(), auth=auth) as client,
                pytest.raises(ch.CopilotHostError) as caught,
            ):
                client.post(session.endpoint.url("/chat/completions"), json=CHAT)
            assert caught.value.code in {"network_error", "timeout"}
        assert emu.requests_to("chat") == ()  # nothing went out without a bearer
        with GitHubCopilotHost(store=store, transport=emu.transport(), sleep=_no_sleep) as host:
            auth = ch.CopilotAuth(
                ch.SessionResolver(host), session.endpoint, host.request_headers()
            )
            with httpx2.Client(transport=emu.transport(), auth=auth) as client:
                answer = client.post(session.endpoint.url("/chat/completions"), json=CHAT)
                assert answer.status_code == 200


# -- disk full ------------------------------------------------------------------------------


class _DiskFull:
    """The store's file writes, with ``os.write`` failing with ENOSPC after ``budget`` bytes
    (a deterministic full disk: the real write path, its cleanup included, runs)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.hits = 0

    def write(self, fd: int, data: Any) -> int:
        if len(data) > self.budget:
            self.hits += 1
            if self.budget > 0:
                written = os.write(fd, bytes(data[: self.budget]))
                self.budget -= written
                return written
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.budget -= len(data)
        return os.write(fd, data)


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], _DiskFull]:
    from copilot_host.store import _atomic

    def install(budget: int) -> _DiskFull:
        full = _DiskFull(budget)
        proxy = types.SimpleNamespace(
            **{k: getattr(os, k) for k in dir(os) if not k.startswith("__")}
        )
        proxy.write = full.write
        monkeypatch.setattr(_atomic, "os", proxy)
        return full

    return install


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
@pytest.mark.parametrize("budget", [0, 20, 100])
@pytest.mark.parametrize("relogin", [False, True], ids=["first", "relogin"])
def test_disk_full_during_login_stores_nothing_and_says_so(
    budget: int,
    key_file: bool,
    relogin: bool,
    copilot_home: Path,
    memory_keyring: MemoryKeyring,
    disk_full: Callable[[int], _DiskFull],
) -> None:
    store = CredentialStore(copilot_home, key_file=key_file)
    with GitHubEmulator(Scenario(login=DeviceFlow(interval=1))) as emu:
        old = store.save("previous", ch.Secret("gho_" + "0" * 36)).identity if relogin else None
        before = _State(store, memory_keyring, ch.Catalog())
        full = disk_full(budget)
        with (
            GitHubCopilotHost(store=store, transport=emu.transport()) as host,
            pytest.raises(ch.StoreError) as caught,
        ):
            host.login(sleep=_no_sleep)
        assert full.hits >= 1
    assert caught.value.code == "store_io"
    assert "No space left on device" in caught.value.message
    assert str(copilot_home) in caught.value.message
    # Nothing half-written: no temp file, no new key file or keyring entry; the previous
    # login (if any) is still there, intact.
    before.unchanged()
    assert store.availability() == old
    if old is not None:
        assert store.load()[0] == old


def test_disk_full_during_cli_login_is_one_json_error_event(
    copilot_home: Path, disk_full: Callable[[int], _DiskFull]
) -> None:
    run = CliRun()
    with GitHubEmulator() as emu:
        disk_full(0)
        result = run(emu, copilot_home, "login", "--json")
    assert result.exit_code == 1
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["device_code", "error"]
    assert events[-1]["code"] == "store_io"
    assert "No space left on device" in result.stderr
    assert CredentialStore(copilot_home).availability() is None


# -- concurrent logins from separate processes ----------------------------------------------

CHILD = Path(__file__).with_name("_login_child.py")


@pytest.mark.slow
def test_concurrent_full_logins_from_separate_processes(copilot_home: Path, tmp_path: Path) -> None:
    """Eight processes log in at once (half keyring, half key file) through the host
    against one emulator: one login wins whole, every loser's key is cleaned up."""
    folder = tmp_path / "keyring"
    folder.mkdir()
    with GitHubEmulator(Scenario(login=DeviceFlow(interval=1))) as emu:
        modes = ["keyring", "key-file"] * 4
        children = [
            subprocess.Popen(
                [sys.executable, str(CHILD), str(emu.port), str(copilot_home), str(folder), mode],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for mode in modes
        ]
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outputs = [child.communicate(timeout=60) for child in children]
        token = emu.github_token
        assert len(emu.requests_to("user")) == len(children)
    failures = [
        err[-1500:]
        for child, (_out, err) in zip(children, outputs, strict=True)
        if child.returncode
    ]
    assert failures == []
    ids = {out.split()[1]: mode for (out, _err), mode in zip(outputs, modes, strict=True)}
    assert len(ids) == len(children)  # a fresh login id for each login

    keyring.set_keyring(FileKeyring(folder))
    store = CredentialStore(copilot_home)
    who, loaded = store.load()
    assert loaded.reveal() == token
    assert who.login_id in ids
    assert store.set_aside() == ()
    names = sorted(os.listdir(copilot_home))
    key_files = [n for n in names if n.endswith(".key")]
    entries = [p for p in folder.iterdir() if not p.name.startswith(".tmp-")]
    if ids[who.login_id] == "key-file":
        assert key_files == [f"credential-{who.login_id}.key"]
        assert entries == []
    else:
        assert key_files == []
        assert len(entries) == 1
    assert set(names) - set(key_files) == {"credential", "credential.lock"}


# -- cancellation at every await point ------------------------------------------------------


class _Points:
    """Numbered await points; the one numbered ``target`` cancels the running task there.

    Points: before each request and after each answer's headers (in the transport), each
    pause of the login wait, and each store call run in a worker thread."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.seen = 0
        self.cancelled = False
        self.task: asyncio.Task[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self.task = asyncio.current_task()
        self.loop = asyncio.get_running_loop()

    def _hit(self) -> bool:
        hit = self.seen == self.target
        self.seen += 1
        if hit:
            self.cancelled = True
        return hit

    async def point(self) -> None:
        if self._hit():
            assert self.task is not None
            self.task.cancel()
        await asyncio.sleep(0)

    def thread_point(self) -> None:
        """From a worker thread: the task is cancelled while it awaits this thread."""
        if self._hit():
            assert self.loop is not None and self.task is not None
            self.loop.call_soon_threadsafe(self.task.cancel)


class _CancelTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, points: _Points) -> None:
        self._inner = inner
        self._points = points

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await self._points.point()
        response = await self._inner.handle_async_request(request)
        try:
            await self._points.point()
        except asyncio.CancelledError:
            await response.aclose()
            raise
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CancelStore(CredentialStore):
    """The store, with a numbered point at the start of each call the async host runs in a
    worker thread; ``idle`` tells when such a call (which outlives a cancelled await) ended."""

    def __init__(self, home: Path, points: _Points) -> None:
        super().__init__(home)
        self._points = points
        self.idle = threading.Event()
        self.idle.set()

    def load(self) -> tuple[ch.LoginIdentity, ch.Secret]:
        self.idle.clear()
        try:
            self._points.thread_point()
            return super().load()
        finally:
            self.idle.set()

    def delete(self) -> Deleted:
        self.idle.clear()
        try:
            self._points.thread_point()
            return super().delete()
        finally:
            self.idle.set()


@dataclass
class _Ctx:
    host: AsyncGitHubCopilotHost
    emu: GitHubEmulator
    points: _Points
    catalog: ch.Catalog
    clock: FakeClock = field(default_factory=FakeClock)
    resolver: ch.AsyncSessionResolver | None = None
    old: ch.CopilotSession | None = None


async def _login_flow(ctx: _Ctx) -> None:
    async def sleep(_seconds: float) -> None:
        await ctx.points.point()

    await ctx.host.login(sleep=sleep)


async def _register_flow(ctx: _Ctx) -> None:
    await ch.aregister_models(ctx.catalog, ctx.host)


async def _request_flow(ctx: _Ctx) -> None:
    # The registered session was revoked: the request meets a 401, the auth re-exchanges
    # (a store load, an exchange) and retries once.
    route = ctx.catalog.get("github-copilot/gpt-4.1")
    assert route is not None
    transport = _CancelTransport(ctx.emu.async_transport(), ctx.points)
    async with httpx2.AsyncClient(transport=transport) as client:
        answer = await client.post(route.url, json=CHAT, auth=route.auth)
        assert answer.status_code == 200


async def _refresh_flow(ctx: _Ctx) -> None:
    assert ctx.resolver is not None
    await ctx.resolver.refresh()


async def _logout_flow(ctx: _Ctx) -> None:
    assert (await ctx.host.logout()).removed is True


SWEEPS: dict[str, tuple[Callable[[_Ctx], Awaitable[None]], bool]] = {
    # name -> (the flow, does it start logged in and registered?)
    "login": (_login_flow, False),
    "aregister_models": (_register_flow, True),
    "request_through_route_auth": (_request_flow, True),
    "resolver_refresh": (_refresh_flow, True),
    "logout": (_logout_flow, True),
}
# Fewer points than these means the sweep is not reaching the awaits it claims to.
MIN_POINTS = {
    "login": 10,
    "aregister_models": 5,
    "request_through_route_auth": 7,
    "resolver_refresh": 3,
    "logout": 1,
}


async def _setup(ctx: _Ctx, store: CredentialStore, name: str) -> None:
    store.save("octocat", ch.Secret(ctx.emu.github_token))
    await ch.aregister_models(ctx.catalog, ctx.host, clock=ctx.clock)
    route = ctx.catalog.get("github-copilot/gpt-4.1")
    assert route is not None
    if name == "resolver_refresh":
        ctx.resolver = ch.AsyncSessionResolver(ctx.host)
        ctx.old = await ctx.resolver.get()
    if name == "request_through_route_auth":
        # The session is from the cache now, so a 401 is worth one new exchange.
        ctx.clock.advance(2.0)
        ctx.emu.revoke_sessions()


async def _works_again(ctx: _Ctx, name: str) -> None:
    """Nothing is stuck after a cancellation: the same objects serve the next call."""
    if name == "login":
        await ctx.host.login(sleep=_no_asleep)
        assert ctx.host.availability() is not None
        return
    if name == "resolver_refresh":
        # The refresh discarded the old session at once: it is never served again. (The
        # exchange itself is the resolver's shared flight, which a cancelled caller does not
        # cancel: it may have installed its new session, else the next use exchanges.)
        assert ctx.resolver is not None and ctx.old is not None
        exchanges = len(ctx.emu.requests_to("copilot_token"))
        session = await ctx.resolver.get()
        assert session.token != ctx.old.token
        assert len(ctx.emu.requests_to("copilot_token")) <= exchanges + 1
        return
    if name in ("aregister_models", "request_through_route_auth"):
        route = ctx.catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        async with httpx2.AsyncClient(transport=ctx.emu.async_transport()) as client:
            answer = await client.post(route.url, json=CHAT, auth=route.auth)
            assert answer.status_code == 200


def _sweep_once(name: str, target: int, home: Path, memory: MemoryKeyring) -> bool:
    """Run ``name`` cancelling at point ``target`` and check the invariants; True when the
    flow ran to its end without meeting ``target`` (the sweep is complete)."""
    flow, logged_in = SWEEPS[name]
    points = _Points(target)
    store = _CancelStore(home, points)
    completed: list[bool] = []

    async def main() -> None:
        with GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1, interval=1))) as emu:
            transport = _CancelTransport(emu.async_transport(), points)
            async with AsyncGitHubCopilotHost(store=store, transport=transport) as host:
                ctx = _Ctx(host, emu, points, ch.Catalog())
                if logged_in:
                    points.target = -1  # the set-up is not swept
                    await _setup(ctx, store, name)
                    points.target, points.seen = target, 0
                state = _State(store, memory, ctx.catalog)
                points.start()
                try:
                    await flow(ctx)
                except asyncio.CancelledError:
                    # Neither swallowed nor converted: only our own cancel ends a flow.
                    assert points.cancelled
                    task = asyncio.current_task()
                    assert task is not None and task.uncancel() == 0
                else:
                    assert not points.cancelled, f"{name}: a cancellation was swallowed"
                    completed.append(True)
                    return
                points.target = -1
                await asyncio.to_thread(store.idle.wait, 10)
                if name == "logout" and store.availability() is None:
                    # The delete ran on in its thread: logged out whole, key included.
                    assert not [n for n in os.listdir(home) if n.startswith("credential-")]
                    assert memory.items == {}
                else:
                    state.unchanged()
                await _works_again(ctx, name)

    asyncio.run(main())
    return completed == [True]


@pytest.mark.parametrize("name", list(SWEEPS))
def test_cancellation_at_every_await_point(
    name: str, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    survived = 0
    for target in range(100):
        home = tmp_path / f"home-{target}"
        home.mkdir(mode=0o700)
        memory_keyring.items.clear()
        if _sweep_once(name, target, home, memory_keyring):
            break
        survived += 1
    else:
        raise AssertionError(f"{name}: the flow never completed")
    assert survived >= MIN_POINTS[name], survived
    print(f"\n{name}: {survived} cancel points survived")
