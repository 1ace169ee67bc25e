"""Routes that outlive their host, and async hosts used across event loops."""

from __future__ import annotations

import asyncio
import gc
import threading
from pathlib import Path

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import Faults, GitHubEmulator, Scenario
from tests._clock import FakeClock

BODY = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}


def test_routes_of_a_closed_host_fail_with_a_typed_error_at_the_next_exchange(
    tmp_path: Path,
) -> None:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home")
        catalog = ch.Catalog()
        clock = FakeClock()
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as h:
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


# aclose() from another loop leaves the first loop's connection open (its socket is only
# closed when collected): ignored here, and collected before the test ends so the warning
# cannot surface in another test.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_an_async_host_is_bound_to_its_first_event_loop(tmp_path: Path) -> None:
    _use_an_async_host_from_two_loops(tmp_path)
    gc.collect()


def _use_an_async_host_from_two_loops(tmp_path: Path) -> None:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home", key_file=True)
        host = AsyncGitHubCopilotHost(store=store, transport=emulator.async_transport())

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


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_closing_a_host_under_a_request_in_flight_is_host_closed_not_retryable(
    kind: str, tmp_path: Path
) -> None:
    """A retry cannot succeed on a closed host, so the error must not invite one."""
    with GitHubEmulator(Scenario(faults=Faults(slow={"copilot_token": 1.0}))) as emulator:
        store = CredentialStore(tmp_path / "home")
        store.save("octocat", ch.Secret(emulator.github_token))
        identity = store.availability()
        assert identity is not None
        if kind == "sync":
            host = GitHubCopilotHost(store=store, transport=emulator.transport())
            closer = threading.Timer(0.3, host.close)
            closer.start()
            with pytest.raises(ch.CopilotHostError) as caught:
                host.exchange(identity)
            closer.join()
        else:

            async def main() -> ch.CopilotHostError:
                host = AsyncGitHubCopilotHost(store=store, transport=emulator.async_transport())
                exchange = asyncio.ensure_future(host.exchange(identity))
                await asyncio.sleep(0.3)
                await host.aclose()
                with pytest.raises(ch.CopilotHostError) as caught:
                    await exchange
                return caught.value

            caught_value = asyncio.run(main())
    error = caught.value if kind == "sync" else caught_value
    assert error.code == "host_closed"
    assert not error.retryable
