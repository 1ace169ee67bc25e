"""Small, pure formatting helpers for what people read."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ago", "clock_time", "local_time", "mmss", "table", "width"]


def mmss(seconds: float) -> str:
    """``14:05`` for a countdown (never negative)."""
    whole = max(0, int(seconds + 0.999))
    return f"{whole // 60}:{whole % 60:02d}"


def clock_time(seconds: float) -> str:
    """A step's duration: ``850 ms``, ``1.2 s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def local_time(epoch: float) -> str:
    """``2025-01-01 12:00 CET`` in the local time zone."""
    from datetime import datetime

    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()


def ago(epoch: float, now: float) -> str:
    delta = now - epoch
    if delta < -60:
        return "in the future (check this machine's clock)"
    delta = max(0.0, delta)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if delta >= size:
            n = int(delta // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def width(text: str) -> int:
    """Terminal columns: wide East Asian characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, gap: int = 2) -> list[str]:
    """Left-aligned columns sized to their widest cell; no trailing spaces."""
    columns = len(header)
    widths = [width(header[i]) for i in range(columns)]
    for row in rows:
        for i in range(columns):
            widths[i] = max(widths[i], width(row[i]))
    lines = []
    for row in [header, *rows]:
        cells = [
            cell + " " * (widths[i] - width(cell)) if i < columns - 1 else cell
            for i, cell in enumerate(row)
        ]
        lines.append((" " * gap).join(cells).rstrip())
    return lines
