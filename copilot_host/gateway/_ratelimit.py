"""The one upstream answer the gateway reshapes: the service's rate-limit refusal.

The Copilot API refuses a request over the account's session or weekly rate limit with
429 and ``{"error": {"message": ..., "code": "user_weekly_rate_limited"}}`` (reported:
microsoft/vscode #311205; github/copilot-cli #2740, #2769), without ``Retry-After``, in
the OpenAI shape whatever the endpoint. An SDK backs off on a 429 only when it can read
it, so the refusal reaches the client as 429 in its own API's shape, with ``Retry-After``
from the window's reset (the answer's ``Retry-After``, else the ``rst`` of its
``x-usage-ratelimit-<window>`` header), and the gateway logs one readable line with the
reset time. Every other upstream answer keeps its status and body.
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ._answers import error_body

__all__ = ["RATE_LIMIT_CODES", "RateLimited", "rate_limited"]

# The refusal codes of the two windows (x-usage-ratelimit-session / -weekly).
# ``user_global_rate_limited`` is the session window's refusal as reported in
# github/copilot-cli #2769 ("a rate limit that restricts the number of Copilot model
# requests you can make within a specific time period").
RATE_LIMIT_CODES = {
    "user_weekly_rate_limited": "weekly",
    "user_session_rate_limited": "session",
    "user_global_rate_limited": "session",
}


@dataclass(frozen=True, slots=True)
class RateLimited:
    """The reshaped refusal: its body, ``Retry-After`` seconds and the log line."""

    body: bytes
    retry_after: int | None
    line: str


def _reset_of(window: str, headers: Mapping[str, str], now: float) -> float | None:
    given = headers.get("retry-after", "").strip()
    if given.isdigit():
        return now + int(given)
    raw = headers.get(f"x-usage-ratelimit-{window}", "")
    rst = urllib.parse.parse_qs(raw).get("rst", [""])[0]
    try:
        when = datetime.fromisoformat(rst.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def rate_limited(
    body: bytes, headers: Mapping[str, str], shape: str, *, now: float | None = None
) -> RateLimited | None:
    """The reshaped answer for a 429 ``body``, or None when it is no rate-limit refusal."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    error = document.get("error") if isinstance(document, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    window = RATE_LIMIT_CODES.get(code) if isinstance(code, str) else None
    if window is None or not isinstance(code, str):
        return None
    now = time.time() if now is None else now
    reset = _reset_of(window, headers, now)
    retry = None if reset is None else max(1, math.ceil(reset - now))
    when = (
        "at an unknown time"
        if reset is None
        else "at " + datetime.fromtimestamp(reset, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    )
    message = f"GitHub Copilot's {window} rate limit is reached; it resets {when}"
    return RateLimited(
        body=error_body(shape, 429, code, message),
        retry_after=retry,
        line=f"upstream refused: the account's {window} rate limit is reached; it resets {when}",
    )
