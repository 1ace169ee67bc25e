"""Scrubbing secrets out of log records, as a last line of defence.

The library never logs a secret on purpose; this filter catches what other code (a
debugging user, an HTTP library at DEBUG) might put in a record: any value registered
with :func:`register_secret`, and anything shaped like a GitHub or Copilot token.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TypeVar

from ._secret import Secret
from ._text import drop_invisible

__all__ = [
    "REDACTED",
    "TOKEN_SHAPES",
    "RedactingFilter",
    "install_redaction",
    "known_values",
    "mask_secrets",
    "may_hold_token_shape",
    "redact",
    "redact_line",
    "register_secret",
    "secrets_generation",
    "scrub",
]

REDACTED = "[REDACTED]"
_REDACTED_BYTES = REDACTED.encode("ascii")
_Text = TypeVar("_Text", str, bytes)

# GitHub tokens (gho_, ghu_, ghp_, ghs_, ghr_ and fine-grained github_pat_), Copilot session
# tokens (semicolon-separated fields starting with tid=), and bearer/token schemes.
TOKEN_SHAPES = re.compile(
    r"""
    \b(?:gh[oupsr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{20,})
    | \btid=[^\s"',]+
    | (?i:\b(?:bearer|token)\s+)[A-Za-z0-9._~+/=:;\-]{8,}
    """,
    re.VERBOSE,
)

_lock = threading.Lock()
# Weak references: registering a secret must not keep it alive after its owner drops it.
# Held by identity, not by value: Secrets that are equal (the same token read again from
# the store) are each registered, so the value stays masked while any of them lives. A
# set would keep only the first, and the value would go unmasked once its owner dropped
# that one, though a later copy was still held (the GitHub host keeps its latest read).
_known: weakref.WeakValueDictionary[int, Secret] = weakref.WeakValueDictionary()
# Moves whenever the set changes: on a registration, and when a registered secret is
# collected (its finalizer). known_values() rebuilds its cache only then, and otherwise
# answers from it without a lock: it runs several times per relayed request.
_generation = 0
# (generation, values longest first, the same values encoded as UTF-8)
_cache: tuple[int, tuple[str, ...], tuple[bytes, ...]] = (-1, (), ())


def _collected() -> None:
    # A finalizer may run in any thread, at any moment, the lock's holder included: no
    # lock. An increment lost to a race still leaves the generation moved.
    global _generation  # noqa: PLW0603
    _generation += 1


def register_secret(secret: Secret) -> None:
    """Ask the redaction filter to scrub this exact value wherever it appears."""
    global _generation  # noqa: PLW0603 - guarded by _lock
    if len(secret.reveal()) >= 6:
        with _lock:
            if _known.get(id(secret)) is not secret:
                _known[id(secret)] = secret
                weakref.finalize(secret, _collected)
                _generation += 1


def _known_forms() -> tuple[int, tuple[str, ...], tuple[bytes, ...]]:
    global _cache  # noqa: PLW0603 - replaced whole, under _lock
    cached = _cache
    if cached[0] == _generation:
        return cached
    with _lock:
        # Read before the set: a change while this builds moves it again, so the next
        # call rebuilds.
        generation = _generation
        values = tuple(sorted({s.reveal() for s in _known.values()}, key=len, reverse=True))
        _cache = (generation, values, tuple(v.encode("utf-8") for v in values))
        return _cache


def known_values() -> tuple[str, ...]:
    """The registered values, longest first (so a value inside another is masked whole)."""
    return _known_forms()[1]


def mask_secrets(data: _Text) -> _Text:
    """``data`` (text or bytes) with every registered secret value replaced by
    ``[REDACTED]``, and nothing else changed: no token *shapes* are touched, so model
    output or an upstream answer keeps its exact bytes unless it carries one of this
    process's own credentials. For what is relayed to other programs (the gateway).

    Masked: the value as it is, and the value as JSON may spell it inside a string, any
    of its characters written as a ``\\uXXXX`` escape (hex digits in either case; a
    character outside the BMP as its surrogate pair) or, for ``/``, ``"`` and ``\\``,
    as the short escape, in any mix with literal characters. Not masked: a value split
    across two calls, or encoded any other way (base64, URL or HTML escapes)."""
    _, values, encoded = _known_forms()
    if isinstance(data, str):
        for value in values:
            if value in data:
                data = data.replace(value, REDACTED)
        if "\\" in data and values:
            forms = _escaped_forms(values)
            if forms.clue_text.search(data):
                data = forms.text.sub(REDACTED, data)
        return data
    # find(), not ``in``: on Python 3.11 ``bytes in bytes`` first tries the needle as an
    # integer and raises and drops a TypeError for it, which cost more than the search
    # (a few of these run for every relayed request).
    for raw in encoded:
        if data.find(raw) >= 0:
            data = data.replace(raw, _REDACTED_BYTES)
    if values and data.find(b"\\") >= 0:
        forms = _escaped_forms(values)
        if forms.clue_bytes.search(data):
            data = forms.bytes.sub(_REDACTED_BYTES, data)
    return data


def secrets_generation() -> int:
    """A number that moves whenever the registered secrets change: what a cache of
    masked text is good for (it holds only while the number stays)."""
    return _generation


class _EscapedForms:
    """Patterns for every JSON spelling of the known values, and a quick clue: an escape
    of a character some value holds. Without one in the data, no spelling but the literal
    one can be there, and the (slower) full patterns are not run."""

    __slots__ = ("bytes", "clue_bytes", "clue_text", "text", "values")

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = values
        text = "|".join("".join(_json_char(c, as_bytes=False) for c in v) for v in values)
        raw = "|".join("".join(_json_char(c, as_bytes=True) for c in v) for v in values)
        self.text = re.compile(text)
        self.bytes = re.compile(raw.encode("latin-1"))
        chars = sorted({c for v in values for c in v})
        # Starting with a literal backslash, so the search skips ahead to each one.
        clue = r"\\(?:u(?:" + "|".join(_hex(_units(c)[0]) for c in chars) + ")"
        short = "".join(re.escape(c) for c in chars if c in '/"\\')
        clue += f"|[{short}])" if short else ")"
        self.clue_text = re.compile(clue)
        self.clue_bytes = re.compile(clue.encode("ascii"))


_escaped_cache: _EscapedForms | None = None


def _escaped_forms(values: tuple[str, ...]) -> _EscapedForms:
    global _escaped_cache  # noqa: PLW0603 - replaced whole; a race only rebuilds it
    cached = _escaped_cache
    if cached is None or cached.values != values:
        cached = _escaped_cache = _EscapedForms(values)
    return cached


def _units(char: str) -> list[int]:
    code = ord(char)
    if code < 0x10000:
        return [code]
    return [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF)]


def _hex(unit: int) -> str:
    """A pattern for the four hex digits of ``unit``, either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{unit:04x}")


def _json_char(char: str, *, as_bytes: bool) -> str:
    """A pattern for ``char`` as JSON may write it in a string (as latin-1 text when it
    will match bytes: the literal is then the character's UTF-8 encoding)."""
    literal = char.encode("utf-8").decode("latin-1") if as_bytes else char
    spellings = [re.escape(literal)]
    units = _units(char)
    spellings.append("".join(r"\\u" + _hex(unit) for unit in units))
    if char in '/"\\':
        spellings.append(re.escape("\\" + char))
    return "(?:" + "|".join(spellings) + ")"


def may_hold_token_shape(text: str) -> bool:
    """False only when :data:`TOKEN_SHAPES` cannot match ``text``: every match holds
    ``gh`` (a ``gh?_`` prefix), ``github_pat_`` or ``tid=`` as written, or ``bearer`` or
    ``token`` in some case (``str.lower`` folds every character the pattern's
    case-insensitive part matches, the Kelvin sign included). The regular expression
    costs several times this test, on every log line and every access line."""
    if "gh" in text or "tid=" in text or "github_pat_" in text:
        return True
    lower = text.lower()
    return "token" in lower or "bearer" in lower


def redact(text: str, extra: Iterable[Secret] = ()) -> str:
    """Return ``text`` with registered secrets, ``extra`` and token shapes masked."""
    for value in (s.reveal() for s in extra):
        if value and value in text:
            text = text.replace(value, REDACTED)
    text = mask_secrets(text)
    return TOKEN_SHAPES.sub(REDACTED, text) if may_hold_token_shape(text) else text


def redact_line(text: str) -> str:
    """A log line's text as :class:`RedactingFilter` leaves a record's message: invisible
    characters dropped, then secrets and token shapes masked (for a program that writes
    lines without a logging record, as serve writes its access lines)."""
    return redact(drop_invisible(text))


def scrub(text: object, *, limit: int = 200) -> str:
    """Server text made fit for a message: invisible characters removed *before* secrets
    are masked (a token split by a zero-width character would otherwise pass the mask and
    be joined back together by the cleaning), then cut to ``limit``."""
    from ._text import clean

    return clean(redact(clean(text, limit=limit * 4)), limit=limit)


# Invisible characters are removed from log records before masking, for the same reason
# as in scrub(); newlines and tabs stay.


# What every LogRecord carries; anything else on a record came from ``extra=`` (what
# structured/JSON formatters print as fields).
_STANDARD_FIELDS = frozenset(
    {*vars(logging.LogRecord("", 0, "", 0, "", None, None)), "message", "asctime"}
)
# How deep into nested extra values (dicts of lists of dicts...) the filter looks before it
# shows a value only through its redacted repr.
_MAX_DEPTH = 6


def _scrub_field(value: object, depth: int = 0) -> object:
    """``value`` with secrets masked, keeping its shape where a formatter would show it."""
    if isinstance(value, str):
        return redact(drop_invisible(value))
    if depth < _MAX_DEPTH:
        if isinstance(value, Mapping):
            # Keys stay hashable: only text keys are rewritten.
            return {
                (_scrub_field(k) if isinstance(k, str) else k): _scrub_field(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple | set | frozenset):
            return [_scrub_field(item, depth + 1) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    # Anything else reaches a log line through str() or repr(): if either shows a secret,
    # only the masked text goes on.
    for text in (repr(value), str(value)):
        masked = redact(drop_invisible(text))
        if masked != text:
            return masked
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that rewrites each record with secrets masked: its message, its
    arguments, its exception and stack, and every field passed with ``extra=``.

    Attach it to handlers (it then sees records from every logger) or to loggers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must not escape unredacted
            message = f"{record.msg!r} (unformattable arguments)"
        record.msg = redact_line(message)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # Format the traceback now, redacted, so handlers never format the raw one.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        fields = record.__dict__
        for name in fields.keys() - _STANDARD_FIELDS:
            fields[name] = _scrub_field(fields[name])
        return True


def install_redaction(logger: logging.Logger | None = None) -> RedactingFilter:
    """Attach one :class:`RedactingFilter` to ``logger`` (root by default) and its handlers."""
    target = logger if logger is not None else logging.getLogger()
    for existing in target.filters:
        if isinstance(existing, RedactingFilter):
            flt = existing
            break
    else:
        flt = RedactingFilter()
        target.addFilter(flt)
    for handler in target.handlers:
        if flt not in handler.filters:
            handler.addFilter(flt)
    return flt
