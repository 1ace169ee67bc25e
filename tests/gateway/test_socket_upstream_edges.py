"""Copilot's own socket as the upstream of a client's socket (``_app/_copilot_socket.py``) at
the edges of its degradations, against a real gateway and the emulator's real socket: a
handshake refused 401 (a new session, once), a socket that drops every send (three, then
HTTP), an error frame that is neither a refusal nor a reason to reconnect (one HTTP
rescue), an answer that breaks off with an error frame, and a login revoked between
requests."""

from __future__ import annotations

import json

import pytest

from copilot_host.testing import Inventory, Replies, Scenario, Sockets
from tests.gateway._support import Gateway
from tests.gateway.test_socket import USER, _create, _open, _seen, _types
from tests.gateway.test_socket_upstream import (  # noqa: F401 - the fixture
    MODEL,
    _handshakes,
    _http,
    _socket_records,
    upstream,
)

PLAIN = Replies(tool_calls=False)


@pytest.mark.parametrize(
    "upstream", [Scenario(sockets=Sockets(refused=(401,)), replies=PLAIN)], indirect=True
)
def test_a_handshake_refused_401_is_made_again_once_with_a_new_session(
    upstream: Gateway,  # noqa: F811
) -> None:
    """As a request refused 401 is (``CopilotAuth``): a new session, one more try; the
    socket then serves, nothing goes over HTTP."""
    gateway = upstream
    with _open(gateway) as client:
        assert _seen(gateway, client.request(_create(input=[USER])))[-1]["type"] == (
            "response.completed"
        )
    assert [r.status for r in _handshakes(gateway)] == [401, 101]
    assert [r.status for r in _socket_records(gateway)] == [200]
    assert _http(gateway) == []


@pytest.mark.parametrize(
    "upstream", [Scenario(sockets=Sockets(closes=3), replies=PLAIN)], indirect=True
)
def test_a_request_dropped_on_three_sockets_goes_over_http(upstream: Gateway) -> None:  # noqa: F811
    gateway = upstream
    with _open(gateway) as client:
        frames = _seen(gateway, client.request(_create(input=[USER])))
    assert frames[-1]["type"] == "response.completed"
    dropped = _socket_records(gateway)
    assert len(dropped) == 3 and all(r.disconnected for r in dropped)
    # Each send on a socket of its own, the request whole each time, then HTTP once.
    assert len(_handshakes(gateway)) == 3
    assert all(json.loads(r.body)["input"] == [USER] for r in dropped)
    assert [body["input"] for body in _http(gateway)] == [[USER]]


@pytest.mark.parametrize(
    "upstream",
    [Scenario(inventory=Inventory(min_editor_version={MODEL: "99.0"}), replies=PLAIN)],
    indirect=True,
)
def test_an_error_frame_of_no_known_kind_is_rescued_over_http_once(
    upstream: Gateway,  # noqa: F811
) -> None:
    """VS Code's rule (``chatMLFetcher.ts``): a code it does not sort as a refusal is a
    server error, sent once more over HTTP; the client gets that answer, in the frame
    Codex reads."""
    gateway = upstream
    with _open(gateway) as client:
        (frame,) = _seen(gateway, client.request(_create(input=[USER])))
    assert (frame["type"], frame["status"]) == ("error", 400), frame
    assert frame["error"]["code"] == "model_not_supported_in_version"
    assert [r.status for r in _socket_records(gateway)] == [400]
    assert len(_http(gateway)) == 1


@pytest.mark.parametrize(
    "upstream", [Scenario(sockets=Sockets(breaks=1), replies=PLAIN)], indirect=True
)
def test_an_answer_broken_off_by_an_error_frame_is_the_streams_error(
    upstream: Gateway,  # noqa: F811
) -> None:
    """After frames were relayed, Copilot's error frame is the stream's own error event,
    and Codex gets it wrapped with a status; nothing is chained on that answer."""
    gateway = upstream
    with _open(gateway) as client:
        frames = _seen(gateway, client.request(_create(input=[USER])))
        assert _types(frames) == ["response.created", "error"]
        assert frames[-1]["status"] == 502
        assert frames[-1]["error"]["code"] == "internal_error"
        again = _seen(gateway, client.request(_create(input=[USER])))
        assert again[-1]["type"] == "response.completed"
    # The second request went whole, on the same socket.
    first, second = (json.loads(r.body) for r in _socket_records(gateway))
    assert "previous_response_id" not in second and second["input"] == first["input"]
    assert len(_handshakes(gateway)) == 1


def test_a_login_revoked_between_requests_is_the_clients_refusal(upstream: Gateway) -> None:  # noqa: F811
    """The new session the next handshake needs cannot be had: the client's socket gets
    the answer an HTTP request would, and nothing goes upstream."""
    gateway = upstream
    with _open(gateway) as client:
        first = _seen(gateway, client.request(_create(input=[USER], tools=[])))
        assert first[-1]["type"] == "response.completed"
        gateway.emulator.revoke_login()
        gateway.clock.advance(1900.0)  # type: ignore[attr-defined]  # past the session's life
        frames = _seen(gateway, client.request(_create(input=[USER], tools=[])))
    (frame,) = frames
    # As over HTTP: the login is the user's to renew (the message says how).
    assert (frame["type"], frame["status"]) == ("error", 503), frame
    assert frame["error"]["code"] == "login_invalid"
    assert "copilot-host login" in frame["error"]["message"]
    assert len(_handshakes(gateway)) == 1 and _http(gateway) == []
