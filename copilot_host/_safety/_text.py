"""Making text that came from elsewhere safe to show on a terminal, and showing paths exactly."""

from __future__ import annotations

import os
import re
import unicodedata

__all__ = [
    "INVISIBLE_CATEGORIES",
    "clean",
    "drop_invisible",
    "one_line",
    "shell_quote",
    "show_path",
    "show_visibly",
]

# Invisible: Cf (format: zero-width characters and joiners, bidi controls, the BOM, the soft
# hyphen) and Zl/Zp (line and paragraph separators). The one definition, used wherever text
# is cleaned, and before secrets are masked: a token split by one of them would pass the
# mask and be joined back together when the text is shown.
INVISIBLE_CATEGORIES = frozenset({"Cf", "Zl", "Zp"})
# Besides the invisible ones, Cc (controls: ESC, BEL, CR, LF...) and Cs/Co/Cn (surrogates,
# private use, unassigned): none of them belongs in a message a person reads, and several
# can rewrite a terminal.
_DROP_CATEGORIES = INVISIBLE_CATEGORIES | {"Cc", "Cs", "Co", "Cn"}
# In a path they are escaped instead, together with every space other than U+0020 (a
# no-break or ideographic space would pass for a plain one, or for nothing).
_ESCAPE_CATEGORIES = _DROP_CATEGORIES | {"Zs"}
_SPACES = re.compile(r"\s+")
# Long enough for two escaped paths of PATH_MAX bytes (four characters per byte at most)
# and the words around them: one_line must never cut a path short.
_MESSAGE_LIMIT = 40_000
# What a POSIX shell takes as one word without quotes.
_SHELL_SAFE = re.compile(r"[A-Za-z0-9@%+=:,./_-]+")


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


def drop_invisible(text: str) -> str:
    """``text`` without its invisible characters (see :data:`INVISIBLE_CATEGORIES`);
    newlines and tabs stay."""
    if text.isascii():
        return text
    return "".join(ch for ch in text if unicodedata.category(ch) not in INVISIBLE_CATEGORIES)


def _one_space_unless_plain(match: re.Match[str]) -> str:
    run = match.group()
    return run if run.count(" ") == len(run) else " "


def one_line(text: str) -> str:
    """Our own messages: keep them to a single clean line.

    Unlike :func:`clean`, a run of plain spaces is kept as it is: a path shown with
    :func:`show_path` may hold two spaces in a row, and a message must name it exactly.
    Line breaks, tabs and any other whitespace still collapse (with the spaces around
    them) to one space.
    """
    raw = text[: _MESSAGE_LIMIT * 4]
    kept = "".join(
        ch for ch in raw if ch in "\t\r\n" or unicodedata.category(ch) not in _DROP_CATEGORIES
    )
    kept = _SPACES.sub(_one_space_unless_plain, kept).strip()
    if len(kept) > _MESSAGE_LIMIT:
        kept = kept[: _MESSAGE_LIMIT - 1] + "…"
    return kept


def _path_text(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    # Bytes that are not UTF-8 come back as lone surrogates U+DC80..U+DCFF, exactly as the
    # os module hands such names to Python (surrogateescape).
    return os.fsdecode(path)


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a byte that is not UTF-8, as that byte
    if code < 0x80:
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(ch, f"\\x{code:02x}")
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _needs_escape(ch: str) -> bool:
    return ch != " " and unicodedata.category(ch) in _ESCAPE_CATEGORIES


def show_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """A path as a message should name it: exactly, on one line, with nothing hidden.

    Printable characters, spaces included (a run of them stays a run), are shown as they
    are. Control, format (zero-width, bidi), separator and unassigned characters and every
    space other than U+0020 are shown as escapes (``\\t``, ``\\x1b``, ``\\u200b``), a byte
    that is not UTF-8 as ``\\xHH`` (``\\x80``-``\\xff`` only ever mean such a byte), and a
    backslash as ``\\\\``, so two different paths never look alike. :func:`one_line` keeps
    the result intact inside an error message.
    """
    return "".join(
        "\\\\" if ch == "\\" else _escape(ch) if _needs_escape(ch) else ch
        for ch in _path_text(path)
    )


def show_visibly(text: str, *, limit: int) -> str:
    """Text that must never pass for other text (a model id), with nothing hidden: the
    characters :func:`show_path` escapes are shown as escapes (``gpt-4.1\\u200b``, never
    ``gpt-4.1``), a backslash as ``\\\\``; cut to ``limit`` characters of ``text``
    (then ending in ``…``), each escape kept whole."""
    cut = len(text) > limit
    shown = "".join(
        "\\\\" if ch == "\\" else _escape(ch) if _needs_escape(ch) else ch
        for ch in (text[: limit - 1] if cut else text)
    )
    return shown + "…" if cut else shown


def shell_quote(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """A path as one word a person can paste into a POSIX shell (bash, zsh).

    Left bare when nothing in it is special to the shell, single-quoted when it holds only
    printable characters, else ANSI-C quoted (``$'...'``) with the same escapes as
    :func:`show_path`, which bash and zsh turn back into the exact bytes.
    """
    text = _path_text(path)
    if _SHELL_SAFE.fullmatch(text):
        return text
    if not any(_needs_escape(ch) for ch in text):
        return "'" + text.replace("'", "'\"'\"'") + "'"
    return "$'" + "".join(_ansi_c(ch) for ch in text) + "'"


def _ansi_c(ch: str) -> str:
    if ch in "\\'":
        return "\\" + ch
    return _escape(ch) if _needs_escape(ch) else ch
