"""The refresh policy at its edges, with fake monotonic and wall clocks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host import CopilotSession, Secret
from copilot_host._sessions._policy import (
    ADVISORY_LEAD,
    MANDATORY_LEAD,
    MAX_LIFETIME,
    RefreshPolicy,
    SessionState,
    deadlines_from_exchange,
)
from tests._clock import FakeClock
from tests.sessions._hosts import ENDPOINT, ORIGIN, canary, identity, make_session

FRESH, ADVISORY, MANDATORY, EXPIRED = (
    SessionState.FRESH,
    SessionState.ADVISORY,
    SessionState.MANDATORY,
    SessionState.EXPIRED,
)


def test_public_names_are_exported_lazily() -> None:
    assert ch.RefreshPolicy is RefreshPolicy
    assert ch.SessionState is SessionState


# -- deadlines from an exchange answer --------------------------------------------------------


def test_deadlines_use_refresh_in_when_it_is_earlier() -> None:
    refresh, expires, wall = deadlines_from_exchange(
        received_monotonic=100.0,
        received_wall=1_000_000.0,
        expires_at=1_001_800.0,
        refresh_in=1500.0,
        server_date=None,
    )
    assert (refresh, expires, wall) == (1600.0, 1900.0, 1_001_800.0)


def _in_force(
    policy: RefreshPolicy, refresh: float, expires: float, wall: float, received: float = 0.0
) -> tuple[float, float]:
    """(refresh, expiry) on the monotonic clock, as ``policy`` decides them for a session
    with these times."""
    session = CopilotSession(
        token=Secret(canary()),
        identity=identity(),
        endpoint=ENDPOINT,
        received_monotonic=received,
        refresh_monotonic=refresh,
        expires_monotonic=expires,
        expires_wall=wall,
    )
    return policy.fresh_until(session)[0], policy.expiry(session)[0]


DEFAULT = RefreshPolicy()


def test_deadlines_open_the_advisory_window_300s_before_expiry_without_refresh_in() -> None:
    times = deadlines_from_exchange(
        received_monotonic=0.0,
        received_wall=0.0,
        expires_at=1800.0,
        refresh_in=None,
        server_date=None,
    )
    refresh, expires = _in_force(DEFAULT, *times)
    assert expires - refresh == ADVISORY_LEAD


def test_the_policy_in_force_decides_the_refresh_not_the_one_at_parse_time() -> None:
    """A policy with a shorter advisory window refreshes later than the default would:
    the window is decided when the session is used, by the resolver's policy."""
    times = deadlines_from_exchange(
        received_monotonic=0.0,
        received_wall=0.0,
        expires_at=1800.0,
        refresh_in=None,
        server_date=None,
    )
    late = RefreshPolicy(advisory_lead=60.0, mandatory_lead=30.0)
    assert _in_force(late, *times) == (1740.0, 1800.0)
    assert _in_force(DEFAULT, *times) == (1800.0 - ADVISORY_LEAD, 1800.0)


def test_refresh_in_later_than_the_window_does_not_delay_the_refresh() -> None:
    times = deadlines_from_exchange(
        received_monotonic=0.0,
        received_wall=0.0,
        expires_at=1800.0,
        refresh_in=5000.0,
        server_date=None,
    )
    assert _in_force(DEFAULT, *times) == (1500.0, 1800.0)


def test_short_tokens_cap_the_advisory_window_at_half_the_lifetime() -> None:
    times = deadlines_from_exchange(
        received_monotonic=10.0,
        received_wall=50.0,
        expires_at=60.0,
        refresh_in=None,
        server_date=None,
    )
    assert _in_force(DEFAULT, *times, received=10.0) == (15.0, 20.0)


def test_a_server_clock_far_ahead_does_not_change_the_lifetime() -> None:
    local = 1_700_000_000.0
    server = local + 3 * 86400  # three days ahead
    refresh, expires, wall = deadlines_from_exchange(
        received_monotonic=500.0,
        received_wall=local,
        expires_at=server + 1800.0,
        refresh_in=1500.0,
        server_date=server,
    )
    assert (refresh, expires) == (2000.0, 2300.0)
    # The wall expiry is in local time: receipt plus the lifetime the server meant.
    assert wall == local + 1800.0


def test_a_server_clock_far_behind_does_not_make_the_token_dead_on_arrival() -> None:
    local = 1_700_000_000.0
    server = local - 7200
    _, expires, _ = deadlines_from_exchange(
        received_monotonic=0.0,
        received_wall=local,
        expires_at=server + 1800.0,
        refresh_in=None,
        server_date=server,
    )
    assert expires == 1800.0


def test_without_a_server_date_an_absurd_lifetime_is_clamped() -> None:
    local = 1_700_000_000.0
    times = deadlines_from_exchange(
        received_monotonic=0.0,
        received_wall=local,
        expires_at=local + 10 * 365 * 86400,
        refresh_in=None,
        server_date=None,
    )
    _, expires = _in_force(DEFAULT, *times)
    assert expires == MAX_LIFETIME
    clamped = CopilotSession(
        token=Secret(canary()),
        identity=identity(),
        endpoint=ENDPOINT,
        received_monotonic=0.0,
        refresh_monotonic=times[0],
        expires_monotonic=times[1],
        expires_wall=times[2],
    )
    assert DEFAULT.expiry(clamped)[1] == local + MAX_LIFETIME


def test_an_expiry_in_the_past_gives_an_expired_session() -> None:
    refresh, expires, _ = deadlines_from_exchange(
        received_monotonic=7.0,
        received_wall=1000.0,
        expires_at=900.0,
        refresh_in=-5.0,
        server_date=None,
    )
    assert refresh == expires == 7.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        deadlines_from_exchange(
            received_monotonic=0.0,
            received_wall=0.0,
            expires_at=bad,
            refresh_in=None,
            server_date=None,
        )


# -- states ------------------------------------------------------------------------------------


def session_at(
    clock: FakeClock, lifetime: float = 1800.0, refresh_in: float | None = 1500.0
) -> CopilotSession:
    return make_session(clock, identity(), lifetime=lifetime, refresh_in=refresh_in)


def test_state_edges_of_a_thirty_minute_token() -> None:
    clock = FakeClock()
    s = session_at(clock)
    policy = RefreshPolicy()
    t0 = clock.now

    def at(dt: float) -> SessionState:
        return policy.state(s, t0 + dt, clock.wall + dt)

    assert at(0) is FRESH
    assert at(1499.999) is FRESH
    assert at(1500.0) is ADVISORY  # refresh_in
    assert at(1800 - MANDATORY_LEAD - 0.001) is ADVISORY
    assert at(1800 - MANDATORY_LEAD) is MANDATORY
    assert at(1799.999) is MANDATORY
    assert at(1800.0) is EXPIRED
    assert at(10**6) is EXPIRED


def test_the_policy_window_applies_even_when_a_host_sets_refresh_at_at_expiry() -> None:
    clock = FakeClock()
    s = session_at(clock, refresh_in=None)  # refresh_at == expires_at
    assert RefreshPolicy().state(s, clock.now + 1800 - ADVISORY_LEAD) is ADVISORY


def test_ten_second_token_windows() -> None:
    clock = FakeClock()
    s = session_at(clock, lifetime=10.0, refresh_in=None)
    policy = RefreshPolicy()
    assert policy.state(s, clock.now + 4.9) is FRESH
    assert policy.state(s, clock.now + 5.0) is ADVISORY  # half the lifetime
    assert policy.state(s, clock.now + 8.9) is ADVISORY
    assert policy.state(s, clock.now + 9.0) is MANDATORY  # a tenth of the lifetime
    assert policy.state(s, clock.now + 10.0) is EXPIRED


def test_a_wall_clock_jump_forward_as_after_a_suspend_expires_the_session() -> None:
    # On Linux the monotonic clock stands still while suspended; the wall clock does not.
    clock = FakeClock()
    s = session_at(clock)
    policy = RefreshPolicy()
    assert policy.state(s, clock.now + 10, clock.wall + 10) is FRESH
    assert policy.state(s, clock.now + 10, clock.wall + 3600) is EXPIRED
    assert policy.state(s, clock.now + 10, clock.wall + 1600) is ADVISORY


def test_a_wall_clock_jump_backward_does_not_revive_a_dead_session() -> None:
    clock = FakeClock()
    s = session_at(clock)
    policy = RefreshPolicy()
    assert policy.state(s, clock.now + 1800, clock.wall - 86400) is EXPIRED
    assert policy.state(s, clock.now + 1500, clock.wall - 86400) is ADVISORY


def test_without_a_wall_reading_the_monotonic_clock_decides() -> None:
    clock = FakeClock()
    s = session_at(clock)
    assert RefreshPolicy().state(s, clock.now + 100) is FRESH


@pytest.mark.parametrize(
    "kwargs",
    [
        {"advisory_lead": -1.0},
        {"mandatory_max_fraction": 1.5},
        {"advisory_max_fraction": math.nan},
        {"mandatory_lead": 400.0},  # longer than the advisory lead
        {"min_refresh_interval": math.inf},
    ],
)
def test_policy_refuses_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RefreshPolicy(**kwargs)


lifetimes = st.floats(min_value=0.0, max_value=MAX_LIFETIME, allow_nan=False)
offsets = st.floats(min_value=-10.0, max_value=2 * MAX_LIFETIME, allow_nan=False)
severity = {FRESH: 0, ADVISORY: 1, MANDATORY: 2, EXPIRED: 3}


@given(lifetime=lifetimes, refresh_in=st.none() | lifetimes, a=offsets, b=offsets, skew=offsets)
def test_state_only_gets_worse_as_time_passes(
    lifetime: float, refresh_in: float | None, a: float, b: float, skew: float
) -> None:
    clock = FakeClock()
    refresh, expires, wall = deadlines_from_exchange(
        received_monotonic=clock.now,
        received_wall=clock.wall,
        expires_at=clock.wall + lifetime,
        refresh_in=refresh_in,
        server_date=None,
    )
    s = CopilotSession(
        token=Secret(canary()),
        identity=identity(),
        endpoint=ENDPOINT,
        received_monotonic=clock.now,
        refresh_monotonic=refresh,
        expires_monotonic=expires,
        expires_wall=wall,
    )
    assert clock.now <= s.refresh_monotonic <= s.expires_monotonic
    policy = RefreshPolicy()
    early, late = sorted((a, b))
    s1 = policy.state(s, clock.now + early, clock.wall + early)
    s2 = policy.state(s, clock.now + late, clock.wall + late)
    assert severity[s1] <= severity[s2]
    # A wall clock ahead of the monotonic one can only make things look worse, never better.
    s3 = policy.state(s, clock.now + early, clock.wall + early + abs(skew))
    assert severity[s3] >= severity[s1]


@given(lifetime=lifetimes, refresh_in=st.none() | lifetimes, dt=offsets, dw=offsets)
def test_fresh_until_agrees_with_state(
    lifetime: float, refresh_in: float | None, dt: float, dw: float
) -> None:
    clock = FakeClock()
    s = make_session(clock, identity(), lifetime=lifetime, refresh_in=refresh_in)
    policy = RefreshPolicy()
    mono, wall = policy.fresh_until(s)
    now, now_wall = clock.now + dt, clock.wall + dw
    assert (policy.state(s, now, now_wall) is FRESH) == (now < mono and now_wall < wall)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_register_models_takes_the_policy_its_routes_follow(kind: str) -> None:
    import asyncio

    import httpx2

    from tests.sessions._hosts import AsyncCountingHost, CountingHost

    host = CountingHost(lifetime=1800.0, refresh_in=None)
    late = RefreshPolicy(advisory_lead=60.0, mandatory_lead=30.0)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={})

    async def send(auth: httpx2.Auth) -> None:
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(answer)) as c:
            await c.post(ORIGIN + "/chat/completions", json={"model": "gpt-4o"})

    if kind == "sync":
        route = ch.register_models(ch.Catalog(), host, clock=host.clock, policy=late).routes[0]
    else:
        async_host = AsyncCountingHost(host)
        result = asyncio.run(
            ch.aregister_models(ch.Catalog(), async_host, clock=host.clock, policy=late)
        )
        route = result.routes[0]
    # 1500 s in: the default policy would be refreshing (its window opens at 1500 s); this
    # one keeps the session until 1740 s.
    host.clock.advance(1600.0)
    asyncio.run(send(route.auth))
    assert host.exchanges == 1
    host.clock.advance(200.0)
    asyncio.run(send(route.auth))
    assert host.exchanges == 2
