"""CopilotAuth through real httpx2 clients over MockTransport."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import httpx2
import pytest

import copilot_host as ch
from copilot_host import (
    AsyncSessionResolver,
    CopilotAuth,
    OriginError,
    SessionResolver,
)
from tests._frames import locals_text
from tests.sessions._hosts import (
    ENDPOINT,
    ORIGIN,
    OTHER_ENDPOINT,
    AsyncCountingHost,
    CountingHost,
    prime,
)

CHAT = ORIGIN + "/chat/completions"


class Recorder:
    """A MockTransport handler that records what reached the 'server'."""

    def __init__(self, statuses: Callable[[int], int] = lambda n: 200) -> None:
        self.requests: list[httpx2.Request] = []
        self.bodies: list[bytes] = []
        # Recorded at arrival: a retry resends the same Request object with new headers.
        self.bearers: list[str | None] = []
        self._statuses = statuses

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        self.bodies.append(request.read())
        self.bearers.append(request.headers.get("authorization"))
        return httpx2.Response(self._statuses(len(self.requests)), json={"ok": True})


def sync_auth(host: CountingHost | None = None) -> tuple[CopilotAuth, CountingHost]:
    host = host or CountingHost()
    resolver = SessionResolver(host, clock=host.clock)
    return CopilotAuth(resolver, ENDPOINT, host.request_headers()), host


def async_auth(host: CountingHost | None = None) -> tuple[CopilotAuth, CountingHost]:
    inner = host or CountingHost()
    resolver = AsyncSessionResolver(AsyncCountingHost(inner), clock=inner.clock)
    return CopilotAuth(resolver, ENDPOINT, inner.request_headers()), inner


def cached(auth: CopilotAuth, host: CountingHost) -> None:
    """Give the auth a session from the cache: exchanged (uncounted) two seconds ago, so the
    one-exchange-per-second bound does not hold back a retry."""
    prime(auth._resolver, host, host._mint(host.who))  # type: ignore[arg-type]
    host.clock.advance(2.0)


def bearer_of(host: CountingHost, i: int) -> str:
    return "Bearer " + host.issued[i].token.reveal()


def test_exports() -> None:
    assert ch.CopilotAuth is CopilotAuth


# -- the bearer and headers --------------------------------------------------------------------


def test_sets_the_bearer_and_editor_headers_replacing_a_client_authorization() -> None:
    auth, host = sync_auth()
    rec = Recorder()
    with httpx2.Client(
        auth=auth,
        transport=httpx2.MockTransport(rec),
        headers={"Authorization": "Bearer sdk-placeholder-key"},
    ) as client:
        response = client.post(CHAT, json={"model": "gpt-4o"})
    assert response.status_code == 200
    sent = rec.requests[0]
    assert sent.headers.get_list("authorization") == [bearer_of(host, 0)]
    assert sent.headers["editor-version"] == "tests/1.0"
    assert sent.headers["copilot-integration-id"] == "tests"
    assert "sdk-placeholder-key" not in str(sent.headers.raw)
    # httpx2 masks the bearer in reprs.
    assert host.issued[0].token.reveal() not in repr(sent.headers)


def test_a_per_request_authorization_is_replaced_too() -> None:
    auth, host = sync_auth()
    rec = Recorder()
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        client.get(ORIGIN + "/models", headers={"authorization": "token not-this-one"})
    assert rec.bearers == [bearer_of(host, 0)]


def test_warm_requests_reuse_the_session() -> None:
    auth, host = sync_auth()
    rec = Recorder()
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        for _ in range(20):
            client.get(ORIGIN + "/models")
    assert host.exchanges == 1
    assert set(rec.bearers) == {bearer_of(host, 0)}


@pytest.mark.parametrize("name", ["Authorization", "Copilot-Vision-Request", "X-Initiator"])
def test_a_host_may_not_fix_headers_the_auth_decides(name: str) -> None:
    host = CountingHost()
    resolver = SessionResolver(host, clock=host.clock)
    with pytest.raises(ValueError):
        CopilotAuth(resolver, ENDPOINT, {name: "x"})


def test_a_session_naming_another_endpoint_is_never_sent_and_says_register_again() -> None:
    """The account moved to another inference host: routes for the old one refuse."""
    auth, _host = sync_auth(CountingHost(endpoint=OTHER_ENDPOINT))
    rec = Recorder()
    with (
        httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client,
        pytest.raises(OriginError) as info,
    ):
        client.post(CHAT, json={})
    assert info.value.code == "origin_mismatch"
    assert "register the models again" in info.value.message
    assert rec.requests == []


# -- 401 ---------------------------------------------------------------------------------------


def test_401_once_re_exchanges_and_one_retry_succeeds_with_the_same_body() -> None:
    auth, host = sync_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401 if n == 1 else 200)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        response = client.post(CHAT, json={"messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 200
    assert len(rec.requests) == 2
    assert host.exchanges == 1
    assert rec.bearers == [bearer_of(host, 0), bearer_of(host, 1)]
    assert rec.bodies[0] == rec.bodies[1] and b"hi" in rec.bodies[1]


def test_a_401_on_a_session_exchanged_for_this_request_is_the_answer() -> None:
    """No exchange storm: the session is brand new, so a 401 is not about its age."""
    auth, host = sync_auth()
    rec = Recorder(lambda n: 401)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        assert client.post(CHAT, json={}).status_code == 401
    assert len(rec.requests) == 1
    assert host.exchanges == 1


def test_a_401_storm_costs_about_one_exchange_per_second() -> None:
    """An outage or a proxy answering 401 to everything: 100 requests over 0.2 s make one
    exchange, and the callers get the 401, not a new exchange each."""
    auth, host = sync_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        statuses = []
        for _ in range(100):
            statuses.append(client.get(ORIGIN + "/models").status_code)
            host.clock.advance(0.002)
        assert statuses == [401] * 100
        assert host.exchanges == 1
        assert len(rec.requests) == 101  # one retry, for the first request only
        for _ in range(5):  # a second later, one more exchange is allowed, and only one
            host.clock.advance(0.5)
            client.get(ORIGIN + "/models")
    assert host.exchanges == 3


def test_a_401_storm_from_many_threads_is_bounded_too() -> None:
    auth, host = sync_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        barrier = threading.Barrier(32)

        def call() -> None:
            barrier.wait(5)
            for _ in range(10):
                client.get(ORIGIN + "/models")

        threads = [threading.Thread(target=call) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    assert host.exchanges == 1


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_403_on_a_cached_session_is_handled_like_a_401(kind: str) -> None:
    """The enterprise host answers an expired session with a bare 403."""
    auth, host = sync_auth() if kind == "sync" else async_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 403 if n == 1 else 200)
    if kind == "sync":
        with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
            status = client.post(CHAT, json={}).status_code
    else:

        async def main() -> int:
            async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(rec)) as c:
                return (await c.post(CHAT, json={})).status_code

        status = asyncio.run(main())
    assert status == 200
    assert rec.bearers == [bearer_of(host, 0), bearer_of(host, 1)]
    assert host.exchanges == 1


def test_a_403_on_a_session_exchanged_for_this_request_is_returned_as_it_is() -> None:
    auth, host = sync_auth()
    rec = Recorder(lambda n: 403)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        assert client.post(CHAT, json={}).status_code == 403
        host.clock.advance(5.0)  # even when the answer came slowly
        assert client.post(CHAT, json={}).status_code == 403
    # The second request's session came from the cache: one retry with a new exchange.
    assert host.exchanges == 2
    assert len(rec.requests) == 3


def test_401_once_with_a_streaming_body_is_retried_with_the_whole_body() -> None:
    auth, host = sync_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401 if n == 1 else 200)

    def body() -> Iterator[bytes]:
        yield b"part one, "
        yield b"part two"

    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        response = client.post(CHAT, content=body())
    assert response.status_code == 200
    assert rec.bodies == [b"part one, part two"] * 2


def test_401_always_returns_the_401_after_exactly_two_attempts() -> None:
    auth, host = sync_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        response = client.post(CHAT, json={})
    assert response.status_code == 401
    assert len(rec.requests) == 2
    assert host.exchanges == 1


def test_concurrent_401s_for_one_session_cost_one_re_exchange() -> None:
    auth, host = sync_auth()
    first_session_seen = threading.Event()

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.headers["authorization"] == bearer_of(host, 0):
            first_session_seen.set()
            return httpx2.Response(401)
        return httpx2.Response(200)

    cached(auth, host)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(handler)) as client:
        client.get(ORIGIN + "/models")  # warm: first session, 401, second session
        assert host.exchanges == 1
        host.exchanges = 0
        barrier = threading.Barrier(16)
        statuses: list[int] = []

        def call() -> None:
            barrier.wait(5)
            statuses.append(client.get(ORIGIN + "/models").status_code)

        threads = [threading.Thread(target=call) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert statuses == [200] * 16
    assert host.exchanges == 0  # the second session was never thrown away


def test_late_401s_do_not_discard_a_newer_session() -> None:
    auth, host = sync_auth()
    resolver = auth._resolver
    assert isinstance(resolver, SessionResolver)
    old = resolver.get()
    new = resolver.refresh()
    calls = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        return httpx2.Response(200)

    # A 401 for the old session arriving now (through the auth's own path) keeps the new.
    resolver.invalidate(old)
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(handler)) as client:
        client.get(ORIGIN + "/models")
    assert resolver.get() is new
    assert host.exchanges == 2


# -- the origin fence --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/chat/completions",
        "https://api.githubcopilot.com/chat/completions",  # another allowlisted origin
        "http://api.individual.githubcopilot.com/chat/completions",  # downgraded scheme
        "https://api.individual.githubcopilot.com:8443/chat/completions",  # another port
        "https://api.individual.githubcopilot.com.evil.example/x",
    ],
)
def test_requests_for_any_other_origin_are_refused_before_anything_is_sent(url: str) -> None:
    auth, host = sync_auth()
    rec = Recorder()
    with (
        httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client,
        pytest.raises(OriginError) as info,
    ):
        client.get(url)
    assert info.value.code == "origin_mismatch"
    assert rec.requests == []
    assert host.exchanges == 0  # not even a session was fetched


def test_the_default_port_spelled_out_is_the_same_origin() -> None:
    auth, _ = sync_auth()
    rec = Recorder()
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        assert client.get("https://API.Individual.GitHubCopilot.com:443/models").status_code == 200


def _redirecting_away(seen: list[httpx2.Request]) -> Callable[[httpx2.Request], httpx2.Response]:
    """The Copilot origin answers with a redirect to a collector; the collector says 200."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.url.host == "api.individual.githubcopilot.com":
            return httpx2.Response(307, headers={"Location": "https://collector.example/steal"})
        return httpx2.Response(200)

    return handler


def test_a_redirect_away_from_the_origin_never_carries_the_bearer_and_is_refused() -> None:
    auth, host = sync_auth()
    seen: list[httpx2.Request] = []

    handler = _redirecting_away(seen)

    with (
        httpx2.Client(
            auth=auth, transport=httpx2.MockTransport(handler), follow_redirects=True
        ) as client,
        pytest.raises(OriginError),
    ):
        client.post(CHAT, json={})
    assert [r.url.host for r in seen] == ["api.individual.githubcopilot.com", "collector.example"]
    assert "authorization" not in seen[1].headers
    token = host.issued[0].token.reveal()
    assert all(token not in str(v) for v in seen[1].headers.values())


def test_the_origin_guard_stops_a_redirect_before_anything_is_sent() -> None:
    auth, _host = sync_auth()
    seen: list[httpx2.Request] = []

    handler = _redirecting_away(seen)

    with (
        httpx2.Client(
            auth=auth,
            transport=httpx2.MockTransport(handler),
            follow_redirects=True,
            event_hooks={"request": [auth.origin_guard]},
        ) as client,
        pytest.raises(OriginError),
    ):
        client.post(CHAT, json={"prompt": "private"})
    assert [r.url.host for r in seen] == ["api.individual.githubcopilot.com"]


def test_the_async_origin_guard_stops_a_redirect_before_anything_is_sent() -> None:
    auth, _host = sync_auth()
    seen: list[httpx2.Request] = []
    sync_handler = _redirecting_away(seen)

    async def handler(request: httpx2.Request) -> httpx2.Response:
        return sync_handler(request)

    async def main() -> None:
        async with httpx2.AsyncClient(
            auth=auth,
            transport=httpx2.MockTransport(handler),
            follow_redirects=True,
            event_hooks={"request": [auth.async_origin_guard]},
        ) as client:
            with pytest.raises(OriginError):
                await client.post(CHAT, json={"prompt": "private"})

    asyncio.run(main())
    assert [r.url.host for r in seen] == ["api.individual.githubcopilot.com"]


def test_a_same_origin_redirect_is_followed() -> None:
    auth, host = sync_auth()
    rec_paths: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        rec_paths.append(request.url.path)
        if request.url.path == "/old":
            return httpx2.Response(308, headers={"Location": "/new"})
        assert request.headers["authorization"] == bearer_of(host, 0)
        return httpx2.Response(200)

    with httpx2.Client(
        auth=auth, transport=httpx2.MockTransport(handler), follow_redirects=True
    ) as client:
        assert client.get(ORIGIN + "/old").status_code == 200
    assert rec_paths == ["/old", "/new"]


# -- AsyncClient, and the cross combinations ---------------------------------------------------


def test_async_client_with_an_async_resolver_and_a_401_retry() -> None:
    auth, host = async_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401 if n == 1 else 200)

    async def main() -> httpx2.Response:
        async with httpx2.AsyncClient(
            auth=auth,
            transport=httpx2.MockTransport(rec),
            headers={"Authorization": "Bearer placeholder"},
        ) as client:
            return await client.post(CHAT, json={"q": 1})

    response = asyncio.run(main())
    assert response.status_code == 200
    assert rec.bearers == [bearer_of(host, 0), bearer_of(host, 1)]
    assert rec.bodies[0] == rec.bodies[1]


def test_async_client_401_always_two_attempts() -> None:
    auth, host = async_auth()
    cached(auth, host)
    rec = Recorder(lambda n: 401)

    async def main() -> int:
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(rec)) as client:
            return (await client.get(ORIGIN + "/models")).status_code

    assert asyncio.run(main()) == 401
    assert len(rec.requests) == 2 and host.exchanges == 1


def test_async_client_refuses_other_origins() -> None:
    auth, _ = async_auth()
    rec = Recorder()

    async def main() -> None:
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(rec)) as client:
            await client.get("https://elsewhere.example/")

    with pytest.raises(OriginError):
        asyncio.run(main())
    assert rec.requests == []


def test_a_blocking_resolver_in_an_async_client_exchanges_off_the_loop_only() -> None:
    host = CountingHost()
    exchange_threads: list[int] = []
    availability_threads: list[int] = []
    exchange, availability = host.exchange, host.availability

    def tracked_exchange(identity: ch.LoginIdentity) -> ch.CopilotSession:
        exchange_threads.append(threading.get_ident())
        return exchange(identity)

    def tracked_availability() -> ch.LoginIdentity | None:
        availability_threads.append(threading.get_ident())
        return availability()

    host.exchange = tracked_exchange  # type: ignore[method-assign]
    host.availability = tracked_availability  # type: ignore[method-assign]
    auth, _ = sync_auth(host)
    rec = Recorder()

    async def main() -> int:
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(rec)) as client:
            await client.get(ORIGIN + "/models")
            availability_threads.clear()
            for _ in range(5):
                await client.get(ORIGIN + "/models")
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert exchange_threads and all(t != loop_thread for t in exchange_threads)
    # Warm requests stay on the loop: no thread hop for a usable session.
    assert availability_threads == [loop_thread] * 5
    assert host.exchanges == 1
    assert set(rec.bearers) == {bearer_of(host, 0)}


@pytest.mark.parametrize("warm", [False, True])
def test_an_async_hosts_routes_refuse_a_blocking_client_and_name_the_blocking_host(
    warm: bool,
) -> None:
    auth, host = async_auth()
    if warm:
        cached(auth, host)
    rec = Recorder()
    with (
        httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client,
        pytest.raises(TypeError) as info,
    ):
        client.get(ORIGIN + "/models")
    # The core names the host by its own class, never a GitHub class.
    assert "AsyncCountingHost" in str(info.value)
    assert "httpx2.AsyncClient" in str(info.value)
    assert rec.requests == []


# -- header handling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "client_headers",
    [
        [],
        [("AUTHORIZATION", "Bearer placeholder"), ("editor-version", "stale/0")],
        [("X-Trace", "abc"), ("User-Agent", "custom/1"), ("Copilot-Vision-Request", "true")],
    ],
)
def test_every_owned_header_is_replaced_whatever_its_case(
    client_headers: list[tuple[str, str]],
) -> None:
    host = CountingHost()
    host_headers = {**host.request_headers(), "User-Agent": "tests-agent/2"}
    resolver = SessionResolver(host, clock=host.clock)
    auth = CopilotAuth(resolver, ENDPOINT, host_headers)
    rec = Recorder()
    with httpx2.Client(auth=auth, transport=httpx2.MockTransport(rec)) as client:
        client.post(CHAT, headers=client_headers, json={"a": 1})
    sent = rec.requests[0].headers
    assert sent.get_list("authorization") == [bearer_of(host, 0)]
    assert sent.get_list("user-agent") == ["tests-agent/2"]
    assert sent.get_list("editor-version") == ["tests/1.0"]
    assert sent.get_list("copilot-vision-request") == []
    kept = {name.lower() for name, _ in client_headers} - {
        "authorization",
        "editor-version",
        "user-agent",
        "copilot-vision-request",
    }
    assert kept <= {name.lower() for name in sent}


@pytest.mark.parametrize(
    "headers",
    [
        {"Editor-Version": "x\r\nX-Injected: 1"},
        {"Editor-Version": "caf\u00e9"},
        {"Bad Name": "1"},
        {"Host": "elsewhere.example"},
        {"Proxy-Authorization": "Basic x"},
        {"Editor-Version": "1", "editor-version": "2"},
    ],
)
def test_host_headers_are_vetted(headers: dict[str, str]) -> None:
    host = CountingHost()
    resolver = SessionResolver(host, clock=host.clock)
    with pytest.raises(ValueError):
        CopilotAuth(resolver, ENDPOINT, headers)


@pytest.mark.parametrize("bad", ["tid=abc\r\nX-Injected: 1", "tid=\u00e9t\u00e9", "two words", ""])
def test_a_token_that_cannot_go_in_a_header_is_refused(bad: str) -> None:
    host = CountingHost()
    mint = host._mint

    def exchange(identity: ch.LoginIdentity) -> ch.CopilotSession:
        session = mint(identity)
        return ch.CopilotSession(
            token=ch.Secret(bad),
            identity=session.identity,
            endpoint=session.endpoint,
            received_monotonic=session.received_monotonic,
            refresh_monotonic=session.refresh_monotonic,
            expires_monotonic=session.expires_monotonic,
            expires_wall=session.expires_wall,
        )

    host.exchange = exchange  # type: ignore[method-assign]
    resolver = SessionResolver(host, clock=host.clock)
    with pytest.raises(ch.ResponseError) as info:
        resolver.get()
    assert bad not in info.value.message or not bad
    # Nor in any frame of the library that the refusal passed through.
    assert not bad or bad not in locals_text(info.value)


def test_an_auth_names_its_origin_and_refuses_pickling() -> None:
    auth, _host = sync_auth()
    assert auth.endpoint is ENDPOINT
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(auth)


def test_headers_that_are_not_text_are_refused_when_the_auth_is_made() -> None:
    host = CountingHost()
    resolver = SessionResolver(host, clock=host.clock)
    with pytest.raises(TypeError, match="str names and values"):
        CopilotAuth(resolver, ENDPOINT, {"Editor-Version": 1})  # type: ignore[dict-item]


def test_an_async_streamed_turn_is_read_before_its_headers_are_chosen() -> None:
    """A body the application streams (not read yet) is read first, so the vision and
    initiator headers still come from it."""
    auth, host = async_auth()
    cached(auth, host)
    seen: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200)

    async def body() -> AsyncIterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "hi"},'
        yield b' {"role": "assistant", "content": "partial"}]}'

    async def main() -> None:
        async with httpx2.AsyncClient(auth=auth, transport=httpx2.MockTransport(record)) as c:
            await c.post(ORIGIN + "/chat/completions", content=body())

    asyncio.run(main())
    (sent,) = seen
    assert sent.headers["x-initiator"] == "agent"
    assert sent.content.endswith(b'"partial"}]}')
