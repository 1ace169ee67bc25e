"""Canary tokens issued by the emulator never show up where a person or a log could see
them: DEBUG logs (ours and httpx2's), exception text and tracebacks, reprs, files."""

from __future__ import annotations

import asyncio
import logging
import pickle
import traceback
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, GitHubEmulator, Scenario
from tests.github._support import files_containing


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def debug_log() -> Iterator[_Collect]:
    handler = _Collect()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(previous)


def _assert_clean(text: str, canaries: tuple[str, ...]) -> None:
    for canary in canaries:
        assert canary not in text
        # Fragments too: a token cut in half by a formatter is still a leak.
        assert canary[-16:] not in text


def _failures(store: CredentialStore, emu: GitHubEmulator) -> list[BaseException]:
    """Drive every failure path once and collect the errors."""
    caught: list[BaseException] = []
    with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
        identity = store.availability()
        assert identity is not None
        emu.revoke_sessions()
        for action in (
            lambda: host.exchange(ch.LoginIdentity("other", "x")),
            lambda: host.inventory(host.exchange(identity)),
        ):
            try:
                action()
            except ch.CopilotHostError as exc:
                caught.append(exc)
        emu.revoke_login()
        try:
            host.exchange(identity)
        except ch.CopilotHostError as exc:
            caught.append(exc)
    return caught


def test_canaries_stay_out_of_logs_errors_reprs_and_files(
    store: CredentialStore, debug_log: _Collect, tmp_path: Path
) -> None:
    with GitHubEmulator(Scenario(login=DeviceFlow(pending_polls=2, interval=1))) as emu:
        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            logins: list[ch.CopilotDeviceLogin] = []
            identity = host.login(on_code=logins.append, sleep=lambda s: None)
            catalog = ch.Catalog()
            result = ch.register_models(catalog, host)
            session = host.exchange(identity)
            route = result.routes[0]
            with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
                response = client.post(
                    route.url,
                    json={"model": route.model_id, "messages": [{"role": "user", "content": "x"}]},
                )
                assert response.status_code == 200
                shown = [
                    repr(host),
                    repr(session),
                    str(session),
                    repr(logins[0]),
                    repr(result),
                    repr(catalog.routes()),
                    repr(route.auth),
                    repr(response.request),
                    repr(emu.requests),
                    repr(store),
                    repr(identity),
                    str(response.request.headers),
                ]
        errors = _failures(store, emu)
        canaries = emu.canaries()

    assert len(canaries) >= 4  # a GitHub token, device code and session tokens were issued
    assert errors, "the failure paths ran"
    for error in errors:
        shown += [str(error), repr(error), "".join(traceback.format_exception(error))]
        with pytest.raises(TypeError):
            pickle.dumps(session)
    logged = "\n".join(debug_log.lines)
    # Our DEBUG lines and httpx2's and httpcore2's (response headers included) were captured.
    assert "copilot_host.github" in logged
    assert "httpcore2" in logged
    _assert_clean(logged, canaries)
    for text in shown:
        _assert_clean(text, canaries)
    assert files_containing(store.home, canaries) == []
    assert files_containing(tmp_path, canaries) == []


def test_async_canaries_stay_out_of_logs(store: CredentialStore, debug_log: _Collect) -> None:
    async def main() -> tuple[str, ...]:
        with GitHubEmulator(Scenario(login=DeviceFlow(interval=1))) as emu:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:

                async def no_wait(seconds: float) -> None:
                    return None

                await host.login(sleep=no_wait)
                catalog = ch.Catalog()
                await ch.aregister_models(catalog, host)
                route = next(iter(catalog.routes().values()))
                async with httpx2.AsyncClient(transport=emu.async_transport()) as client:
                    await client.post(
                        route.url,
                        json={"model": route.model_id, "messages": []},
                        auth=route.auth,
                    )
            return emu.canaries()

    canaries = asyncio.run(main())
    _assert_clean("\n".join(debug_log.lines), canaries)
    assert files_containing(store.home, canaries) == []
