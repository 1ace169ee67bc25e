"""Step 3: trade the GitHub credential for a short-lived Copilot session (sans-IO).

The answer names the inference origin; it must be on the fixed allowlist before anything
is ever sent there. Deadlines are measured from receipt, against the server's ``Date``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._errors import (
    CopilotHostError,
    EntitlementError,
    ResponseError,
    ServerError,
)
from .._hosts import CopilotSession, LoginIdentity
from .._origin import CopilotEndpoint, default_allowlist
from .._safety._redact import register_secret, scrub
from .._safety._secret import Secret
from .._safety._text import clean
from .._sessions._policy import deadlines_from_exchange
from ._headers import EditorIdentity, exchange_headers
from ._status import (
    client_outdated_error,
    policy_error,
    rate_limit_error,
    server_date,
    status_error,
    stored_login_refused,
)
from ._urls import COPILOT_TOKEN_URL
from ._wire import (
    WireRequest,
    WireResponse,
    json_object,
    opt_number,
    opt_object,
    opt_str,
    reads_response,
    req_number,
    req_str,
    take_secret,
)

__all__ = [
    "KNOWN_NOTIFICATIONS",
    "SessionGrant",
    "build_exchange_request",
    "entitlement_error",
    "parse_exchange",
    "parse_grant",
]

WHAT = "the Copilot session exchange"
_TOKEN = re.compile(r"[\x21-\x7e]{1,8192}")
_NOTIFICATION_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")
_SETTINGS = "https://github.com/settings/copilot"

# What a person can do about each refusal GitHub explains by id: the ids GitHub's own
# Copilot client knows (docs/WIRE.md, "Session exchange"); any other id is shown as sent.
_SUPPORT = "https://support.github.com"
KNOWN_NOTIFICATIONS: Mapping[str, str] = {
    "no_copilot_access": (
        f"this GitHub account has no Copilot access; start a plan or ask your organization "
        f"for a seat at {_SETTINGS}, then log in again"
    ),
    "not_signed_up": (
        "this GitHub account has not signed up for Copilot; sign up (Copilot Free needs no "
        f"payment) at {_SETTINGS}, then log in again"
    ),
    "subscription_ended": (
        f"the Copilot subscription of this GitHub account has ended; renew it at {_SETTINGS}"
    ),
    "access_revoked": (
        "Copilot access for this account was revoked (by its organization or GitHub); "
        "ask your organization's administrator, or contact GitHub Support"
    ),
    "enterprise_managed_user_account": (
        "this managed (EMU) account gets Copilot only through its enterprise; ask your "
        "enterprise administrator to assign a Copilot seat"
    ),
    "feature_flag_blocked": "GitHub has blocked Copilot for this account; contact GitHub Support",
    "spammy_user": (
        f"GitHub has restricted this account, so it cannot use Copilot; contact {_SUPPORT}"
    ),
    "billing_locked": (
        "this account's billing is locked (a failed payment); fix it in your GitHub "
        "billing settings, then try again"
    ),
    "trade_restricted": (
        f"Copilot is not available to this account because of trade restrictions; see {_SUPPORT}"
    ),
    "trade_restricted_country": (
        f"Copilot is not available in the country this account is used from; see {_SUPPORT}"
    ),
    "expired_coupon": f"the coupon that paid for Copilot has expired; renew at {_SETTINGS}",
    "revoked_coupon": f"the coupon that paid for Copilot was revoked; renew at {_SETTINGS}",
    "codespaces_demo_inactive": (
        "this Codespaces demo account's Copilot access is inactive; log in with your own account"
    ),
    "go_http_client": (
        "GitHub refused a Copilot session to this client; upgrade copilot-host, or report "
        "it if it persists"
    ),
    "programmatic_token_generation": (
        "GitHub refused a Copilot session for a scripted login; log in again with "
        "`copilot-host login`, or contact GitHub Support if it persists"
    ),
    "server_error": "GitHub could not issue a Copilot session (a server error); try again later",
}
# Documentation to read, not a setting: read-only, so changing it cannot look as if it did.
KNOWN_NOTIFICATIONS = MappingProxyType(dict(KNOWN_NOTIFICATIONS))


def build_exchange_request(github_token: Secret, editor: EditorIdentity) -> WireRequest:
    headers = exchange_headers(editor)
    headers["Authorization"] = f"token {github_token.reveal()}"
    return WireRequest("GET", COPILOT_TOKEN_URL, WHAT, tuple(headers.items()), retry=True)


def entitlement_error(response: WireResponse) -> CopilotHostError:
    """A 403 that is not a rate limit: a specific message per GitHub notification id."""
    limited = rate_limit_error(response, WHAT)
    if limited is not None:
        return limited
    refused = policy_error(response, WHAT)
    if refused is not None:
        return refused
    try:
        body = json_object(response, WHAT)
        details = opt_object(body, "error_details", WHAT) or {}
        notification = opt_str(details, "notification_id", WHAT, max_len=64)
        server_text = opt_str(details, "message", WHAT, max_len=2000) or opt_str(
            body, "message", WHAT, max_len=2000
        )
    except ResponseError:
        notification, server_text = None, None
    detail = scrub(server_text, limit=200) if server_text else ""
    if notification is None and "personal access token" in detail.lower():
        return EntitlementError(
            "GitHub does not grant Copilot sessions to personal access tokens; log in with "
            "`copilot-host login` (the device flow) instead",
            code="personal_access_token",
        )
    if notification == "server_error":
        return ServerError(KNOWN_NOTIFICATIONS[notification])
    if notification is not None and notification in KNOWN_NOTIFICATIONS:
        return EntitlementError(KNOWN_NOTIFICATIONS[notification], code=notification)
    if notification is not None and _NOTIFICATION_ID.fullmatch(notification):
        return EntitlementError(
            f"GitHub refused a Copilot session ({notification})"
            + (f": {detail}" if detail else f"; see {_SETTINGS}"),
            code=notification,
        )
    return EntitlementError(
        "GitHub refused a Copilot session for this account (HTTP 403)"
        + (f": {detail}" if detail else f"; see {_SETTINGS}")
    )


@dataclass(frozen=True, slots=True)
class SessionGrant:
    """What an exchange answered, before it is tied to a login.

    The login step checks entitlement with a grant and drops it; a stored login turns it
    into a :class:`CopilotSession` with :meth:`session`.
    """

    token: Secret = field(repr=False)
    endpoint: CopilotEndpoint
    received_monotonic: float
    refresh_monotonic: float
    expires_monotonic: float
    expires_wall: float
    sku: str | None

    def session(self, identity: LoginIdentity) -> CopilotSession:
        return CopilotSession(
            token=self.token,
            identity=identity,
            endpoint=self.endpoint,
            received_monotonic=self.received_monotonic,
            refresh_monotonic=self.refresh_monotonic,
            expires_monotonic=self.expires_monotonic,
            expires_wall=self.expires_wall,
            sku=self.sku,
        )


def _refusal(response: WireResponse) -> CopilotHostError | None:
    """The typed error for an answer that grants no session, else None."""
    if response.status == 401:
        return stored_login_refused()
    outdated = client_outdated_error(response, WHAT)
    if outdated is not None:
        return outdated
    if response.status == 403:
        return entitlement_error(response)
    if response.status == 404:
        # api.github.com hides an endpoint a credential may not use behind a 404: a token
        # minted for an OAuth app that GitHub has not enabled for Copilot lands here.
        return EntitlementError(
            f"{WHAT} was refused (HTTP 404): this login's OAuth app is not enabled for "
            "Copilot; log in again with the default client_id (or a Copilot-enabled app)",
            code="oauth_app_not_enabled",
        )
    if response.status != 200:
        return status_error(response, WHAT)
    return None


@reads_response
def parse_grant(response: WireResponse) -> SessionGrant:
    """The session an exchange granted, vetted; or the typed error of a refusal."""
    refused = _refusal(response)
    if refused is not None:
        raise refused
    body = json_object(response, WHAT)
    # Wrapped before anything else can raise: no frame of a refusal (an origin off the
    # allowlist, a malformed field) holds the token as plain text for a traceback that
    # captures locals to show.
    token = take_secret(body, "token", WHAT, shape=_TOKEN)
    if token is None:
        raise ResponseError(f"{WHAT} answered without a session token")
    expires_at = req_number(body, "expires_at", WHAT)
    refresh_in = opt_number(body, "refresh_in", WHAT)
    endpoints = opt_object(body, "endpoints", WHAT)
    if endpoints is None:
        raise ResponseError(f"{WHAT} answered without the inference endpoint ('endpoints.api')")
    api = req_str(endpoints, "api", WHAT, max_len=2048)
    # Nothing is ever sent to an origin that is not on the fixed list: this is the one
    # place every session's endpoint is vetted.
    endpoint = default_allowlist().vet(api)
    sku = opt_str(body, "sku", WHAT, max_len=200)
    refresh_at, expires_mono, expires_wall = deadlines_from_exchange(
        received_monotonic=response.received_monotonic,
        received_wall=response.received_wall,
        expires_at=expires_at,
        refresh_in=refresh_in,
        server_date=server_date(response),
    )
    register_secret(token)
    return SessionGrant(
        token=token,
        endpoint=endpoint,
        received_monotonic=response.received_monotonic,
        refresh_monotonic=refresh_at,
        expires_monotonic=expires_mono,
        expires_wall=expires_wall,
        sku=clean(sku, limit=64) if sku is not None else None,
    )


def parse_exchange(response: WireResponse, identity: LoginIdentity) -> CopilotSession:
    """The session for the stored login ``identity``."""
    return parse_grant(response).session(identity)
