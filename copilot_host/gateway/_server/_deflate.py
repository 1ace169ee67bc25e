"""permessage-deflate (RFC 7692) for the gateway's sockets, with a bound on what a message
inflates to.

Codex offers the extension on every handshake (``permessage-deflate; client_max_window_bits``)
and works with it accepted or declined. Accepted, a client's messages arrive compressed, and
a few KiB of deflate can inflate to gigabytes: wsproto's own extension inflates each piece
of a frame whole. This one inflates at most :attr:`BoundedDeflate.limit` bytes of one message
(asking zlib for no more than what is left of that), and past it the socket is closed with
1009 (message too big) before anything larger is held.

The gateway never compresses what it sends (RFC 7692 lets a sender leave any message
uncompressed): its frames are small events on a loopback connection, where deflating each
would cost CPU and save nothing that matters. So the server's window and context settings
the client may ask for are agreed to as asked, and hold trivially.
"""

from __future__ import annotations

import zlib

from wsproto.extensions import Extension
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol, Opcode, RsvBits

__all__ = ["BoundedDeflate"]

# The parameters of an offer (RFC 7692 §7.1) and whether each may carry a value.
_VALUED = frozenset({"server_max_window_bits", "client_max_window_bits"})
_BARE = frozenset({"server_no_context_takeover", "client_no_context_takeover"})
# Each message ends with these four bytes, which the sender leaves off (RFC 7692 §7.2.1).
_TAIL = b"\x00\x00\xff\xff"


def _agreed(offer: str) -> tuple[list[str], bool] | None:
    """The parameters to answer an offer with, and whether the client resets its context
    between messages; None for an offer that cannot be agreed to as written."""
    answer: list[str] = []
    seen: set[str] = set()
    reset = False
    for raw in offer.split(";")[1:]:
        name, has_value, value = (part.strip() for part in raw.partition("="))
        value = value.strip('"')
        if not name or name in seen or name not in _VALUED | _BARE:
            return None
        seen.add(name)
        if name in _BARE:
            if has_value:
                return None
            # The server's context: it never compresses, so it keeps none to reset.
            answer.append(name)
            reset = reset or name == "client_no_context_takeover"
            continue
        if has_value and not (value.isdigit() and 8 <= int(value) <= 15):
            return None
        if name == "server_max_window_bits":
            if not has_value:
                return None
            # Agreed as asked: nothing the server sends is compressed with any window.
            answer.append(f"{name}={value}")
        # client_max_window_bits: inflating with the largest window reads any smaller one.
    return answer, reset


class BoundedDeflate(Extension):
    """permessage-deflate, server side, inflating at most ``limit`` bytes a message."""

    name = "permessage-deflate"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._enabled = False
        self._reset = False
        self._inflater: zlib._Decompress | None = None
        # Whether the message being read is compressed, and whether the frame being read
        # belongs to it (a control frame in the middle of a message does not).
        self._compressed = False
        self._in_message = False
        self._room = limit

    def enabled(self) -> bool:
        return self._enabled

    def offer(self) -> bool:
        return True  # a client's side: never called on a server

    def accept(self, offer: str) -> str | None:
        agreed = _agreed(offer)
        if agreed is None:
            return None
        answer, self._reset = agreed
        self._enabled = True
        return "; ".join(answer)

    def frame_inbound_header(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        payload_length: int,
    ) -> CloseReason | RsvBits:
        if opcode.iscontrol():
            if rsv.rsv1:
                return CloseReason.PROTOCOL_ERROR
            self._in_message = False
            return RsvBits(False, False, False)
        self._in_message = True
        if opcode is Opcode.CONTINUATION:
            if rsv.rsv1:
                return CloseReason.PROTOCOL_ERROR
        else:
            # The first frame of a message says whether the whole message is compressed.
            self._compressed = rsv.rsv1
            self._room = self.limit
        return RsvBits(True, False, False)

    def frame_inbound_payload_data(
        self, proto: FrameDecoder | FrameProtocol, data: bytes
    ) -> bytes | CloseReason:
        if not (self._in_message and self._compressed):
            return data
        return self._inflate(data)

    def frame_inbound_complete(
        self, proto: FrameDecoder | FrameProtocol, fin: bool
    ) -> bytes | CloseReason | None:
        if not (self._in_message and self._compressed and fin):
            return None
        self._compressed = False
        tail = self._inflate(_TAIL)
        if self._reset:
            self._inflater = None
        return tail

    def _inflate(self, data: bytes) -> bytes | CloseReason:
        inflater = self._inflater
        if inflater is None:
            inflater = self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        try:
            # One byte more than the room left: a message that reaches it is over the limit.
            out = inflater.decompress(data, self._room + 1)
        except zlib.error:
            return CloseReason.INVALID_FRAME_PAYLOAD_DATA
        if len(out) > self._room or inflater.unconsumed_tail:
            return CloseReason.MESSAGE_TOO_BIG
        self._room -= len(out)
        return out

    def frame_outbound(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        data: bytes,
        fin: bool,
    ) -> tuple[RsvBits, bytes]:
        return (rsv, data)

    def __repr__(self) -> str:
        return f"<BoundedDeflate limit={self.limit}>"
