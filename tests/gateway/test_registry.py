"""The gateway's registration is the library's single flight: concurrent first requests
share one; a request whose wait is cancelled (a client gone, a server that cancels on
hang-up) leaves it to the others; a failure is told to each waiter; closing the gateway
cancels it and its waiters."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

import copilot_host as ch
from copilot_host.gateway._app._registry import Registry
from tests._clock import FakeClock
from tests.core._hosts import AsyncMemoryHost, MemoryHost


@dataclass
class GatedHost(AsyncMemoryHost):
    """Discovery waits for the test to open the gate."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    asked: asyncio.Event = field(default_factory=asyncio.Event)

    async def inventory(self, session: ch.CopilotSession) -> Sequence[ch.ModelSpec]:
        self.asked.set()
        await self.gate.wait()
        return await super().inventory(session)


def _registry() -> tuple[Registry, GatedHost]:
    clock = FakeClock()
    host = GatedHost(MemoryHost(clock=clock))
    return Registry(host, clock), host


def test_a_cancelled_wait_leaves_the_one_registration_to_the_others() -> None:
    async def scenario() -> None:
        registry, host = _registry()
        gone = asyncio.create_task(registry.current())
        staying = [asyncio.create_task(registry.current()) for _ in range(3)]
        await host.asked.wait()
        gone.cancel()
        await asyncio.sleep(0)
        host.gate.set()
        snapshots = await asyncio.gather(*staying)
        assert gone.cancelled()
        assert all(s is snapshots[0] for s in snapshots)
        assert snapshots[0].find("gpt-4o") is not None
        assert (registry.registrations, host.inner.exchanges) == (1, 1)
        # The next request is served by the routes in hand: no registration, no wait.
        assert await registry.current() is snapshots[0]
        assert registry.registrations == 1

    asyncio.run(scenario())


def test_a_failed_registration_is_told_to_each_waiter_and_remembered_for_a_second() -> None:
    async def scenario() -> None:
        registry, host = _registry()
        host.inner.fail_inventory = ch.ServerError("GitHub answered 503", code="server_error")
        host.gate.set()
        told = await asyncio.gather(registry.current(), registry.current(), return_exceptions=True)
        assert [type(e) for e in told] == [ch.ServerError, ch.ServerError]
        assert told[0] is not told[1]
        with pytest.raises(ch.ServerError):
            await registry.current()  # told again, not tried again
        assert registry.registrations == 1

    asyncio.run(scenario())


def test_closing_cancels_the_registration_and_its_waiters() -> None:
    async def scenario() -> None:
        registry, host = _registry()
        waiter = asyncio.create_task(registry.current())
        await host.asked.wait()
        await registry.aclose()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert len(registry.catalog) == 0  # nothing half-registered

    asyncio.run(scenario())
