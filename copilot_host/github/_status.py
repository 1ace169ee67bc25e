"""Turning an HTTP status that is not a success into the right typed error (pure)."""

from __future__ import annotations

import email.utils
import math

from .._errors import CopilotHostError, ResponseError, ServerError
from ._wire import WireResponse, server_message

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_RETRY_AFTER",
    "rate_limit_error",
    "retry_after",
    "retry_delay",
    "server_date",
    "status_error",
]

# One retry only, and only when the server asks for a short pause: a client that sleeps
# for minutes inside a registration call is worse than an error saying when to retry.
MAX_RETRY_AFTER = 10.0
DEFAULT_BACKOFF = 1.0


def retry_after(response: WireResponse) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` as seconds or an HTTP date)."""
    raw = response.headers.get("retry-after", "").strip()
    if not raw:
        return None
    if raw.isascii() and raw.isdigit():  # str.isdigit() also accepts "¹" and "٣"
        return float(int(raw[:9]))
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    # Measure against the server's own clock when it sent one, so local skew is irrelevant.
    now = server_date(response)
    base = now if now is not None else response.received_wall
    delay = when.timestamp() - base
    return max(0.0, delay) if math.isfinite(delay) else None


def server_date(response: WireResponse) -> float | None:
    """The server's ``Date`` header as epoch seconds, when present and well formed."""
    raw = response.headers.get("date")
    if not raw:
        return None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.timestamp() if when.tzinfo is not None else None


def _is_rate_limited(response: WireResponse) -> bool:
    if response.status == 429:
        return True
    if response.status != 403:
        return False
    # api.github.com signals its primary rate limit as 403 with no requests remaining.
    if response.headers.get("x-ratelimit-remaining", "").strip() == "0":
        return True
    return "rate limit" in server_message(response).lower()


def rate_limit_error(response: WireResponse, what: str) -> ServerError | None:
    if not _is_rate_limited(response):
        return None
    wait = retry_after(response)
    hint = f"retry in {math.ceil(wait)} s" if wait is not None else "try again in a minute"
    return ServerError(f"{what} was rate limited by GitHub; {hint}", code="rate_limited")


def status_error(response: WireResponse, what: str) -> CopilotHostError:
    """The generic error for a status the step has no specific meaning for."""
    limited = rate_limit_error(response, what)
    if limited is not None:
        return limited
    detail = server_message(response)
    suffix = f": {detail}" if detail else ""
    if response.status >= 500:
        return ServerError(
            f"{what} failed on GitHub's side (HTTP {response.status}){suffix}; try again later"
        )
    return ResponseError(f"{what} failed with HTTP {response.status}{suffix}")


def retry_delay(response: WireResponse) -> float | None:
    """How long to wait before the one retry of a 429 or 5xx, or ``None``: do not retry."""
    if response.status != 429 and response.status < 500:
        return None
    wait = retry_after(response)
    if wait is None:
        return DEFAULT_BACKOFF
    return wait if wait <= MAX_RETRY_AFTER else None
