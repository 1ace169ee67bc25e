"""Sans-IO plumbing shared by every protocol step: the request and response values the
shells carry, strict JSON decoding, and typed field access.

Nothing here performs I/O. Every failure is a :class:`ResponseError`, so a parser fed
arbitrary bytes raises only ``CopilotHostError`` subclasses.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

from .._errors import CopilotHostError, ResponseError
from .._safety._redact import scrub
from .._safety._secret import Secret

__all__ = [
    "INVALID",
    "LARGE_BODY",
    "SMALL_BODY",
    "WireRequest",
    "WireResponse",
    "decode",
    "json_object",
    "reads_response",
    "opt_number",
    "opt_object",
    "opt_str",
    "req_number",
    "req_str",
    "server_message",
    "take_secret",
]

# Device, token and user answers are a few hundred bytes; a model inventory with a few
# thousand entries stays well under 8 MiB.
SMALL_BODY = 64 * 1024
LARGE_BODY = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One request as a protocol step builds it.

    ``headers`` and ``body`` can hold credentials (a token, a device code), so neither is
    in the repr. ``limit`` caps the response body; ``what`` names the step in messages;
    ``budget`` (seconds) bounds the whole step below the sender's own budget.
    """

    method: str
    url: str
    what: str
    headers: tuple[tuple[str, str], ...] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)
    limit: int = SMALL_BODY
    retry: bool = False
    budget: float | None = None


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

    @property
    def request_id(self) -> str | None:
        """GitHub's id for this answer (``x-github-request-id``), for support requests."""
        return self.headers.get("x-github-request-id")


_P = ParamSpec("_P")
_T = TypeVar("_T")


def reads_response(
    parse: Callable[Concatenate[WireResponse, _P], _T],
) -> Callable[Concatenate[WireResponse, _P], _T]:
    """Every error a parser raises about an answer names that answer's request id.

    One place instead of every raise site: the parser's own error is amended in flight
    (message and ``request_id``) and re-raised with its traceback.
    """

    @functools.wraps(parse)
    def parse_noting_request_id(
        response: WireResponse, /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        try:
            return parse(response, *args, **kwargs)
        except CopilotHostError as exc:
            exc.note_request_id(response.request_id)
            raise

    return parse_noting_request_id


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-standard JSON constant {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


# What decode() returns for a body that is not JSON.
INVALID = object()


def decode(body: bytes) -> object:
    """The JSON value of ``body``, or ``INVALID``. Its own frame, gone before anyone
    raises: the decoded text (which may hold a token) never sits in a traceback."""
    try:
        return json.loads(
            body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float
        )
    except (ValueError, RecursionError):
        return INVALID


def json_object(response: WireResponse, what: str) -> dict[str, object]:
    """Decode the body as one JSON object, or raise ``ResponseError``.

    NaN/Infinity, overflowing floats, integers with thousands of digits, deep nesting and
    invalid UTF-8 are all malformed answers, not crashes.
    """
    value = decode(response.body)
    if value is INVALID:
        raise ResponseError(
            f"{what} answered with something that is not valid JSON "
            f"(HTTP {response.status}); try again later"
        )
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


def take_secret(
    obj: dict[str, object], key: str, what: str, *, shape: re.Pattern[str]
) -> Secret | None:
    """Remove ``key`` from a decoded answer and return it as a :class:`Secret` (None when
    absent). Wrapped before it is checked, and before anything else of the answer is: no
    frame of a refusal holds a credential as plain text for a locals-capturing traceback
    (pytest -l, rich, error trackers) to show."""
    value = obj.pop(key, None)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong(what, key, "a string")
    secret = Secret(value)
    del value
    if not shape.fullmatch(secret.reveal()):
        raise ResponseError(f"{what} answered with a malformed {key.replace('_', ' ')}")
    return secret


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


def opt_object(obj: Mapping[str, object], key: str, what: str) -> dict[str, object] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _wrong(what, key, "an object")
    return value


def server_message(response: WireResponse) -> str:
    """The server's own explanation, if it gave one, made safe for a terminal.

    JSON answers carry it in ``error``/``message``/``error_description``; many Copilot API
    refusals are plain text, whose first line is the explanation.
    """
    value = decode(response.body)
    if value is INVALID:
        content_type = response.headers.get("content-type", "")
        if not content_type.startswith("text/plain"):
            return ""
        first = response.body[:1024].decode("utf-8", "replace").strip().split("\n", 1)[0]
        return scrub(first, limit=200)
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
