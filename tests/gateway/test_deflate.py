"""permessage-deflate (RFC 7692) on the gateway's sockets (``_server/_deflate.py``), on a real
server and real sockets: each offer agreed as written or declined, then frames written by
hand around compressed messages (uncompressed ones, control frames, fragments, a context
kept or reset) and the ones that break the extension's rules (1002) or are no deflate data
(1007). The bomb (1009) is in test_socket.py, with the gateway's own app.

The app (test_socket_edges.py's) answers each text message with its length.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable

import pytest
from wsproto.extensions import Extension

from tests._wsclient import Closed, SocketClient, deflated
from tests.gateway.test_socket_bounds import _close_code, _Running
from tests.gateway.test_socket_edges import edge_server  # noqa: F401 - the fixture

TEXT, CONTINUATION, PING = 0x1, 0x0, 0x9
# A message long enough that its deflate data splits in two frames.
LONG = "the quick brown fox jumps over the lazy dog; " * 40


class _Offer(Extension):
    """An offer written as the test says (``params`` None: the bare name); the server's
    answer is kept, and nothing the client sends or reads is compressed by it (the test
    writes its compressed frames by hand)."""

    def __init__(self, params: str | None, name: str = "permessage-deflate") -> None:
        self.name = name
        self.params = params
        self.answer: str | None = None

    def offer(self) -> bool | str:
        return True if self.params is None else self.params

    def finalize(self, offer: str) -> None:
        self.answer = offer


def _frame(opcode: int, payload: bytes, *, fin: bool = True, rsv1: bool = False) -> bytes:
    """A client's frame (RFC 6455 §5.2), masked with zeros (the payload as it is)."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    size = len(payload)
    if size < 126:
        head = bytes((first, 0x80 | size))
    elif size < 65536:
        head = bytes((first, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((first, 0x80 | 127)) + size.to_bytes(8, "big")
    return head + b"\x00" * 4 + payload


def _open(server: _Running, offer: _Offer) -> SocketClient:
    client = server.socket()
    client._request = dataclasses.replace(client._request, extensions=[offer])
    return client.open()


def _agreed(server: _Running, params: str | None = "client_max_window_bits") -> SocketClient:
    """A socket with the extension agreed (by default on Codex's offer)."""
    offer = _Offer(params)
    client = _open(server, offer)
    assert offer.answer is not None, "permessage-deflate was declined"
    return client


def _send_compressed(client: SocketClient, *parts: bytes) -> None:
    """One compressed text message in as many frames as ``parts``."""
    last = len(parts) - 1
    client.raw(
        b"".join(
            _frame(TEXT if i == 0 else CONTINUATION, part, fin=i == last, rsv1=i == 0)
            for i, part in enumerate(parts)
        )
    )


@pytest.mark.parametrize(
    ("params", "answer"),
    [
        (None, "permessage-deflate"),
        # Codex's offer; a window the client keeps to (inflating reads any smaller one).
        ("client_max_window_bits", "permessage-deflate"),
        ("client_max_window_bits=10", "permessage-deflate"),
        # The server compresses nothing: its window and its context are as the client asks.
        ('server_max_window_bits="10"', "permessage-deflate; server_max_window_bits=10"),
        (
            "client_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; client_no_context_takeover; server_no_context_takeover",
        ),
        # A first offer that cannot be agreed to, then a plainer one that can (§5).
        ("server_max_window_bits=16, permessage-deflate", "permessage-deflate"),
        ("server_max_window_bits", None),  # a value is required
        ("server_max_window_bits=7", None),  # 8 to 15
        ("client_max_window_bits=x", None),
        ("server_no_context_takeover=1", None),  # takes no value
        ("client_max_window_bits; client_max_window_bits", None),  # twice
        ("mystery_parameter", None),
        (";", None),  # an empty one
    ],
)
def test_an_offer_is_agreed_as_written_or_declined(
    edge_server: Callable[..., _Running],  # noqa: F811
    params: str | None,
    answer: str | None,
) -> None:
    """RFC 7692 §5, §7.1: an offer is agreed with exactly its parameters' answers, or
    declined whole (the socket then opens without the extension). Agreed, a compressed
    message is read; declined, a frame with RSV1 is a protocol error (RFC 6455 §5.2)."""
    server = edge_server()
    offer = _Offer(params)
    with _open(server, offer) as client:
        assert offer.answer == answer
        assert client.request_text("plain") == 5
        _send_compressed(client, deflated("compressed"))
        if answer is None:
            assert _close_code(client) == 1002
        else:
            assert client.receive() == 10


def test_another_extension_is_not_agreed(edge_server: Callable[..., _Running]) -> None:  # noqa: F811
    server = edge_server()
    offer = _Offer(None, name="x-webkit-deflate-frame")
    with _open(server, offer) as client:
        assert offer.answer is None and client.accepted is not None
        assert client.accepted.extensions == []
        assert client.request_text("plain") == 5


def test_frames_around_compressed_messages(edge_server: Callable[..., _Running]) -> None:  # noqa: F811
    """A message may go uncompressed (RFC 7692 §6); a control frame, even between the
    frames of a compressed message, is never inflated (§6.1); the client's compression
    context carries from one message to the next unless it said it would not."""
    server = edge_server()
    with _agreed(server) as client:
        assert client.request_text("uncompressed") == 12
        client.ping(b"plain ping")
        data = deflated(LONG)
        half = len(data) // 2
        client.raw(_frame(TEXT, data[:half], fin=False, rsv1=True))
        client.ping(b"between")
        client.raw(_frame(CONTINUATION, data[half:]))
        assert client.receive() == len(LONG)
        assert client.pongs == [b"plain ping", b"between"]
        # One compressor for two messages: the second refers back into the first.
        compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        for text in (LONG, LONG + "!"):
            data = compressor.compress(text.encode()) + compressor.flush(zlib.Z_SYNC_FLUSH)
            _send_compressed(client, data[:-4])
            assert client.receive() == len(text)


def test_without_context_takeover_each_message_inflates_on_its_own(
    edge_server: Callable[..., _Running],  # noqa: F811
) -> None:
    server = edge_server()
    with _agreed(server, "client_no_context_takeover") as client:
        for text in (LONG, LONG + "?"):
            data = deflated(text)
            _send_compressed(client, data[:10], data[10:])  # reset at the message's end only
            assert client.receive() == len(text)


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        # RSV1 on a control frame, or on a continuation: only a message's first frame
        # says it is compressed (RFC 7692 §6, §6.1).
        (_frame(PING, b"p", rsv1=True), 1002),
        (
            _frame(TEXT, deflated(LONG)[:8], fin=False, rsv1=True)
            + _frame(CONTINUATION, deflated(LONG)[8:], rsv1=True),
            1002,
        ),
        # No deflate data (RFC 6455 §7.4.1: 1007, data not consistent with the message).
        (_frame(TEXT, b"\xff\xff\xff\xff", rsv1=True), 1007),
    ],
    ids=["rsv1-on-a-ping", "rsv1-on-a-continuation", "not-deflate"],
)
def test_frames_that_break_the_extension_close_the_socket(
    edge_server: Callable[..., _Running],  # noqa: F811
    frames: bytes,
    code: int,
) -> None:
    server = edge_server()
    with _agreed(server) as client:
        client.raw(frames)
        with pytest.raises(Closed) as closed:
            while True:
                client.receive()
        assert closed.value.code == code
