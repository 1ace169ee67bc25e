"""Reading a PNG's pixels with the standard library (zlib), for the tests that look at
screenshots: 8-bit greyscale, RGB or RGBA, not interlaced, as Chromium writes them."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

__all__ = ["Image", "read_png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 6: 4}


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: tuple[bytes, ...]

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        """The RGB of a pixel (alpha ignored)."""
        row = self.rows[y]
        at = x * self.channels
        if self.channels == 1:
            return (row[at], row[at], row[at])
        return (row[at], row[at + 1], row[at + 2])

    def colours(self) -> Counter[tuple[int, int, int]]:
        """How many pixels of each colour (RGB; alpha ignored)."""
        step = self.channels
        if step == 1:
            return Counter((v, v, v) for row in self.rows for v in row)
        return Counter(
            chain.from_iterable(
                zip(r[0::step], r[1::step], r[2::step], strict=True) for r in self.rows
            )
        )


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(data: bytes, width: int, height: int, step: int) -> tuple[bytes, ...]:
    stride = width * step
    rows: list[bytes] = []
    previous = bytearray(stride)
    at = 0
    for _ in range(height):
        kind = data[at]
        line = bytearray(data[at + 1 : at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = previous[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                corner = previous[i - step] if i >= step else 0
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
            elif kind != 0:
                raise ValueError(f"unknown PNG filter {kind}")
        rows.append(bytes(line))
        previous = line
    return tuple(rows)


def read_png(path: Path, *, rows: int | None = None) -> Image:
    """The image at ``path`` (only its first ``rows`` rows, when given: quicker)."""
    data = path.read_bytes()
    if not data.startswith(_SIGNATURE):
        raise ValueError(f"{path} is not a PNG")
    at = len(_SIGNATURE)
    idat = bytearray()
    width = height = channels = 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in _CHANNELS or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour {colour})")
            channels = _CHANNELS[colour]
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    height = height if rows is None else min(rows, height)
    return Image(
        width, height, channels, _unfilter(zlib.decompress(bytes(idat)), width, height, channels)
    )
