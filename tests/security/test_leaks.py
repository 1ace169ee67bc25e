"""The leak suite: ONE orchestrated run of every public flow, with the emulator's run-time
canary tokens, and zero occurrences of any of them (or a 16-character piece of one)
anywhere a person, a log or a disk could see them.

Captured: stdout and stderr of every CLI run (plain, --json and --debug), every log record
at DEBUG on the root logger through a handler that refuses the CLI's redaction filter (the
library must not log secrets in the first place), exception texts with their
``__cause__``/``__context__`` chains and tracebacks, ``repr``/``str`` of every public object
reached, and every file under every home used (snapshotted before each logout too).

The suite fails if any flow did not run: each flow marks its name in ``Flows`` and the
full set is asserted at the end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import keyring
import keyring.backends.fail
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, Faults, GitHubEmulator, Scenario, Session
from tests._clock import FakeClock
from tests.conftest import MemoryKeyring
from tests.security._gateway_leaks import GATEWAY_FLOWS, gateway_flows
from tests.security._support import (
    TOKEN_SHAPES,
    CliRun,
    error_texts,
    files_under,
    fragments,
    raw_capture,
)

LIBRARY_FLOWS = {
    "sync.login",
    "sync.poll_pending",
    "sync.status",
    "sync.models",
    "sync.register_models",
    "sync.chat",
    "sync.responses",
    "sync.refresh",
    "sync.retry_401",
    "sync.logout",
    "async.login",
    "async.status",
    "async.models",
    "async.aregister_models",
    "async.chat",
    "async.responses",
    "async.refresh",
    "async.retry_401",
    "async.logout",
}
CLI_FLOWS = {
    "cli.login",
    "cli.login_json",
    "cli.status",
    "cli.status_json",
    "cli.models",
    "cli.models_json",
    "cli.debug",
    "cli.debug_filter",
    "cli.logout",
}
ERROR_FLOWS = {
    "error.denied",
    "error.expired",
    "error.no_copilot_access",
    "error.revoked_login",
    "error.rate_limited",
    "error.off_allowlist_origin",
    "error.malformed_body",
    "error.oversized_body",
    "error.origin_refused_by_route_auth",
    "error.store_corrupt",
    "error.keyring_unavailable",
    "error.not_logged_in",
    "error.login_cancelled",
    "error.async_denied",
    "error.async_revoked_login",
    "cli.error.denied_json",
    "cli.error.expired",
    "cli.error.no_copilot_access_json",
    "cli.error.revoked_login_json",
    "cli.error.rate_limited",
    "cli.error.off_allowlist_origin_json",
    "cli.error.malformed_body",
    "cli.error.store_corrupt_json",
    "cli.error.keyring_unavailable_json",
}
ALL_FLOWS = LIBRARY_FLOWS | CLI_FLOWS | ERROR_FLOWS | GATEWAY_FLOWS
CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
# The one logger the suite plants a token in, to prove the CLI filter masks it.
PLANTED = "tests.security.planted"
RESPONSES = {"model": "gpt-5-mini", "input": "hi"}


@dataclass
class Evidence:
    """Everything seen during the run, and which flows ran."""

    root: Path
    ran: list[str] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)
    canaries: set[str] = field(default_factory=set)
    errors: int = 0
    cli: CliRun = field(default_factory=CliRun)
    homes: int = 0

    def home(self) -> Path:
        self.homes += 1
        path = self.root / f"home-{self.homes}"
        path.mkdir(mode=0o700)
        return path

    def flow(self, name: str) -> None:
        assert name in ALL_FLOWS, f"unregistered flow {name}"
        self.ran.append(name)

    def show(self, label: str, *objects: object) -> None:
        for obj in objects:
            self.texts.append((f"{label}: repr", repr(obj)))
            self.texts.append((f"{label}: str", str(obj)))

    def error(self, label: str, error: BaseException) -> None:
        self.errors += 1
        for text in error_texts(error):
            self.texts.append((f"{label}: error", text))

    @contextmanager
    def expect(
        self, label: str, kind: type[BaseException], code: str | None = None
    ) -> Iterator[None]:
        """The block must raise ``kind`` (with ``code``); its texts are kept."""
        with pytest.raises(kind) as caught:
            yield
        if code is not None:
            assert getattr(caught.value, "code", None) == code, (label, caught.value)
        self.error(label, caught.value)

    def emulator(self, emu: GitHubEmulator) -> None:
        self.canaries.update(emu.canaries())

    def files(self, label: str, root: Path) -> None:
        for name, data in files_under(root):
            self.texts.append((f"{label}: {name}", data.decode("latin-1")))


def _no_sleep(_seconds: float) -> None:
    return None


async def _no_asleep(_seconds: float) -> None:
    return None


def _route(catalog: ch.Catalog, model: str) -> ch.ModelRoute:
    route = catalog.get(f"github-copilot/{model}")
    assert route is not None
    return route


# -- library, blocking ----------------------------------------------------------------------


def _sync_flows(ev: Evidence) -> None:
    home = ev.home()
    store = CredentialStore(home)
    with (
        GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1, interval=1))) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), sleep=_no_sleep) as host,
    ):
        # One poll by hand, to reach Pending (and the device login it belongs to).
        login = host.begin_device_login()
        pending = host.poll_device_login(login)
        assert isinstance(pending, ch.Pending)
        ev.show("sync.poll_pending", login, pending)
        ev.flow("sync.poll_pending")

        shown: list[ch.CopilotDeviceLogin] = []
        identity = host.login(on_code=shown.append, sleep=_no_sleep)
        ev.show("sync.login", identity, shown[0], host, store)
        ev.flow("sync.login")

        header = store.header()
        ev.show("sync.status", header, store.availability(), host.request_headers())
        ev.flow("sync.status")

        session = host.exchange(identity)
        specs = host.inventory(session)
        ev.show(
            "sync.models",
            session,
            session.token,
            session.endpoint,
            specs,
            *specs.models,
            *specs.skipped,
        )
        ev.flow("sync.models")

        catalog = ch.Catalog()
        clock = FakeClock()
        result = ch.register_models(catalog, host, clock=clock)
        ev.show(
            "sync.register_models",
            result,
            catalog,
            catalog.routes(),
            *result.routes,
            *result.skipped,
        )
        ev.show(
            "sync.register_models",
            *(r.auth for r in result.routes),
            *(r.spec for r in result.routes),
        )
        ev.flow("sync.register_models")

        resolver = ch.SessionResolver(host)
        auth = ch.CopilotAuth(resolver, session.endpoint, host.request_headers())
        ev.show("sync.resolver", resolver, resolver.get(), auth)
        chat, responses = _route(catalog, "gpt-4.1"), _route(catalog, "gpt-5-mini")
        with httpx2.Client(transport=emu.transport(), auth=chat.auth) as client:
            answer = client.post(chat.url, json=CHAT)
            assert answer.status_code == 200
            ev.show("sync.chat", answer, answer.request, answer.request.headers, answer.headers)
            ev.flow("sync.chat")
            answer = client.post(responses.url, json=RESPONSES, auth=responses.auth)
            assert answer.status_code == 200
            ev.show("sync.responses", answer.request, answer.request.headers, answer.text)
            ev.flow("sync.responses")

            refreshed = resolver.refresh()
            assert refreshed.token != session.token
            ev.show("sync.refresh", refreshed, resolver, auth)
            ev.flow("sync.refresh")

            clock.advance(2.0)  # the route's session is from the cache: a 401 is retried
            emu.revoke_sessions()  # every session so far now answers 401
            before = len(emu.requests_to("chat"))
            answer = client.post(chat.url, json=CHAT)
            assert answer.status_code == 200
            assert len(emu.requests_to("chat")) == before + 2
            ev.show("sync.retry_401", answer.request, answer.request.headers, answer.history)
            ev.flow("sync.retry_401")

            with ev.expect("error.origin_refused_by_route_auth", ch.OriginError):
                client.post("https://evil.example/chat/completions", json=CHAT)
            ev.flow("error.origin_refused_by_route_auth")

        ev.files("sync (logged in)", home)
        assert host.logout().removed is True
        ev.show("sync.logout", host, store, store.availability())
        ev.flow("sync.logout")

        with ev.expect("error.not_logged_in", ch.NotLoggedInError):
            ch.register_models(ch.Catalog(), host)
        ev.flow("error.not_logged_in")
        ev.show("emulator", emu, emu.requests)
        ev.emulator(emu)
    ev.files("sync (logged out)", home)


# -- library, asyncio -----------------------------------------------------------------------


async def _async_flows(ev: Evidence) -> None:
    home = ev.home()
    store = CredentialStore(home)
    with GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1, interval=1))) as emu:
        async with AsyncGitHubCopilotHost(
            store=store, transport=emu.async_transport(), sleep=_no_asleep
        ) as host:
            shown: list[ch.CopilotDeviceLogin] = []
            identity = await host.login(on_code=shown.append, sleep=_no_asleep)
            ev.show("async.login", identity, shown[0], host)
            ev.flow("async.login")
            ev.show("async.status", store.header(), host.availability(), host.request_headers())
            ev.flow("async.status")

            session = await host.exchange(identity)
            specs = await host.inventory(session)
            ev.show("async.models", session, specs, *specs.models, *specs.skipped)
            ev.flow("async.models")

            catalog = ch.Catalog()
            aclock = FakeClock()
            result = await ch.aregister_models(catalog, host, clock=aclock)
            ev.show("async.aregister_models", result, catalog.routes(), *result.routes)
            ev.flow("async.aregister_models")

            aresolver = ch.AsyncSessionResolver(host)
            aauth = ch.CopilotAuth(aresolver, session.endpoint, host.request_headers())
            ev.show("async.resolver", aresolver, await aresolver.get(), aauth)
            chat, responses = _route(catalog, "gpt-4.1"), _route(catalog, "gpt-5-mini")
            async with httpx2.AsyncClient(transport=emu.async_transport()) as client:
                answer = await client.post(chat.url, json=CHAT, auth=chat.auth)
                assert answer.status_code == 200
                ev.show("async.chat", answer.request, answer.request.headers)
                ev.flow("async.chat")
                answer = await client.post(responses.url, json=RESPONSES, auth=responses.auth)
                assert answer.status_code == 200
                ev.show("async.responses", answer.request, answer.request.headers)
                ev.flow("async.responses")

                refreshed = await aresolver.refresh()
                ev.show("async.refresh", refreshed, aresolver, aauth)
                ev.flow("async.refresh")

                aclock.advance(2.0)  # the route's session is from the cache
                emu.revoke_sessions()
                before = len(emu.requests_to("chat"))
                answer = await client.post(chat.url, json=CHAT, auth=chat.auth)
                assert answer.status_code == 200
                assert len(emu.requests_to("chat")) == before + 2
                ev.show("async.retry_401", answer.request.headers)
                ev.flow("async.retry_401")

            ev.files("async (logged in)", home)
            assert (await host.logout()).removed is True
            ev.flow("async.logout")
        ev.emulator(emu)

    for scenario, flow, kind in (
        (
            Scenario(login=DeviceFlow(login_result="access_denied")),
            "error.async_denied",
            ch.AccessDeniedError,
        ),
        (
            Scenario(session=Session(revoked=True)),
            "error.async_revoked_login",
            ch.LoginRevokedError,
        ),
    ):
        with GitHubEmulator(scenario) as emu:
            async with AsyncGitHubCopilotHost(
                store=CredentialStore(ev.home()), transport=emu.async_transport()
            ) as host:
                if scenario.session.revoked:
                    host.store.save("octocat", ch.Secret(emu.github_token))
                    with ev.expect(flow, kind):
                        await ch.aregister_models(ch.Catalog(), host)
                else:
                    with ev.expect(flow, kind):
                        await host.login(sleep=_no_asleep)
            ev.flow(flow)
            ev.emulator(emu)


# -- library error paths --------------------------------------------------------------------


def _login_error(
    ev: Evidence, flow: str, scenario: Scenario, kind: type[Exception], code: str
) -> None:
    home = ev.home()
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=CredentialStore(home), transport=emu.transport()) as host,
    ):
        with ev.expect(flow, kind, code):
            host.login(sleep=_no_sleep)
        assert host.availability() is None
        ev.show(flow, host)
        ev.emulator(emu)
    ev.flow(flow)


def _register_error(
    ev: Evidence,
    flow: str,
    scenario: Scenario,
    kind: type[Exception],
    code: str,
    *,
    before: Callable[[GitHubEmulator, CredentialStore], None] | None = None,
) -> None:
    home = ev.home()
    store = CredentialStore(home)
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), sleep=_no_sleep) as host,
    ):
        store.save("octocat", ch.Secret(emu.github_token))
        if before is not None:
            before(emu, store)
        catalog = ch.Catalog()
        with ev.expect(flow, kind, code):
            ch.register_models(catalog, host)
        assert len(catalog) == 0
        ev.show(flow, catalog, host)
        ev.emulator(emu)
    ev.files(flow, home)
    ev.flow(flow)


def _flip_last_byte(_emu: GitHubEmulator, store: CredentialStore) -> None:
    data = bytearray(store.record_path.read_bytes())
    data[-1] ^= 0x01
    store.record_path.write_bytes(bytes(data))


def _error_flows(ev: Evidence, memory: MemoryKeyring) -> None:
    _login_error(
        ev,
        "error.denied",
        Scenario(login=DeviceFlow(login_result="access_denied")),
        ch.AccessDeniedError,
        "access_denied",
    )
    _login_error(
        ev,
        "error.expired",
        Scenario(login=DeviceFlow(login_result="expired_token")),
        ch.DeviceCodeExpiredError,
        "expired_token",
    )
    _login_error(
        ev,
        "error.no_copilot_access",
        Scenario(session=Session(entitlement="no_copilot_access")),
        ch.EntitlementError,
        "no_copilot_access",
    )
    _login_error(
        ev,
        "error.malformed_body",
        Scenario(faults=Faults(malformed=frozenset({"access_token"}))),
        ch.ResponseError,
        "bad_response",
    )
    _register_error(
        ev,
        "error.revoked_login",
        Scenario(),
        ch.LoginRevokedError,
        "login_invalid",
        before=lambda emu, _s: emu.revoke_login(),
    )
    _register_error(
        ev,
        "error.rate_limited",
        Scenario(faults=Faults(exchange_failures=(429, 429), retry_after="0")),
        ch.ServerError,
        "rate_limited",
    )
    _register_error(
        ev,
        "error.off_allowlist_origin",
        Scenario(session=Session(api_endpoint="https://evil.example")),
        ch.OriginError,
        "origin_not_allowed",
    )
    _register_error(
        ev,
        "error.oversized_body",
        Scenario(faults=Faults(oversized=frozenset({"models"}))),
        ch.ResponseError,
        "response_too_large",
    )
    _register_error(
        ev,
        "error.store_corrupt",
        Scenario(),
        ch.StoreCorruptError,
        "store_corrupt",
        before=_flip_last_byte,
    )

    # No usable keyring: nothing is written, the message names --key-file.
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        _login_error(
            ev,
            "error.keyring_unavailable",
            Scenario(),
            ch.KeyringUnavailableError,
            "keyring_unavailable",
        )
    finally:
        keyring.set_keyring(memory)

    # A cancelled login (the person walked away): nothing is stored.
    home = ev.home()
    cancel = threading.Event()
    with (
        GitHubEmulator(Scenario(login=DeviceFlow(auto_approve=False, interval=1))) as emu,
        GitHubCopilotHost(store=CredentialStore(home), transport=emu.transport()) as host,
    ):
        with ev.expect("error.login_cancelled", ch.LoginCancelledError):
            host.login(cancel=cancel, sleep=lambda _s: cancel.set())
        assert host.availability() is None
        ev.emulator(emu)
    ev.flow("error.login_cancelled")


# -- the CLI --------------------------------------------------------------------------------


def _cli_flows(ev: Evidence, memory: MemoryKeyring) -> None:
    run = ev.cli
    home = ev.home()
    command: tuple[str, ...]
    with GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=1, interval=1))) as emu:
        result = run(emu, home, "login", "--headless")
        assert result.exit_code == 0, result.stderr
        ev.flow("cli.login")
        for command, flow in ((("status",), "cli.status"), (("models",), "cli.models")):
            result = run(emu, home, *command)
            assert result.exit_code == 0, result.stderr
            ev.flow(flow)
        for command, flow in (
            (("status", "--json"), "cli.status_json"),
            (("models", "--json"), "cli.models_json"),
        ):
            result = run(emu, home, *command)
            assert result.exit_code == 0, result.stderr
            json.loads(result.stdout)
            ev.flow(flow)
        assert run(emu, home, "--debug", "status").exit_code == 0
        result = run(emu, home, "--debug", "models", "--json")
        assert result.exit_code == 0, result.stderr
        assert "DEBUG" in result.stderr  # the HTTP stack's and ours, through the filter
        ev.flow("cli.debug")
        ev.files("cli (logged in)", home)
        result = run(emu, home, "logout")
        assert result.exit_code == 0
        result = run(emu, home, "login", "--json", "--headless", "--key-file")
        assert result.exit_code == 0, result.stderr
        events = [json.loads(line) for line in result.stdout.splitlines()]
        assert [e["event"] for e in events] == ["device_code", "authorized"]
        ev.flow("cli.login_json")
        ev.files("cli (key file)", home)
        result = run(emu, home, "--debug", "logout")
        assert result.exit_code == 0
        ev.flow("cli.logout")
        ev.emulator(emu)

    # The CLI's own filter: a record carrying the token (as a careless plug-in or a
    # debugging person might log it) reaches --debug's stderr only redacted.
    home = ev.home()
    with GitHubEmulator() as emu:
        CredentialStore(home).save("octocat", ch.Secret(emu.github_token), key_file=True)
        planted = logging.getLogger(PLANTED)

        class Careless(GitHubCopilotHost):
            def exchange(self, identity: ch.LoginIdentity) -> ch.CopilotSession:
                session = super().exchange(identity)
                planted.debug("session %s for %s", session.token.reveal(), emu.github_token)
                return session

        def factory(*, store: Any, clock: Any) -> GitHubCopilotHost:
            return Careless(store=store, transport=emu.transport())

        from click.testing import CliRunner
        from copilot_host_cli import main
        from copilot_host_cli._context import CliSeam

        with raw_capture() as own:  # a second raw handler, ahead of the suite's
            result = CliRunner().invoke(
                main,
                ["--debug", "models"],
                obj=CliSeam(host_factory=factory),
                env={"COPILOT_HOST_HOME": str(home)},
                catch_exceptions=False,
            )
        assert result.exit_code == 0, result.stderr
        # The plant really happened (the raw handler saw the token) ...
        assert any(emu.session_tokens[-1] in line for line in own.lines)
        # ... and the CLI's stderr shows it masked.
        assert "session [REDACTED] for [REDACTED]" in result.stderr
        run.seen.append(("cli.debug_filter (stdout)", result.stdout))
        run.seen.append(("cli.debug_filter (stderr)", result.stderr))
        ev.canaries.update(emu.canaries())
    ev.flow("cli.debug_filter")

    def cli_error(
        flow: str,
        scenario: Scenario,
        args: tuple[str, ...],
        code: str,
        *,
        logged_in: bool = True,
        before: Callable[[GitHubEmulator, CredentialStore], None] | None = None,
    ) -> None:
        home = ev.home()
        with GitHubEmulator(scenario) as emu:
            store = CredentialStore(home)
            if logged_in:
                store.save("octocat", ch.Secret(emu.github_token), key_file=True)
            if before is not None:
                before(emu, store)
            result = run(emu, home, *args)
            assert result.exit_code == 1, (flow, result.stdout, result.stderr)
            shown = result.stdout if "--json" in args else result.stderr
            if "--json" in args:
                last = json.loads(shown.splitlines()[-1])
                assert (last.get("error") or last)["code"] == code, (flow, last)
            ev.emulator(emu)
        ev.files(flow, home)
        ev.flow(flow)

    cli_error(
        "cli.error.denied_json",
        Scenario(login=DeviceFlow(login_result="access_denied")),
        ("login", "--json"),
        "access_denied",
        logged_in=False,
    )
    cli_error(
        "cli.error.expired",
        Scenario(login=DeviceFlow(login_result="expired_token")),
        ("login", "--headless"),
        "expired_token",
        logged_in=False,
    )
    cli_error(
        "cli.error.no_copilot_access_json",
        Scenario(session=Session(entitlement="no_copilot_access")),
        ("login", "--json"),
        "no_copilot_access",
        logged_in=False,
    )
    cli_error(
        "cli.error.malformed_body",
        Scenario(faults=Faults(malformed=frozenset({"device_code"}))),
        ("login", "--headless"),
        "bad_response",
        logged_in=False,
    )
    cli_error(
        "cli.error.revoked_login_json",
        Scenario(),
        ("models", "--json"),
        "login_invalid",
        before=lambda emu, _s: emu.revoke_login(),
    )
    cli_error(
        "cli.error.rate_limited",
        Scenario(faults=Faults(models_failures=(429, 429), retry_after="0")),
        ("--debug", "models"),
        "rate_limited",
    )
    cli_error(
        "cli.error.off_allowlist_origin_json",
        Scenario(session=Session(api_endpoint="https://api.githubcopilot.com.evil.example")),
        ("models", "--json"),
        "origin_not_allowed",
    )
    cli_error(
        "cli.error.store_corrupt_json",
        Scenario(),
        ("--debug", "models", "--json"),
        "store_corrupt",
        before=_flip_last_byte,
    )
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        cli_error(
            "cli.error.keyring_unavailable_json",
            Scenario(),
            ("login", "--json"),
            "keyring_unavailable",
            logged_in=False,
        )
    finally:
        keyring.set_keyring(memory)


# -- the one run ----------------------------------------------------------------------------


def test_no_canary_reaches_any_output_log_error_repr_or_file(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    ev = Evidence(tmp_path / "homes")
    ev.root.mkdir(mode=0o700)
    with raw_capture(ignore=PLANTED) as log:
        _sync_flows(ev)
        asyncio.run(_async_flows(ev))
        _error_flows(ev, memory_keyring)
        _cli_flows(ev, memory_keyring)
        gateway_flows(ev)

    # Every flow ran (a skipped or forgotten flow fails the suite), each exactly once.
    assert sorted(set(ev.ran)) == sorted(ALL_FLOWS), sorted(ALL_FLOWS - set(ev.ran))
    assert len(ev.ran) == len(set(ev.ran))

    # Enough was issued and captured for the absence of canaries to mean something.
    github_tokens = [c for c in ev.canaries if c.startswith("gho_")]
    sessions = [c for c in ev.canaries if c.startswith("tid=")]
    assert len(github_tokens) >= 25 and len(sessions) >= 10
    assert log.lines and any("copilot_host" in line for line in log.lines)
    assert any("httpcore2" in line for line in log.lines)  # the HTTP stack's DEBUG too
    assert log.refused_filters >= 1  # the CLI did try to filter our raw handler
    assert ev.errors >= 15  # library errors; the CLI ones are in its captured stderr

    ev.texts += [("log", line) for line in log.lines]
    ev.texts += ev.cli.seen
    ev.files("homes at the end", ev.root)
    ev.texts.append(("keyring", repr(memory_keyring.items)))

    leaks = []
    pieces = {piece: canary for canary in ev.canaries for piece in fragments(canary)}
    for label, text in ev.texts:
        for piece, canary in pieces.items():
            if piece in text:
                leaks.append(f"{label}: a piece of canary {canary[:4]}... ({len(canary)} chars)")
        for match in TOKEN_SHAPES.finditer(text):
            leaks.append(f"{label}: token-shaped text {match.group()[:5]}...")
    assert leaks == []
    print(
        f"\nleak suite: {len(ALL_FLOWS)} flows, {len(ev.canaries)} canaries "
        f"({len(pieces)} pieces), {len(ev.texts)} texts, {len(log.lines)} log lines, "
        f"{ev.errors} errors, 0 leaks"
    )


def test_a_planted_leak_is_caught() -> None:
    """The checker itself can fail: a canary hidden in a long text is found by its tail."""
    canary = "gho_" + secrets.token_hex(18)
    text = "x" * 100 + canary[-16:] + "y"
    assert any(piece in text for piece in fragments(canary))
    assert not any(piece in "x" * 200 for piece in fragments(canary))
