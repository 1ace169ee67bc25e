"""AsyncSessionResolver: the same guarantees for asyncio tasks, and on several loops."""

from __future__ import annotations

import asyncio
import threading

import pytest

import copilot_host as ch
from copilot_host import (
    AsyncSessionResolver,
    NotLoggedInError,
    ServerError,
    TransportError,
)
from tests.sessions._hosts import (
    AsyncCountingHost,
    CountingHost,
    identity,
    make_session,
    prime,
)

TASKS = 500


def setup(**kwargs: object) -> tuple[AsyncCountingHost, AsyncSessionResolver, CountingHost]:
    initial = kwargs.pop("initial", None)
    inner = CountingHost(**kwargs)  # type: ignore[arg-type]
    host = AsyncCountingHost(inner)
    resolver = AsyncSessionResolver(host, clock=inner.clock)
    if initial:
        gate, inner.gate = inner.gate, None
        prime(resolver, inner, make_session(inner.clock, inner.who))  # type: ignore[arg-type]
        inner.gate = gate
    return host, resolver, inner


def test_exports() -> None:
    assert ch.AsyncSessionResolver is AsyncSessionResolver


def test_500_tasks_on_an_expired_session_cause_exactly_one_exchange() -> None:
    _, r, inner = setup(initial=True, gate=threading.Event())
    inner.clock.advance(1800)

    async def main() -> list[ch.CopilotSession]:
        tasks = [asyncio.create_task(r.get()) for _ in range(TASKS)]
        await asyncio.sleep(0.05)  # every task is waiting now
        inner.gate.set()  # type: ignore[union-attr]
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    assert inner.exchanges == 1
    assert all(s is inner.issued[0] for s in results)


def test_500_tasks_in_the_advisory_window_one_exchange_and_nobody_else_blocked() -> None:
    _, r, inner = setup(initial=True, gate=threading.Event())
    inner.clock.advance(1600)

    async def main() -> None:
        leader = asyncio.create_task(r.get())
        while not inner.entered.is_set():
            await asyncio.sleep(0.001)
        others = await asyncio.wait_for(
            asyncio.gather(*[r.get() for _ in range(TASKS - 1)]), timeout=5
        )
        assert not leader.done()  # the exchange is held: only its starter waits
        assert len({id(s) for s in others}) == 1
        assert others[0].expires_monotonic == inner.clock.now + 200  # the old, still-valid session
        inner.gate.set()  # type: ignore[union-attr]
        assert await leader is inner.issued[0]
        assert await r.get() is inner.issued[0]

    asyncio.run(main())
    assert inner.exchanges == 1


def test_a_cancelled_waiter_does_not_cancel_the_shared_refresh() -> None:
    _, r, inner = setup(gate=threading.Event())

    async def main() -> None:
        leader = asyncio.create_task(r.get())
        waiter = asyncio.create_task(r.get())
        while not inner.entered.is_set():
            await asyncio.sleep(0.001)
        leader.cancel()  # even the task that started the refresh
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leader
        with pytest.raises(asyncio.CancelledError):
            await waiter
        third = asyncio.create_task(r.get())
        await asyncio.sleep(0.01)
        inner.gate.set()  # type: ignore[union-attr]
        assert await third is inner.issued[0]
        assert await r.get() is inner.issued[0]

    asyncio.run(main())
    assert inner.exchanges == 1


def test_an_exchange_cancelled_with_its_loop_leaves_no_session_and_the_next_loop_retries() -> None:
    _, r, inner = setup(gate=threading.Event())

    async def abandon() -> None:
        task = asyncio.create_task(r.get())
        while not inner.entered.is_set():
            await asyncio.sleep(0.001)
        del task  # asyncio.run cancels what is left when main returns

    asyncio.run(abandon())
    assert inner.exchanges == 1 and inner.issued == []
    inner.gate.set()  # type: ignore[union-attr]
    session = asyncio.run(r.get())
    assert session is inner.issued[0] and inner.exchanges == 2


def test_a_host_whose_exchange_fails_then_succeeds() -> None:
    _, r, inner = setup(failures=[ServerError("HTTP 503")])

    async def main() -> None:
        results = await asyncio.gather(*[r.get() for _ in range(20)], return_exceptions=True)
        assert all(isinstance(x, ServerError) for x in results)
        inner.clock.advance(1)  # past the failure guard (one exchange per second at most)
        assert await r.get() is inner.issued[0]

    asyncio.run(main())
    assert inner.exchanges == 2


def test_failed_advisory_refresh_keeps_the_old_session_and_backs_off() -> None:
    _, r, inner = setup(initial=True, failures=[TransportError("down")])
    inner.clock.advance(1600)

    async def main() -> None:
        old = await r.get()
        assert inner.exchanges == 1 and old.expires_monotonic == inner.clock.now + 200
        inner.clock.advance(29)
        assert await r.get() is old
        assert inner.exchanges == 1
        inner.clock.advance(2)
        assert await r.get() is inner.issued[0]

    asyncio.run(main())
    assert inner.exchanges == 2


def test_explicit_refresh_failure_leaves_no_session() -> None:
    _, r, inner = setup()

    async def main() -> None:
        old = await r.get()
        inner.failures.append(TransportError("down"))
        with pytest.raises(TransportError):
            await r.refresh()
        assert "no session" in repr(r)
        assert await r.get() is not old

    asyncio.run(main())
    assert inner.exchanges == 3


def test_invalidate_racing_a_refresh_discards_its_result() -> None:
    _, r, inner = setup(gate=threading.Event())

    async def main() -> None:
        task = asyncio.create_task(r.get())
        while not inner.entered.is_set():
            await asyncio.sleep(0.001)
        r.invalidate()
        inner.gate.set()  # type: ignore[union-attr]
        got = await task
        first, second = inner.issued
        assert got is second
        assert await r.get() is second
        assert all([await r.get() is not first for _ in range(5)])

    asyncio.run(main())
    assert inner.exchanges == 2


def test_availability_flipping_never_returns_the_old_session() -> None:
    _, r, inner = setup()

    async def main() -> None:
        old = await r.get()
        inner.who = identity("other")
        new = await r.get()
        assert new is not old and new.identity == inner.who
        inner.who = None
        with pytest.raises(NotLoggedInError):
            await r.get()

    asyncio.run(main())


def test_refresh_storm_is_bounded_with_ten_second_tokens() -> None:
    _, r, inner = setup(lifetime=10.0, refresh_in=None)

    async def main() -> None:
        for _ in range(3000):
            await r.get()
            inner.clock.advance(0.02)

    asyncio.run(main())
    assert 10 <= inner.exchanges <= 13


# -- several event loops -----------------------------------------------------------------------


def test_one_resolver_serves_successive_event_loops() -> None:
    _, r, inner = setup()
    first = asyncio.run(r.get())
    assert asyncio.run(r.get()) is first
    inner.clock.advance(1800)
    second = asyncio.run(r.get())  # a refresh on a new loop
    assert second is not first
    assert asyncio.run(r.refresh()) is inner.issued[2]


def test_loops_in_several_threads_share_one_exchange() -> None:
    _, r, inner = setup(gate=threading.Event())
    barrier = threading.Barrier(4)
    results: list[object] = []

    def run_loop() -> None:
        async def many() -> list[ch.CopilotSession]:
            return await asyncio.gather(*[r.get() for _ in range(50)])

        barrier.wait(5)
        results.extend(asyncio.run(many()))

    threads = [threading.Thread(target=run_loop) for _ in range(4)]
    for t in threads:
        t.start()
    threading.Timer(0.2, inner.gate.set).start()  # type: ignore[union-attr]
    for t in threads:
        t.join(20)
    assert inner.exchanges == 1
    assert len(results) == 200 and all(s is inner.issued[0] for s in results)


# -- blocking callers (httpx2.Client) ----------------------------------------------------------
