"""Making text that came from elsewhere safe to show on a terminal."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clean", "one_line"]

# Cc (controls: ESC, BEL, CR, LF...), Cf (format: bidi overrides, zero-width joiners, BOM),
# Zl/Zp (line and paragraph separators), Cs/Co/Cn (surrogates, private use, unassigned):
# none of them belongs in a message a person reads, and several can rewrite a terminal.
_DROP_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_SPACES = re.compile(r"\s+")


def clean(text: object, *, limit: int = 300) -> str:
    """Return ``text`` with control and invisible format characters removed.

    Whitespace runs collapse to one space and the result is cut to ``limit`` characters,
    so a hostile server cannot flood or repaint a terminal through an error message.
    """
    raw = text if isinstance(text, str) else str(text)
    raw = raw[: limit * 4]
    kept = "".join(
        " " if ch in "\t\r\n" else ch
        for ch in raw
        if ch in "\t\r\n" or unicodedata.category(ch) not in _DROP_CATEGORIES
    )
    kept = _SPACES.sub(" ", kept).strip()
    if len(kept) > limit:
        kept = kept[: limit - 1] + "…"
    return kept


def one_line(text: str) -> str:
    """Our own messages: keep them to a single clean line (no length cut)."""
    return clean(text, limit=2000)
