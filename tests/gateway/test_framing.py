"""Framing the two HTTP parsers serve may use read differently (hardening round 3, I2 and
I4), over raw sockets on both: a request with both Content-Length and
Transfer-Encoding is refused and its connection closed; any request that carried
Transfer-Encoding is answered with ``Connection: close``; a request asking to upgrade
never leaves a pipelined one behind it waiting for the head deadline; a body dripped in
is cut off at its deadline (408)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from copilot_host.gateway._app import _intake
from copilot_host.gateway._server._stack import PURE_PYTHON, ServerStack
from copilot_host.testing import GitHubEmulator
from tests._extras import require
from tests.gateway._support import Gateway, running_gateway

BOUND = 10.0
STACKS = [ServerStack(http="httptools"), PURE_PYTHON]
CHAT = b'{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}'


@pytest.fixture(params=STACKS, ids=["httptools", "h11"])
def gateway(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[Gateway]:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    if request.param.http == "httptools":
        require("httptools")  # [fast]; skipped only on the base install
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", stack=request.param) as running,
    ):
        yield running


def _head(gateway: Gateway, method: str, path: str, *extra: str) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{gateway.port}",
        f"Authorization: Bearer {gateway.key}",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_all(
    sock: socket.socket, seconds: float = BOUND, *, answers: int = 0
) -> tuple[bytes, bool]:
    """What the server sends within ``seconds`` (or until ``answers`` whole answers have
    come, each with its Content-Length), and whether it closed the connection."""
    sock.settimeout(seconds)
    data = b""
    began = time.monotonic()
    try:
        while time.monotonic() - began < seconds:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
            if answers and _whole_answers(data) >= answers:
                return data, False
    except (ConnectionResetError, BrokenPipeError):
        return data, True
    except TimeoutError:
        pass
    return data, False


def _whole_answers(data: bytes) -> int:
    count = 0
    while b"\r\n\r\n" in data:
        head, rest = data.split(b"\r\n\r\n", 1)
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            ),
            0,
        )
        if len(rest) < length:
            break
        count += 1
        data = rest[length:]
    return count


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


def _chunked_chat_then_models(gateway: Gateway, *extra: str) -> tuple[bytes, bool]:
    """A chunked chat request (with ``extra`` headers) and a pipelined GET /v1/models, on
    one connection: what came back, and whether the gateway closed it."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=BOUND) as sock:
        sock.sendall(
            _head(
                gateway,
                "POST",
                "/v1/chat/completions",
                "Content-Type: application/json",
                *extra,
                "Transfer-Encoding: chunked",
            )
            + _chunked(CHAT)
            + _head(gateway, "GET", "/v1/models")
        )
        return _read_all(sock)


def test_content_length_with_transfer_encoding_is_refused_and_closed(gateway: Gateway) -> None:
    # The pipelined request after it must not be answered.
    data, closed = _chunked_chat_then_models(gateway, f"Content-Length: {len(CHAT) + 10}")
    assert data.startswith(b"HTTP/1.1 400"), data[:200]
    assert closed
    assert data.count(b"HTTP/1.1 ") == 1
    assert not gateway.emulator.requests_to("chat")


def test_an_answer_to_a_chunked_request_closes_the_connection(gateway: Gateway) -> None:
    data, closed = _chunked_chat_then_models(gateway)
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 200"), data[:300]
    assert b"\r\nconnection: close" in head
    assert closed
    assert data.count(b"HTTP/1.1 ") == 1  # the pipelined request was not read as one


def test_a_request_asking_to_upgrade_leaves_no_pipelined_request_waiting(
    gateway: Gateway,
) -> None:
    """llhttp parses nothing after a request with ``Connection: Upgrade``: the request
    behind it is either answered or its connection closed, at once, not left to the
    10-second head deadline."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=BOUND) as sock:
        began = time.monotonic()
        sock.sendall(
            _head(gateway, "GET", "/v1/models", "Connection: Upgrade", "Upgrade: h2c")
            + _head(gateway, "GET", "/v1/models")
        )
        data, closed = _read_all(sock, 5.0, answers=2)
        took = time.monotonic() - began
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    answers = data.count(b"HTTP/1.1 200")
    assert answers == 2 or closed, (answers, closed)
    assert took < 4.0


def _chat_head(gateway: Gateway) -> bytes:
    """The head of a keyed chat request declaring CHAT's length, its body still to come."""
    return _head(
        gateway,
        "POST",
        "/v1/chat/completions",
        "Content-Type: application/json",
        f"Content-Length: {len(CHAT)}",
    )


def test_a_dripped_body_is_cut_off_at_its_deadline(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_intake, "BODY_SECONDS", 1.0)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=BOUND) as sock:
        sock.sendall(_chat_head(gateway))
        began = time.monotonic()
        answer = b""
        sock.settimeout(0.2)
        for byte in CHAT[:-1]:  # one byte every 0.2 s: never whole within a second
            try:
                sock.sendall(bytes([byte]))
                answer += sock.recv(65536)
            except TimeoutError:
                pass
            except OSError:
                break
            if answer or time.monotonic() - began > 8.0:
                break
        rest, closed = _read_all(sock, 5.0)
    answer += rest
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"request_timeout"' in answer
    assert closed
    assert time.monotonic() - began < 8.0
    assert not gateway.emulator.requests_to("chat")


def test_a_body_that_arrives_in_pieces_within_its_deadline_is_served(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_intake, "BODY_SECONDS", 5.0)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=BOUND) as sock:
        sock.sendall(_chat_head(gateway))
        for piece in (CHAT[:20], CHAT[20:40], CHAT[40:]):
            time.sleep(0.3)
            sock.sendall(piece)
        sock.settimeout(BOUND)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_the_body_deadline_grows_with_the_larger_of_declared_and_received() -> None:
    mib = 1024 * 1024
    assert _intake.body_deadline(0, 0) == 60.0
    assert _intake.body_deadline(mib, 0) == 180.0
    assert _intake.body_deadline(mib, 2 * mib) == 300.0
    assert _intake.body_deadline(32 * mib, 0) == 60.0 + 120.0 * 32
