"""Server-Sent Events as the gateway reads and writes them: the one reader, the one writer.

An event stream is lines; an event ends at an empty line, and a line ends at CRLF, LF or
CR. The relay finds where complete events end (:func:`cut`) without parsing them, so a
stream nothing needs to look into is relayed as the bytes that came. What does look into
events (the answer changes, the cost reader) splits a block of complete events
(:func:`split`) and reads an event's type and data (:class:`Event`); what the gateway says
itself in a stream, or an answer change rewrites, is written by :func:`encode`.

The emulator (:mod:`copilot_host.testing`) keeps its own reader and writer on purpose: it
is the independent model the gateway is checked against.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ._json import dumps

__all__ = ["Event", "cut", "data_lines", "encode", "split"]

# Where one event ends and the next begins: after an empty line (two line endings in a row).
_BOUNDARY = re.compile(rb"(?<=\r\n\r\n)|(?<=\n\n)|(?<=\r\r)|(?<=\n\r(?!\n))")
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def cut(buffer: bytes | bytearray, start: int = 0) -> int:
    """Where the last complete event in ``buffer`` ends (0: none complete yet), looking
    only at line-ending pairs that begin at ``start`` or later.

    An event ends at an empty line: two line endings in a row, each CRLF, LF or CR. Every
    such pair contains LF LF, LF CR or CR CR; the cut falls after the last of those, and
    after the LF of a CRLF that ends it. (A CR that ends the buffer may yet be followed
    by an LF: cut after it, the LF opens the next piece, which changes no byte.) The relay
    passes the first position a pair could begin at in the bytes just added, so each byte
    is searched once however long an event grows.
    """
    lf_lf = buffer.rfind(b"\n\n", start)
    cr_cr = buffer.rfind(b"\r\r", start)
    lf_cr = buffer.rfind(b"\n\r", start)
    end = max(lf_lf, cr_cr, lf_cr)
    if end < 0:
        return 0
    at = end + 2
    if end == lf_cr and buffer[at : at + 1] == b"\n":
        at += 1
    return at


def split(block: bytes) -> list[bytes]:
    """The events of ``block`` (complete ones, and last an unfinished one when the stream
    ended without its empty line), each with its own line endings."""
    return [event for event in _BOUNDARY.split(block) if event]


def data_lines(block: bytes) -> Iterator[bytes]:
    """The payload of every ``data:`` line in ``block``, stripped: what a reader that only
    wants the JSON each event carries (the cost reader) needs, without splitting events."""
    for line in block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
        if line.startswith(b"data:"):
            yield line[5:].strip()


class Event:
    """One event as it came: its lines, its type (``event:``) and its data (``data:``)."""

    __slots__ = ("_data_at", "kind", "lines")

    def __init__(self, raw: bytes) -> None:
        self.lines: list[bytes] = _LINE.findall(raw)
        self.kind: str | None = None
        self._data_at: int | None = None
        for index, line in enumerate(self.lines):
            if line.startswith(b"event:") and self.kind is None:
                self.kind = line[6:].strip().decode("utf-8", "replace")
            elif line.startswith(b"data:") and self._data_at is None:
                self._data_at = index

    @property
    def data(self) -> bytes | None:
        """The first ``data:`` line's payload (the JSON the APIs put there), or None."""
        if self._data_at is None:
            return None
        return self.lines[self._data_at][5:].strip()

    def rewritten(self, data: dict[str, Any]) -> bytes:
        """The event with ``data`` instead of its first data line, and its ``event:`` line
        naming ``data["type"]`` (the APIs keep the two equal); every other line as it was."""
        out: list[bytes] = []
        kind = data.get("type")
        for index, line in enumerate(self.lines):
            ending = _ending(line)
            if index == self._data_at:
                out.append(b"data: " + dumps(data) + ending)
            elif line.startswith(b"event:") and isinstance(kind, str):
                out.append(b"event: " + kind.encode("utf-8", "surrogatepass") + ending)
            else:
                out.append(line)
        return b"".join(out)


def _ending(line: bytes) -> bytes:
    if line.endswith(b"\r\n"):
        return b"\r\n"
    if line.endswith((b"\n", b"\r")):
        return line[-1:]
    return b"\n"


def encode(data: dict[str, Any] | bytes, *, kind: str | None = None) -> bytes:
    """One event: an ``event:`` line when ``kind`` is given (Messages and Responses name
    every event; Chat Completions names none), its data, and the empty line that ends it."""
    payload = data if isinstance(data, bytes) else dumps(data)
    head = b"event: " + kind.encode("ascii") + b"\n" if kind is not None else b""
    return head + b"data: " + payload + b"\n\n"
