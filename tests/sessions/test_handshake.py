"""CopilotAuth's headers for a WebSocket handshake (Copilot's ``wss://{api}/responses``): the
session bearer and the host's headers for this auth's origin only, vetted as a request is."""

from __future__ import annotations

import asyncio

import pytest

from copilot_host import OriginError
from tests.sessions._hosts import ORIGIN, OTHER_ENDPOINT, CountingHost
from tests.sessions.test_auth import async_auth, bearer_of, cached, sync_auth

SOCKET = ORIGIN.replace("https://", "wss://") + "/responses"


def _named(headers: list[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers}


def test_the_handshake_carries_the_bearer_and_the_hosts_headers_and_no_initiator() -> None:
    auth, host = sync_auth()
    headers = _named(auth.handshake_headers(SOCKET))
    assert headers["authorization"] == bearer_of(host, 0)
    for name, value in host.request_headers().items():
        assert headers[name.lower()] == value
    # On a socket the body says who started each turn; vision only when asked for.
    assert "x-initiator" not in headers and "copilot-vision-request" not in headers
    assert _named(auth.handshake_headers(SOCKET, vision=True))["copilot-vision-request"] == "true"
    assert host.exchanges == 1


def test_the_async_twin_gives_the_same_headers() -> None:
    auth, host = async_auth()
    headers = asyncio.run(auth.ahandshake_headers(SOCKET + "?x=1"))
    assert _named(headers)["authorization"] == bearer_of(host, 0)


@pytest.mark.parametrize(
    "url",
    [
        ORIGIN + "/responses",  # the https URL itself: not a socket's
        "wss://api.business.githubcopilot.com/responses",
        "wss://api.individual.githubcopilot.com:8443/responses",
        "ws://api.individual.githubcopilot.com/responses",
        "wss://evil.example/responses",
        "not a url",
    ],
)
def test_any_other_target_is_refused_before_a_session_is_got(url: str) -> None:
    auth, host = sync_auth()
    with pytest.raises(OriginError) as caught:
        auth.handshake_headers(url)
    assert caught.value.code == "origin_mismatch"
    with pytest.raises(OriginError):
        asyncio.run(async_auth(host)[0].ahandshake_headers(url))
    assert host.exchanges == 0


def test_the_default_port_spelled_out_is_the_same_origin() -> None:
    auth, _host = sync_auth()
    assert auth.handshake_headers(SOCKET.replace(".com/", ".com:443/"))


def test_a_session_naming_another_endpoint_is_refused() -> None:
    host = CountingHost(endpoint=OTHER_ENDPOINT)
    auth, _ = sync_auth(host)
    with pytest.raises(OriginError) as caught:
        auth.handshake_headers(SOCKET)
    assert caught.value.code == "origin_mismatch"


def test_a_rejected_handshake_gets_a_new_session_once_worth_it() -> None:
    auth, host = sync_auth()
    cached(auth, host)
    first = _named(auth.handshake_headers(SOCKET))["authorization"]
    again = _named(auth.handshake_headers(SOCKET))["authorization"]
    assert again == first  # the session is kept while it is good
    renewed = _named(auth.handshake_headers(SOCKET, rejected=True))["authorization"]
    assert renewed != first and renewed == bearer_of(host, -1)
    # A second refusal within the second is not worth another exchange.
    assert _named(auth.handshake_headers(SOCKET, rejected=True))["authorization"] == renewed
    assert host.exchanges == 1


def test_a_blocking_call_on_an_async_hosts_auth_names_the_async_one() -> None:
    auth, _host = async_auth()
    with pytest.raises(TypeError, match="ahandshake_headers"):
        auth.handshake_headers(SOCKET)
