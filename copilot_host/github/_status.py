"""Turning an HTTP status that is not a success into the right typed error (pure)."""

from __future__ import annotations

import email.utils
import math
import re
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime

from .._errors import (
    ClientOutdatedError,
    CopilotHostError,
    EntitlementError,
    LoginRevokedError,
    QuotaExceededError,
    ResponseError,
    ServerError,
)
from .._sessions._refusals import refusal_of
from ._wire import INVALID, WireResponse, decode, server_message

__all__ = [
    "CLIENT_NOT_SUPPORTED",
    "DEFAULT_BACKOFF",
    "MAX_RETRY_AFTER",
    "UPGRADE_HINT",
    "client_outdated_error",
    "minimum_version",
    "parse_instant",
    "policy_error",
    "quota_exceeded_error",
    "rate_limit_error",
    "retry_after",
    "retry_delay",
    "server_date",
    "status_error",
    "stored_login_refused",
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


def parse_instant(text: object) -> datetime | None:
    """An ISO 8601 instant (``2026-12-01T00:00:00Z``) or a date (midnight UTC), as an
    aware UTC datetime; None for anything else."""
    if not isinstance(text, str) or not 8 <= len(text) <= 40:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def _snapshot_reset(response: WireResponse) -> datetime | None:
    """The reset instant (``rst``) of the first quota snapshot header that carries one."""
    for name in sorted(response.headers):
        if name.startswith("x-quota-snapshot-"):
            fields = urllib.parse.parse_qs(response.headers[name][:1024])
            when = parse_instant(fields.get("rst", [""])[0])
            if when is not None:
                return when
    return None


def quota_exceeded_error(
    response: WireResponse, what: str, *, reset_at: datetime | None = None
) -> QuotaExceededError | None:
    """HTTP 402: the account's quota is used up. Says when it resets when the answer (or
    the caller, from a body it read) names the instant."""
    if response.status != 402:
        return None
    when = reset_at or _snapshot_reset(response)
    hint = (
        f"it resets on {when:%Y-%m-%d %H:%M} UTC"
        if when is not None
        else "see https://github.com/settings/copilot for when it resets"
    )
    detail = server_message(response)
    error = QuotaExceededError(
        f"{what} was refused (HTTP 402): this account's Copilot quota is used up"
        + (f" ({detail})" if detail else "")
        + f"; {hint}, or allow overage in the account's Copilot settings"
    )
    error.reset_at = when
    return error


def stored_login_refused() -> LoginRevokedError:
    """A 401 to the stored GitHub token (the exchange, the usage lookup): GitHub no longer
    takes it. The record is kept on disk: one 401 may be GitHub having a bad minute, and
    the person decides."""
    return LoginRevokedError(
        "GitHub no longer accepts the stored login (revoked or expired); "
        "run `copilot-host login` again"
    )


def policy_error(
    response: WireResponse, what: str, identities: Sequence[str] = ()
) -> EntitlementError | None:
    """A refusal by policy (``policy_refused``, ``integrator_refused``) in plain words, else
    None; ``identities`` are the ``Copilot-Integration-Id`` values presented, when known."""
    found = refusal_of(response.status, response.body)
    return None if found is None else found.error(what, identities)


def status_error(
    response: WireResponse, what: str, identities: Sequence[str] = ()
) -> CopilotHostError:
    """The generic error for a status the step has no specific meaning for."""
    refused = policy_error(response, what, identities)
    if refused is not None:
        return refused
    quota = quota_exceeded_error(response, what)
    if quota is not None:
        return quota
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


# Error codes the Copilot service uses when it refuses a client version rather than the
# request: a model with a higher minimum editor version, a retired client or API version.
_OUTDATED_CODES = frozenset(
    {
        "model_not_supported_in_version",
        "client_not_supported",
        "client_version_not_supported",
        "unsupported_client_version",
        "unsupported_api_version",
    }
)
# 466 is the status the Copilot service answers a client it no longer supports with.
CLIENT_NOT_SUPPORTED = 466
UPGRADE_HINT = (
    "upgrade copilot-host (pip install --upgrade copilot-host), or have the embedding "
    "application present a newer editor identity (copilot_host.github.EditorIdentity)"
)


def _error_code(response: WireResponse) -> str | None:
    """The machine-readable error code of an answer, JSON or plain text."""
    value = decode(response.body)
    if value is INVALID:
        text = response.body[:512].decode("utf-8", "replace")
        return next((code for code in _OUTDATED_CODES if code in text), None)
    if not isinstance(value, dict):
        return None
    error = value.get("error")
    for holder in (error if isinstance(error, dict) else {}, value):
        code = holder.get("code")
        if isinstance(code, str):
            return code
    return error if isinstance(error, str) else None


# "Please update it to version 1.104.1 or newer" (a model's floor), "Please upgrade VS Code
# to version 1.109.2+." (a retired editor): the only place the service names a minimum
# (docs/WIRE.md, "Editor identity"; no answer carries one as a field).
_MINIMUM = re.compile(r"version (\d{1,4}(?:\.\d{1,6}){1,3})(?:\+| or newer)")


def minimum_version(text: str) -> str | None:
    """The oldest version a refusal's text names as served, or None when it names none."""
    found = _MINIMUM.search(text[:1024])
    return found.group(1) if found else None


def client_outdated_error(response: WireResponse, what: str) -> ClientOutdatedError | None:
    """The typed error for an answer that refuses this client as too old, else None; its
    ``minimum_version`` is the version the answer named, when it named one."""
    if response.status == CLIENT_NOT_SUPPORTED:
        reason = "the Copilot service no longer supports this client version"
    elif 400 <= response.status < 500 and (code := _error_code(response)) in _OUTDATED_CODES:
        reason = f"the Copilot service requires a newer client ({code})"
    else:
        return None
    detail = server_message(response)
    error = ClientOutdatedError(
        f"{what} was refused (HTTP {response.status}): {reason}"
        + (f": {detail}" if detail else "")
        + f"; {UPGRADE_HINT}"
    )
    error.minimum_version = minimum_version(detail)
    return error
