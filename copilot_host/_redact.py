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
from collections.abc import Iterable

from ._secret import Secret

__all__ = [
    "REDACTED",
    "TOKEN_SHAPES",
    "RedactingFilter",
    "install_redaction",
    "known_values",
    "redact",
    "register_secret",
    "scrub",
]

REDACTED = "[REDACTED]"

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
_known: weakref.WeakSet[Secret] = weakref.WeakSet()
_generation = 0
_cache: tuple[tuple[int, int], tuple[str, ...]] = ((-1, -1), ())


def register_secret(secret: Secret) -> None:
    """Ask the redaction filter to scrub this exact value wherever it appears."""
    global _generation  # noqa: PLW0603 - guarded by _lock
    if len(secret.reveal()) >= 6:
        with _lock:
            if secret not in _known:
                _known.add(secret)
                _generation += 1


def known_values() -> tuple[str, ...]:
    """The registered values, longest first (so a value inside another is masked whole)."""
    global _cache  # noqa: PLW0603 - guarded by _lock
    with _lock:
        # Rebuilt only when a secret was added or collected: redaction runs per log record
        # and validation per model string, so sorting on every call was the hot spot.
        key = (_generation, len(_known))
        if _cache[0] != key:
            _cache = (key, tuple(sorted((s.reveal() for s in _known), key=len, reverse=True)))
        return _cache[1]


def redact(text: str, extra: Iterable[Secret] = ()) -> str:
    """Return ``text`` with registered secrets, ``extra`` and token shapes masked."""
    for value in [*(s.reveal() for s in extra), *known_values()]:
        if value and value in text:
            text = text.replace(value, REDACTED)
    return TOKEN_SHAPES.sub(REDACTED, text)


def scrub(text: object, *, limit: int = 200) -> str:
    """Server text made fit for a message: invisible characters removed *before* secrets
    are masked (a token split by a zero-width character would otherwise pass the mask and
    be joined back together by the cleaning), then cut to ``limit``."""
    from ._text import clean

    return clean(redact(clean(text, limit=limit * 4)), limit=limit)


# Format characters (zero-width, bidi) and line/paragraph separators: removed from log
# records before masking, for the same reason as in scrub(); newlines and tabs stay.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u206f\ufeff\ufff9-\ufffb]"
)


class RedactingFilter(logging.Filter):
    """A logging filter that rewrites each record's message with secrets masked.

    Attach it to handlers (it then sees records from every logger) or to loggers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must not escape unredacted
            message = f"{record.msg!r} (unformattable arguments)"
        record.msg = redact(_INVISIBLE.sub("", message))
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # Format the traceback now, redacted, so handlers never format the raw one.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
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
