"""SessionResolver: one refresh in flight, in time, never stale and never foreign."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import copilot_host as ch
from copilot_host import (
    LoginChangedError,
    NotLoggedInError,
    ServerError,
    SessionResolver,
    TransportError,
)
from copilot_host._sessions._policy import RefreshPolicy
from tests._clock import FakeClock
from tests.sessions._hosts import (
    CountingHost,
    identity,
    make_session,
    prime,
)

THREADS = 64


def resolver_for(
    host: CountingHost, initial: ch.CopilotSession | None = None, **kwargs: object
) -> SessionResolver:
    resolver = SessionResolver(host, clock=host.clock, **kwargs)  # type: ignore[arg-type]
    if initial is not None:
        prime(resolver, host, initial)
    return resolver


def run_threads(n: int, target: Callable[[], object]) -> list[object]:
    """Start ``n`` threads through one barrier so they hit ``target`` together."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def worker(i: int) -> None:
        barrier.wait(10)
        try:
            results[i] = target()
        except BaseException as exc:  # recorded for the assertions
            results[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
        assert not t.is_alive()
    return results


def test_exports() -> None:
    assert ch.SessionResolver is SessionResolver


def test_first_get_exchanges_once_then_serves_the_same_session() -> None:
    host = CountingHost()
    r = resolver_for(host)
    first = r.get()
    before = host.availability_calls
    assert r.get() is first and r.get() is first
    assert host.exchanges == 1
    assert host.availability_calls == before + 2  # asked before every reuse


def test_the_same_login_in_a_new_object_keeps_the_session() -> None:
    # A host that reads its record again hands back an equal identity in a new object:
    # the session is the same, and it is the new object the next look compares with.
    from dataclasses import replace

    host = CountingHost()
    r = resolver_for(host)
    first = r.get()
    assert host.who is not None
    host.who = replace(host.who)
    assert r.get() is first
    assert host.exchanges == 1
    hot = r._core._hot
    assert hot is not None and hot[1] is host.who  # later looks decide with `is`
    assert r._core.hot(host.who) is first
    assert r._core.hot(replace(host.who, account="someone-else")) is None


def test_64_threads_on_an_expired_session_cause_exactly_one_exchange() -> None:
    host = CountingHost(gate=threading.Event())
    old = make_session(host.clock, host.who)  # type: ignore[arg-type]
    r = resolver_for(host, initial=old)
    host.clock.advance(1800)  # expired
    opener = threading.Timer(0.2, host.gate.set)  # type: ignore[union-attr]
    opener.start()
    results = run_threads(THREADS, r.get)
    opener.join()
    assert host.exchanges == 1
    new = host.issued[0]
    assert all(s is new for s in results)


def test_64_threads_in_the_mandatory_window_all_wait_for_one_exchange() -> None:
    host = CountingHost(gate=threading.Event())
    old = make_session(host.clock, host.who)  # type: ignore[arg-type]
    r = resolver_for(host, initial=old)
    host.clock.advance(1800 - 30)  # last minute: mandatory
    opener = threading.Timer(0.2, host.gate.set)  # type: ignore[union-attr]
    opener.start()
    results = run_threads(THREADS, r.get)
    opener.join()
    assert host.exchanges == 1
    assert all(s is host.issued[0] for s in results)
    assert not any(s is old for s in results)


def test_advisory_window_one_exchange_and_no_other_caller_blocked() -> None:
    host = CountingHost(gate=threading.Event())
    old = make_session(host.clock, host.who)  # type: ignore[arg-type]
    r = resolver_for(host, initial=old)
    host.clock.advance(1600)  # advisory
    leader_result: list[object] = []
    leader = threading.Thread(target=lambda: leader_result.append(r.get()))
    leader.start()
    assert host.entered.wait(5)
    # The gate is closed: the exchange is in flight. Every other caller returns at once.
    results = run_threads(THREADS - 1, r.get)
    assert all(s is old for s in results)
    assert leader.is_alive()  # only the caller that started the refresh waits
    host.gate.set()  # type: ignore[union-attr]
    leader.join(10)
    assert leader_result == [host.issued[0]]
    assert host.exchanges == 1
    assert r.get() is host.issued[0]


def test_failed_advisory_refresh_keeps_the_old_session_and_backs_off_30_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = CountingHost(failures=[TransportError("network down")])
    old = make_session(host.clock, host.who)  # type: ignore[arg-type]
    r = resolver_for(host, initial=old)
    host.clock.advance(1600)
    with caplog.at_level(logging.DEBUG, logger="copilot_host.session"):
        assert r.get() is old  # the leader falls back to the still-valid session
    assert host.exchanges == 1
    assert any("network_error" in rec.getMessage() for rec in caplog.records)
    assert any(rec.levelno == logging.WARNING for rec in caplog.records)
    host.clock.advance(29.9)
    for _ in range(100):
        assert r.get() is old
    assert host.exchanges == 1  # no attempt sooner than 30 s later
    host.clock.advance(0.2)
    new = r.get()
    assert host.exchanges == 2
    assert new is host.issued[0] and new is not old


def test_failed_advisory_refresh_is_retried_at_once_when_the_mandatory_window_arrives() -> None:
    host = CountingHost(failures=[TransportError("down"), TransportError("still down")])
    old = make_session(host.clock, host.who)  # type: ignore[arg-type]
    r = resolver_for(host, initial=old)
    host.clock.advance(1600)
    assert r.get() is old
    host.clock.advance(1800 - 1600 - 20)  # mandatory, within the 30 s back-off
    with pytest.raises(TransportError):
        r.get()  # mandatory: a failure raises
    assert host.exchanges == 2
    host.clock.advance(1)  # past the failure guard (one exchange per second at most)
    assert r.get() is host.issued[0]


def test_mandatory_failure_raises_for_every_waiter_then_the_next_call_succeeds() -> None:
    host = CountingHost(gate=threading.Event(), failures=[ServerError("HTTP 503")])
    r = resolver_for(host)
    opener = threading.Timer(0.2, host.gate.set)  # type: ignore[union-attr]
    opener.start()
    results = run_threads(16, r.get)
    opener.join()
    assert host.exchanges == 1
    assert all(isinstance(e, ServerError) and e.code == "server_error" for e in results)
    assert len({id(e) for e in results}) == 16  # each waiter raised its own copy
    host.clock.advance(1)  # past the failure guard (one exchange per second at most)
    session = r.get()
    assert host.exchanges == 2 and session is host.issued[0]


def test_failures_cost_at_most_one_exchange_per_interval() -> None:
    host = CountingHost(failures=[ServerError("HTTP 503")])
    r = resolver_for(host)
    with pytest.raises(ServerError):
        r.get()
    for _ in range(50):  # a burst of requests while GitHub is failing
        with pytest.raises(ServerError):
            r.get()
    assert host.exchanges == 1
    host.clock.advance(0.99)
    with pytest.raises(ServerError):
        r.get()
    assert host.exchanges == 1
    host.clock.advance(0.02)
    assert r.get() is host.issued[0]
    assert host.exchanges == 2


def test_an_invalidation_lifts_the_failure_guard() -> None:
    host = CountingHost(failures=[ServerError("HTTP 503")])
    r = resolver_for(host)
    with pytest.raises(ServerError):
        r.get()
    r.invalidate()  # e.g. the person logged in again: try at once
    assert r.get() is host.issued[0]


def test_exchange_failure_with_no_session_raises_and_leaves_none() -> None:
    host = CountingHost(failures=[TransportError("down")])
    r = resolver_for(host)
    with pytest.raises(TransportError):
        r.get()
    assert "no session" in repr(r)


def test_explicit_refresh_discards_the_old_session_even_when_it_fails() -> None:
    host = CountingHost()
    r = resolver_for(host)
    old = r.get()
    host.failures.append(ServerError("HTTP 502"))
    with pytest.raises(ServerError):
        r.refresh()
    new = r.get()  # the old one is never served again
    assert new is not old
    assert host.exchanges == 3


def test_explicit_refresh_returns_a_new_session() -> None:
    host = CountingHost()
    r = resolver_for(host)
    old = r.get()
    new = r.refresh()
    assert new is not old and r.get() is new
    assert host.exchanges == 2


def test_interrupted_leader_does_not_strand_the_waiters() -> None:
    class Interrupted(BaseException):
        pass

    host = CountingHost(gate=threading.Event(), failures=[Interrupted()])
    r = resolver_for(host)
    opener = threading.Timer(0.2, host.gate.set)  # type: ignore[union-attr]
    opener.start()
    results = run_threads(8, r.get)
    opener.join()
    interrupted = [x for x in results if isinstance(x, Interrupted)]
    assert len(interrupted) == 1  # only the leader sees its own interruption
    sessions = [x for x in results if not isinstance(x, BaseException)]
    assert len(sessions) == 7 and all(s is host.issued[0] for s in sessions)
    assert host.exchanges == 2


def test_invalidate_racing_a_refresh_discards_the_refresh_result() -> None:
    host = CountingHost(gate=threading.Event())
    r = resolver_for(host)
    got: list[object] = []
    caller = threading.Thread(target=lambda: got.append(r.get()))
    caller.start()
    assert host.entered.wait(5)
    r.invalidate()  # while the exchange is in flight
    host.gate.set()  # type: ignore[union-attr]
    caller.join(10)
    assert host.exchanges == 2  # the first result was discarded; the caller planned again
    first, second = host.issued
    assert got == [second]
    assert r.get() is second
    for _ in range(10):
        assert r.get() is not first


def test_invalidate_racing_an_explicit_refresh() -> None:
    host = CountingHost()
    r = resolver_for(host)
    r.get()
    host.gate = threading.Event()
    host.entered.clear()
    got: list[object] = []
    caller = threading.Thread(target=lambda: got.append(r.refresh()))
    caller.start()
    assert host.entered.wait(5)
    r.invalidate()
    host.gate.set()
    caller.join(10)
    assert host.exchanges == 3
    assert got == [host.issued[2]]
    assert r.get() is host.issued[2]


def test_invalidate_with_a_replaced_session_keeps_the_new_one() -> None:
    host = CountingHost()
    r = resolver_for(host)
    old = r.get()
    new = r.refresh()
    r.invalidate(old)  # a late 401 for the old session
    assert r.get() is new
    r.invalidate(new)
    assert r.get() is not new
    assert host.exchanges == 3


def test_exchanges_never_overlap_even_across_invalidations() -> None:
    host = CountingHost(gate=threading.Event())
    active = 0
    peak = 0
    lock = threading.Lock()
    inner = host.exchange

    def exchange(identity: ch.LoginIdentity) -> ch.CopilotSession:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        try:
            return inner(identity)
        finally:
            with lock:
                active -= 1

    host.exchange = exchange  # type: ignore[method-assign]
    r = resolver_for(host)
    caller = threading.Thread(target=r.get)
    caller.start()
    assert host.entered.wait(5)
    refresher = threading.Thread(target=r.refresh)
    refresher.start()
    threading.Timer(0.2, host.gate.set).start()  # type: ignore[union-attr]
    caller.join(10)
    refresher.join(10)
    assert peak == 1


def test_availability_flipping_to_another_login_never_returns_the_old_session() -> None:
    host = CountingHost()
    r = resolver_for(host)
    first_login = host.who
    old = r.get()
    host.who = identity("someone-else")
    new = r.get()
    assert new is not old
    assert new.identity == host.who and new.identity != first_login
    assert host.exchanges == 2


def test_availability_flipping_during_an_exchange_never_returns_the_old_login() -> None:
    host = CountingHost(gate=threading.Event())
    r = resolver_for(host)
    a = host.who
    got: list[object] = []
    caller = threading.Thread(target=lambda: got.append(r.get()))
    caller.start()
    assert host.entered.wait(5)
    b = identity("b")
    host.who = b  # the person logged in as someone else while A's exchange was out
    host.gate.set()  # type: ignore[union-attr]
    caller.join(10)
    session = got[0]
    assert isinstance(session, ch.CopilotSession)
    assert session.identity == b
    assert r.get().identity == b
    assert all(s.identity != a for s in [r.get() for _ in range(5)])


def test_logout_drops_the_session_and_raises() -> None:
    host = CountingHost()
    r = resolver_for(host)
    old = r.get()
    host.who = None
    with pytest.raises(NotLoggedInError) as info:
        r.get()
    assert info.value.code == "not_logged_in"
    host.who = old.identity  # even the same login coming back gets a new session
    assert r.get() is not old


def test_a_session_for_another_login_than_asked_is_refused() -> None:
    host = CountingHost()
    r = resolver_for(host)
    asked = host.who
    other = identity("x")
    host.exchange = lambda identity: make_session(host.clock, other)  # type: ignore[method-assign]
    with pytest.raises(LoginChangedError):
        r.get()
    assert asked is host.who


def test_refresh_storm_is_bounded_with_ten_second_tokens() -> None:
    host = CountingHost(lifetime=10.0, refresh_in=None)
    r = resolver_for(host)
    for _ in range(6000):  # one minute of fake time, a call every 10 ms
        r.get()
        host.clock.advance(0.01)
    # Refreshed at half the lifetime: about 12 a minute, never one per request.
    assert 10 <= host.exchanges <= 13


def test_refresh_storm_is_bounded_with_tokens_dead_on_arrival() -> None:
    host = CountingHost(lifetime=0.0, refresh_in=None)
    r = resolver_for(host)
    for _ in range(6000):
        r.get()
        host.clock.advance(0.01)
    assert host.exchanges <= 61  # at most one per min_refresh_interval (1 s)


def test_a_wall_clock_jump_after_suspend_forces_a_refresh() -> None:
    host = CountingHost()
    r = resolver_for(host)
    old = r.get()
    host.clock.wall += 4 * 3600  # suspended: the monotonic clock stood still
    new = r.get()
    assert new is not old and host.exchanges == 2


def test_min_refresh_interval_is_a_policy_parameter() -> None:
    host = CountingHost(lifetime=0.0, refresh_in=None)
    r = resolver_for(host, policy=RefreshPolicy(min_refresh_interval=0.0))
    for _ in range(5):
        r.get()
    assert host.exchanges == 5


def test_threads_racing_get_refresh_invalidate_and_login_changes_never_get_a_foreign_session() -> (
    None
):
    clock = FakeClock()
    host = CountingHost(clock=clock, lifetime=20.0, refresh_in=None)
    r = resolver_for(host)
    history = [host.who]  # every login that was ever current, in order
    stop = threading.Event()
    bad: list[str] = []

    def user(i: int) -> None:
        n = 0
        while not stop.is_set() and n < 300:
            n += 1
            start = max(len(history) - 2, 0)
            try:
                s = r.refresh() if n % 50 == i else r.get()
            except NotLoggedInError:
                continue
            except ch.SessionError as exc:
                # Invalidated again and again while it was being obtained (eight threads
                # invalidating on purpose, on a loaded machine): a typed, retryable refusal
                # is a correct answer here; a foreign session never is.
                if not (exc.code == "refresh_failed" and exc.retryable):
                    bad.append(f"an unexpected error: {exc!r}")
                continue
            current_during_call = history[start:]
            if not any(s.identity is who for who in current_during_call):
                bad.append("a session for a login that was not current during the call")
            if n % 7 == 0:
                r.invalidate()

    def flipper() -> None:
        for k in range(200):
            who = None if k % 17 == 16 else identity(f"login-{k}")
            host.who = who
            history.append(who)
            clock.advance(0.3)
        stop.set()

    with ThreadPoolExecutor(9) as pool:
        futures = [pool.submit(user, i) for i in range(8)]
        futures.append(pool.submit(flipper))
        for f in futures:
            f.result(timeout=30)
    assert bad == []
    assert host.exchanges > 1


def test_no_login_is_said_in_the_hosts_words_never_a_cli_command() -> None:
    """The core knows no CLI: without a hint of the host's own, it names the host's class."""
    host = CountingHost(who=None)
    with pytest.raises(ch.NotLoggedInError) as caught:
        SessionResolver(host, clock=host.clock).get()
    assert caught.value.message == "not logged in: CountingHost has no login"

    class Hinting(CountingHost):
        login_hint = "open Settings > Accounts to sign in"

    hinting = Hinting(who=None)
    with pytest.raises(ch.NotLoggedInError) as caught:
        SessionResolver(hinting, clock=hinting.clock).get()
    assert caught.value.message == "not logged in: open Settings > Accounts to sign in"
