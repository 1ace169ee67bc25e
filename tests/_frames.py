"""What a traceback that shows locals would show (pytest -l, rich, error trackers)."""

from __future__ import annotations

import traceback
from types import TracebackType


def _frames(tb: TracebackType | None) -> list[dict[str, object]]:
    """The locals of the library's frames (the test's own frames hold the canaries)."""
    found = []
    while tb is not None:
        if "/copilot_host/" in tb.tb_frame.f_code.co_filename:
            found.append(dict(tb.tb_frame.f_locals))
        tb = tb.tb_next
    return found


def locals_text(exc: BaseException) -> str:
    """What a locals-capturing traceback (pytest -l, rich, error trackers) would show."""
    shown: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in _frames(current.__traceback__):
            shown.extend(f"{name}={value!r}" for name, value in frame.items())
        current = current.__cause__ or current.__context__
    shown.append("".join(traceback.format_exception(exc)))
    return "\n".join(shown)
