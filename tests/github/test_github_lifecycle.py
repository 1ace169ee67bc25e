"""Routes that outlive their host, and async hosts used across event loops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator
from tests._clock import FakeClock

BODY = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}


def test_routes_of_a_closed_host_fail_with_a_typed_error_at_the_next_exchange(
    tmp_path: Path,
) -> None:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home")
        catalog = ch.Catalog()
        clock = FakeClock()
        with GitHubCopilotHost(store=store, transport=emulator.transport(), key_file=True) as h:
            h.login(sleep=lambda _seconds: None)
            ch.register_models(catalog, h, clock=clock)
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        with httpx2.Client(auth=route.auth, transport=emulator.transport()) as client:
            assert client.post(route.url, json=BODY).status_code == 200  # cached session
            clock.advance(2.0)
            emulator.revoke_sessions()  # the next request needs a new exchange
            with pytest.raises(ch.SessionError) as caught:
                client.post(route.url, json=BODY)
    assert caught.value.code == "host_closed"
    assert "keep the host open" in caught.value.message


def test_an_async_host_is_bound_to_its_first_event_loop(tmp_path: Path) -> None:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home")
        host = AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport(), key_file=True
        )

        async def first() -> None:
            await host.login(sleep=lambda _seconds: asyncio.sleep(0))

        async def second() -> None:
            identity = host.availability()
            assert identity is not None
            await host.exchange(identity)

        asyncio.run(first())
        with pytest.raises(ch.SessionError) as caught:
            asyncio.run(second())
        assert caught.value.code == "wrong_event_loop"
        asyncio.run(host.aclose())  # closing from another loop is quiet, not a crash
        with pytest.raises(ch.SessionError) as closed:
            asyncio.run(second())
        assert closed.value.code == "host_closed"
