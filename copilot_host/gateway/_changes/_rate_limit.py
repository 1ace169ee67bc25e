"""The one upstream answer the gateway reshapes: the service's rate-limit refusal.

The Copilot API refuses a request over the account's session or weekly rate limit with
429 and ``{"error": {"message": ..., "code": "user_weekly_rate_limited"}}`` (reported:
microsoft/vscode #311205; github/copilot-cli #2740, #2769), without ``Retry-After``, in
the OpenAI shape whatever the endpoint. An SDK backs off on a 429 only when it can read
it, so the refusal reaches the client as 429 in its own API's shape, with ``Retry-After``
from the window's reset (the answer's ``Retry-After``, else the ``rst`` of its
``x-usage-ratelimit-<window>`` header), and the gateway logs one readable line with the
reset time. Every other upstream answer keeps its status and body.

A ``Retry-After`` is read only as RFC 9110 writes it: at most ten ASCII digits (seconds) or
an HTTP date; anything else is as if it were absent. A reset further away than
:data:`MAX_RESET` is told as that far (no window is longer than a week).
"""

from __future__ import annotations

import email.utils
import math
import re
import time
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime

from .._json import NotJson, loads
from .._protocols import Api
from ._change import Change, Reshaped

__all__ = ["MAX_RESET", "RATE_LIMIT_CODES", "RateLimitRefusal", "retry_after_seconds"]

# The refusal codes of the two windows (x-usage-ratelimit-session / -weekly).
# ``user_global_rate_limited`` is the session window's refusal as reported in
# github/copilot-cli #2769 ("a rate limit that restricts the number of Copilot model
# requests you can make within a specific time period").
RATE_LIMIT_CODES = {
    "user_weekly_rate_limited": "weekly",
    "user_session_rate_limited": "session",
    "user_global_rate_limited": "session",
}
MAX_RESET = 7 * 24 * 3600.0
_SECONDS = re.compile(r"[0-9]{1,10}")


def retry_after_seconds(value: str, now: float) -> float | None:
    """When a ``Retry-After`` value says to come back (a time), or None when it is not one
    RFC 9110 allows: delay seconds as ASCII digits, or an HTTP date."""
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return now + int(value)
    if not value or len(value) > 64 or not value.isascii():
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _reset_of(window: str, headers: Mapping[str, str], now: float) -> float | None:
    given = headers.get("retry-after")
    if given is not None:
        found = retry_after_seconds(given, now)
        if found is not None:
            return found
    raw = headers.get(f"x-usage-ratelimit-{window}", "")
    rst = urllib.parse.parse_qs(raw[:1024]).get("rst", [""])[0]
    if len(rst) > 64:
        return None
    try:
        when = datetime.fromisoformat(rst.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class RateLimitRefusal(Change):
    name = "rate-limit"
    apis = frozenset({"chat", "responses", "messages", "embeddings"})
    summary = (
        "an upstream 429 rate-limit refusal reaches the client in its API's shape, with "
        "Retry-After from the window's reset"
    )
    evidence = "rate-limit"
    check = (
        "none: the emulator answers the refusal as the service is reported to "
        "(docs/EMULATOR.md, Rate-limit windows)"
    )
    switchable = False

    def reshape(
        self, api: Api, status: int, body: bytes, headers: Mapping[str, str]
    ) -> Reshaped | None:
        if status != 429:
            return None
        try:
            document = loads(body)
        except NotJson:
            return None
        error = document.get("error") if isinstance(document, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        window = RATE_LIMIT_CODES.get(code) if isinstance(code, str) else None
        if window is None or not isinstance(code, str):
            return None
        now = time.time()
        reset = _reset_of(window, headers, now)
        if reset is not None:
            reset = min(max(reset, now), now + MAX_RESET)
        retry = None if reset is None else max(1, math.ceil(reset - now))
        when = (
            "at an unknown time"
            if reset is None
            else "at " + datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        )
        message = f"GitHub Copilot's {window} rate limit is reached; it resets {when}"
        return Reshaped(
            api.errors.body(429, code, message),
            retry,
            f"upstream refused: the account's {window} rate limit is reached; it resets {when}",
        )
