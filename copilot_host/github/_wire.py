"""Sans-IO plumbing shared by every protocol step: the request and response values the
shells carry, strict JSON decoding, and typed field access.

Nothing here performs I/O. Every failure is a :class:`ResponseError`, so a parser fed
arbitrary bytes raises only ``CopilotHostError`` subclasses.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._errors import ResponseError
from .._redact import scrub

__all__ = [
    "LARGE_BODY",
    "SMALL_BODY",
    "WireRequest",
    "WireResponse",
    "json_object",
    "opt_bool",
    "opt_int",
    "opt_number",
    "opt_object",
    "opt_str",
    "req_number",
    "req_str",
    "server_message",
]

# Device, token and user answers are a few hundred bytes; a model inventory with a few
# thousand entries stays well under 8 MiB.
SMALL_BODY = 64 * 1024
LARGE_BODY = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One request as a protocol step builds it.

    ``headers`` and ``body`` can hold credentials (a token, a device code), so neither is
    in the repr. ``limit`` caps the response body; ``what`` names the step in messages.
    """

    method: str
    url: str
    what: str
    headers: tuple[tuple[str, str], ...] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)
    limit: int = SMALL_BODY
    retry: bool = False


@dataclass(frozen=True, slots=True)
class WireResponse:
    """An answer, fully read (within the cap), stamped with when it arrived.

    ``headers`` has lower-case names. ``received_monotonic`` orders deadlines;
    ``received_wall`` is compared with the server's ``Date`` only.
    """

    status: int
    headers: Mapping[str, str]
    body: bytes = field(repr=False)
    received_monotonic: float
    received_wall: float


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def json_object(response: WireResponse, what: str) -> dict[str, object]:
    """Decode the body as one JSON object, or raise ``ResponseError``.

    NaN/Infinity, overflowing floats, integers with thousands of digits, deep nesting and
    invalid UTF-8 are all malformed answers, not crashes.
    """
    try:
        text = response.body.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        raise ResponseError(
            f"{what} answered with something that is not valid JSON "
            f"(HTTP {response.status}); try again later"
        ) from None
    if not isinstance(value, dict):
        raise ResponseError(f"{what} answered with JSON that is not an object")
    return value


def _wrong(what: str, key: str, expected: str) -> ResponseError:
    return ResponseError(f"{what} answered with a field {key!r} that is not {expected}")


def _missing(what: str, key: str) -> ResponseError:
    return ResponseError(f"{what} answered without the field {key!r}")


def opt_str(obj: Mapping[str, object], key: str, what: str, *, max_len: int = 1024) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise _wrong(what, key, f"a string of 1-{max_len} characters")
    return value


def req_str(obj: Mapping[str, object], key: str, what: str, *, max_len: int = 1024) -> str:
    value = opt_str(obj, key, what, max_len=max_len)
    if value is None:
        raise _missing(what, key)
    return value


def opt_number(obj: Mapping[str, object], key: str, what: str) -> float | None:
    """A finite JSON number (int or float; ``true`` is not a number here)."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(what, key, "a number")
    if not math.isfinite(value) or abs(value) > 1e15:
        raise _wrong(what, key, "a number in range")
    return float(value)


def req_number(obj: Mapping[str, object], key: str, what: str) -> float:
    value = opt_number(obj, key, what)
    if value is None:
        raise _missing(what, key)
    return value


def opt_int(obj: Mapping[str, object], key: str, what: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 10**15:
        raise _wrong(what, key, "an integer in range")
    return value


def opt_bool(obj: Mapping[str, object], key: str, what: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _wrong(what, key, "true or false")
    return value


def opt_object(obj: Mapping[str, object], key: str, what: str) -> dict[str, object] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _wrong(what, key, "an object")
    return value


def server_message(response: WireResponse) -> str:
    """The server's own explanation, if it gave one, made safe for a terminal."""
    try:
        value = json.loads(response.body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(value, dict):
        return ""
    parts: list[str] = []
    for key in ("error", "message", "error_description"):
        text = value.get(key)
        if isinstance(text, str) and text:
            parts.append(text)
        elif isinstance(text, dict):
            nested = text.get("message")
            if isinstance(nested, str) and nested:
                parts.append(nested)
    # A hostile server may echo a credential back: registered secrets and token shapes go.
    return scrub(": ".join(parts), limit=200)
