"""The session token never shows: reprs, vars, pickles, copies, the catalog, logs."""

from __future__ import annotations

import asyncio
import copy
import io
import logging
import pickle

import httpx2
import pytest

import copilot_host as ch
from copilot_host import AsyncSessionResolver, CopilotAuth, SessionResolver, TransportError
from copilot_host._safety._redact import redact
from tests.sessions._hosts import ENDPOINT, ORIGIN, AsyncCountingHost, CountingHost


def tokens(host: CountingHost) -> list[str]:
    return [s.token.reveal() for s in host.issued]


def assert_hidden(text: str, host: CountingHost) -> None:
    assert host.issued, "the test must have minted at least one token"
    for token in tokens(host):
        assert token not in text


def test_auth_and_resolver_show_no_token_in_repr_vars_or_pickle() -> None:
    host = CountingHost(shapeless_tokens=True)
    resolver = SessionResolver(host, clock=host.clock)
    auth = CopilotAuth(resolver, ENDPOINT, host.request_headers())
    resolver.get()
    assert_hidden(repr(auth) + str(auth) + repr(resolver) + str(resolver), host)
    assert_hidden(repr(vars(auth)), host)
    for value in vars(auth).values():
        assert_hidden(repr(value), host)
    for obj in (auth, resolver):
        with pytest.raises(TypeError):
            pickle.dumps(obj)
    assert copy.copy(auth) is auth and copy.deepcopy(auth) is auth


def test_async_resolver_shows_no_token() -> None:
    inner = CountingHost(shapeless_tokens=True)
    resolver = AsyncSessionResolver(AsyncCountingHost(inner), clock=inner.clock)
    asyncio.run(resolver.get())
    assert_hidden(repr(resolver), inner)
    with pytest.raises(TypeError):
        pickle.dumps(resolver)


def test_registered_routes_and_the_catalog_show_no_token() -> None:
    host = CountingHost(shapeless_tokens=True)
    catalog = ch.Catalog()
    result = ch.register_models(catalog, host, clock=host.clock)
    route = result.routes[0]
    assert isinstance(route.auth, CopilotAuth)
    assert route.origin == ORIGIN
    assert_hidden(repr(route) + repr(result) + repr(catalog.routes()), host)
    assert copy.deepcopy(route).auth is route.auth
    with pytest.raises(TypeError):
        pickle.dumps(route)


def test_nothing_at_any_log_level_carries_the_token(caplog: pytest.LogCaptureFixture) -> None:
    host = CountingHost(shapeless_tokens=True, failures=[])
    resolver = SessionResolver(host, clock=host.clock)
    auth = CopilotAuth(resolver, ENDPOINT, host.request_headers())
    statuses = iter([401, 200, 200, 200])

    def handler(request: httpx2.Request) -> httpx2.Response:
        logging.getLogger("tests.echo").debug("server saw headers %r", request.headers)
        return httpx2.Response(next(statuses))

    with (
        caplog.at_level(logging.DEBUG),
        httpx2.Client(auth=auth, transport=httpx2.MockTransport(handler)) as client,
    ):
        resolver.get()
        host.clock.advance(2)  # the session is from the cache: a 401 is worth an exchange
        client.get(ORIGIN + "/models")  # 401, invalidate, exchange, retry
        host.clock.advance(1600)
        host.failures.append(TransportError("down"))
        client.get(ORIGIN + "/models")  # failed advisory refresh (logged)
        resolver.refresh()
        resolver.invalidate()
    assert len(host.issued) == 3
    assert any(r.name == "copilot_host.session" for r in caplog.records)
    assert_hidden(caplog.text, host)


def test_the_redaction_filter_learns_each_installed_session_token() -> None:
    host = CountingHost(shapeless_tokens=True)
    resolver = SessionResolver(host, clock=host.clock)
    session = resolver.get()
    token = session.token.reveal()
    assert token not in redact(f"a stray copy: {token}")

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tests.sessions.careless")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        ch.install_redaction(logger)
        logger.warning("debug dump: %s", token)
    finally:
        logger.removeHandler(handler)
        logger.filters.clear()
    assert token not in stream.getvalue()
    assert redact("x") == "x"
