"""Every network step has a total deadline, not only a per-read timeout.

A server that drips its answer a byte at a time, each byte well inside the read timeout,
used to keep a step going for as long as the size cap allowed (weeks for the exchange with
the default 30 s read timeout), and every caller waiting on that step with it. Real sockets,
real time, bounded to seconds: the emulator drips a byte every 100 ms; the read timeout is
0.4 s, so the step's budget is 1.2 s while the smallest answer would take five seconds.
Assertions check the typed outcome and that it came long before the drip could finish, never
a precise duration.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, Faults, GitHubEmulator, Scenario

TIMEOUT = httpx2.Timeout(0.4)
BUDGET = 3 * 0.4
# Below the time the shortest dripped answer takes (about fifty bytes at ten a second), and
# well above the budget: a machine under load cannot push a correct run past it.
LONG_BEFORE_THE_DRIP_ENDS = 4.5
STEPS = ("device_code", "access_token", "copilot_token", "user", "models")


def _drip(endpoint: str) -> Scenario:
    return Scenario(login=DeviceFlow(pending_polls=0), faults=Faults(drip={endpoint: 0.1}))


def _run_sync(endpoint: str, store: CredentialStore) -> ch.CopilotHostError:
    with (
        GitHubEmulator(_drip(endpoint)) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), timeout=TIMEOUT) as host,
    ):
        if endpoint == "models":
            store.save("octocat", ch.Secret(emu.github_token))
        with pytest.raises(ch.CopilotHostError) as caught:
            if endpoint == "models":
                ch.register_models(ch.Catalog(), host)
            else:
                host.login(sleep=lambda _: None)
    return caught.value


@pytest.mark.parametrize("endpoint", STEPS)
def test_a_dripping_answer_ends_the_step_with_a_typed_timeout(
    endpoint: str, store: CredentialStore
) -> None:
    started = time.monotonic()
    error = _run_sync(endpoint, store)
    assert time.monotonic() - started < LONG_BEFORE_THE_DRIP_ENDS
    assert isinstance(error, ch.TransportError)
    assert error.code == "timeout"
    assert error.retryable
    assert f"within {BUDGET:g} s" in error.message
    if endpoint != "models":
        assert store.header() is None  # a login cut short stores nothing


@pytest.mark.parametrize("endpoint", STEPS)
def test_a_dripping_answer_ends_the_async_step_too(endpoint: str, store: CredentialStore) -> None:
    async def main() -> ch.CopilotHostError:
        with GitHubEmulator(_drip(endpoint)) as emu:
            async with AsyncGitHubCopilotHost(
                store=store, transport=emu.async_transport(), timeout=TIMEOUT
            ) as host:
                if endpoint == "models":
                    store.save("octocat", ch.Secret(emu.github_token))
                with pytest.raises(ch.CopilotHostError) as caught:
                    if endpoint == "models":
                        await ch.aregister_models(ch.Catalog(), host)
                    else:

                        async def no_wait(_seconds: float) -> None:
                            return None

                        await host.login(sleep=no_wait)
                return caught.value

    started = time.monotonic()
    error = asyncio.run(main())
    assert time.monotonic() - started < LONG_BEFORE_THE_DRIP_ENDS
    assert isinstance(error, ch.TransportError)
    assert error.code == "timeout"


def test_every_thread_waiting_on_a_dripping_exchange_gets_the_timeout(
    store: CredentialStore,
) -> None:
    """Sixteen requests need the same refresh; the exchange drips: one exchange, and all
    sixteen end with the typed timeout instead of waiting for the drip."""
    with GitHubEmulator(_drip("copilot_token")) as emu:
        store.save("octocat", ch.Secret(emu.github_token))
        with GitHubCopilotHost(store=store, transport=emu.transport(), timeout=TIMEOUT) as host:
            resolver = ch.SessionResolver(host)
            errors: list[BaseException] = []
            barrier = threading.Barrier(16)

            def call() -> None:
                barrier.wait(5)
                try:
                    resolver.get()
                except BaseException as exc:  # recorded for the assertions
                    errors.append(exc)

            started = time.monotonic()
            threads = [threading.Thread(target=call) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(LONG_BEFORE_THE_DRIP_ENDS)
            assert not any(t.is_alive() for t in threads)
            assert time.monotonic() - started < LONG_BEFORE_THE_DRIP_ENDS
        assert len(errors) == 16
        assert {getattr(e, "code", None) for e in errors} == {"timeout"}
        assert len(emu.requests_to("copilot_token")) == 1


def test_a_step_without_a_drip_is_not_cut_short(store: CredentialStore) -> None:
    """The budget is for the whole step, so an answer that is merely slow to start (but
    inside the read timeout) still arrives."""
    with (
        GitHubEmulator(Scenario(faults=Faults(slow={"copilot_token": 0.3}))) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), timeout=TIMEOUT) as host,
    ):
        store.save("octocat", ch.Secret(emu.github_token))
        identity = store.availability()
        assert identity is not None
        session = host.exchange(identity)
    assert session.token
