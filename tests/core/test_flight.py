"""``SingleFlight`` and ``Flight``: one flight however many callers, from threads or
tasks; a waiter that gives up never cancels it; a failure reaches each waiter as its own
copy; flights run one after another; and the memory of the last failure."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import copilot_host as ch
from copilot_host._flight import Flight, SingleFlight

Flights = SingleFlight[str, int]


def _finisher(
    flights: Flights, flight: Flight[str, int]
) -> Callable[[int | BaseException], int | BaseException]:
    def finish(result: int | BaseException) -> int | BaseException:
        flights.retire(flight)
        return result

    return finish


def test_threads_share_one_flight_and_its_result() -> None:
    flights: Flights = SingleFlight()
    lock, gate, calls = threading.Lock(), threading.Event(), []
    # Every caller holds its flight before the work may end: none comes too late to join.
    joined = threading.Barrier(9)

    def work() -> int:
        calls.append(1)
        assert gate.wait(10)
        return 42

    def get(_: int) -> int:
        with lock:
            flight = flights.flying()
            leader = flight is None
            if flight is None:
                flight = flights.start("octocat")
        joined.wait(10)
        if leader:
            flight.run(work, _finisher(flights, flight))
        return flight.outcome(timeout=10)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = [pool.submit(get, i) for i in range(8)]
        joined.wait(10)
        gate.set()
        assert [a.result() for a in answers] == [42] * 8
    assert calls == [1]
    assert flights.flying() is None and not flights.out()


def test_a_cancelled_or_timed_out_waiter_leaves_the_flight_to_the_others() -> None:
    async def scenario() -> None:
        flights: Flights = SingleFlight()
        gate = asyncio.Event()

        async def work() -> int:
            await gate.wait()
            return 7

        flight = flights.start("octocat")
        flight.launch(work, _finisher(flights, flight))
        gone = asyncio.create_task(flight.landed())
        staying = asyncio.create_task(flight.landed())
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await flight.landed()
        gate.set()
        assert await staying == 7
        assert gone.cancelled()
        assert flight.done()
        # A thread can wait for the same flight.
        assert await asyncio.to_thread(flight.outcome, 1) == 7

    asyncio.run(scenario())


def test_a_failure_reaches_each_waiter_as_its_own_copy() -> None:
    async def scenario() -> None:
        flights: Flights = SingleFlight()
        failure = ch.ServerError("GitHub answered 503", code="server_error")

        async def work() -> int:
            await asyncio.sleep(0)
            raise failure

        flight = flights.start("octocat")
        flight.launch(work, _finisher(flights, flight))
        told = await asyncio.gather(flight.landed(), flight.landed(), return_exceptions=True)
        assert [type(e) for e in told] == [ch.ServerError, ch.ServerError]
        assert told[0] is not told[1] and told[0] is not failure
        assert all(isinstance(e, ch.ServerError) and e.__cause__ is failure for e in told)
        assert all(isinstance(e, ch.ServerError) and e.code == "server_error" for e in told)

    asyncio.run(scenario())


def test_an_interrupt_is_landed_for_the_waiters_then_raised_on() -> None:
    flights: Flights = SingleFlight()
    flight = flights.start("octocat")

    def work() -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flight.run(work, _finisher(flights, flight))
    with pytest.raises(KeyboardInterrupt):
        flight.outcome(timeout=1)
    assert not flights.out()


def test_a_flight_started_while_another_is_out_runs_after_it() -> None:
    async def scenario() -> None:
        flights: Flights = SingleFlight()
        gate, order = asyncio.Event(), []

        async def first() -> int:
            order.append("first begins")
            await gate.wait()
            order.append("first ends")
            return 1

        async def second() -> int:
            order.append("second begins")
            return 2

        one = flights.start("octocat")
        one.launch(first, _finisher(flights, one))
        await asyncio.sleep(0)
        flights.invalidate()  # the login changed: the first is no longer current
        assert flights.flying() is None and flights.out()
        assert not flights.is_current(one)
        two = flights.start("mona")
        chained = two.previous
        assert chained is one and flights.flying() is two
        two.launch(second, _finisher(flights, two))
        await asyncio.sleep(0.01)
        assert order == ["first begins"]
        gate.set()
        assert (await one.landed(), await two.landed()) == (1, 2)
        assert order == ["first begins", "first ends", "second begins"]
        assert two.previous is None  # retired: no chain of old flights is kept
        assert flights.start("mona").previous is None

    asyncio.run(scenario())


def test_the_last_failure_is_told_again_then_held_back_then_forgotten() -> None:
    flights: Flights = SingleFlight()
    failure = ch.ServerError("down", code="server_error")
    flights.remember("octocat", failure, until=11.0, retry_at=70.0)
    told = flights.recall("octocat", 10.0)
    assert isinstance(told, ch.ServerError) and told.__cause__ is failure
    assert flights.recall("octocat", 11.0) is None  # its time is over
    assert flights.recall("mona", 10.0) is None  # another login's failure is not ours
    assert flights.backing_off("octocat", 69.9)
    assert not flights.backing_off("octocat", 70.0)
    assert not flights.backing_off("mona", 20.0)
    flights.remember("octocat", failure, until=11.0)
    assert flights.backing_off("octocat", 10.9) and not flights.backing_off("octocat", 11.0)
    flights.forget()
    assert flights.recall("octocat", 10.0) is None
    assert not flights.backing_off("octocat", 10.0)
