"""Step 2 of the device flow: poll github.com for the person's decision (sans-IO).

GitHub answers HTTP 200 with an ``error`` field while waiting (RFC 8628 section 3.5 says
400; both are read the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._errors import AccessDeniedError, DeviceCodeExpiredError, LoginError, ResponseError
from .._hosts import CopilotDeviceLogin, Pending
from .._safety._redact import register_secret, scrub
from .._safety._secret import Secret
from ._device_code import MAX_EXPIRES_IN
from ._headers import EditorIdentity, oauth_headers
from ._oauth import (
    ACCESS_DENIED,
    AUTHORIZATION_PENDING,
    EXPIRED_TOKEN,
    SLOW_DOWN,
    device_token_body,
)
from ._status import status_error
from ._urls import ACCESS_TOKEN_URL
from ._wire import (
    WireRequest,
    WireResponse,
    json_object,
    opt_number,
    opt_str,
    reads_response,
    take_secret,
)

__all__ = ["SLOW_DOWN_STEP", "Granted", "build_poll_request", "parse_poll"]

WHAT = "GitHub's device login poll"
# RFC 8628 section 3.5: each slow_down adds 5 seconds for this and every later poll.
SLOW_DOWN_STEP = 5.0
_TOKEN = re.compile(r"[\x21-\x7e]{1,1024}")


@dataclass(frozen=True, slots=True)
class Granted:
    """The person authorized: the GitHub OAuth token, not yet verified or stored."""

    token: Secret = field(repr=False)


def build_poll_request(
    client_id: str, login: CopilotDeviceLogin, editor: EditorIdentity
) -> WireRequest:
    headers = oauth_headers(editor)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    body = device_token_body(client_id, login.device_code.reveal())
    return WireRequest("POST", ACCESS_TOKEN_URL, WHAT, tuple(headers.items()), body)


def _server_interval(body: dict[str, object]) -> float | None:
    interval = opt_number(body, "interval", WHAT)
    if interval is None or interval <= 0:
        return None
    return min(interval, MAX_EXPIRES_IN)


@reads_response
def parse_poll(response: WireResponse, login: CopilotDeviceLogin) -> Pending | Granted:
    """``Pending`` with the interval to keep, ``Granted``, or a typed error ending the login.

    ``login.interval`` is the interval in force (the wait loop keeps it up to date), so
    slow_down grows it by 5 s each time, or to the server's value if that is longer.
    """
    if response.status not in (200, 400, 401):
        raise status_error(response, WHAT)
    body = json_object(response, WHAT)
    # A Secret before any check can raise (see take_secret).
    token = take_secret(body, "access_token", WHAT, shape=_TOKEN)
    refresh = take_secret(body, "refresh_token", WHAT, shape=_TOKEN)
    error = opt_str(body, "error", WHAT, max_len=200)
    if error is None:
        if response.status != 200:
            raise status_error(response, WHAT)
        if token is None:
            raise ResponseError(f"{WHAT} answered with neither an error nor a usable token")
        register_secret(token)
        if refresh is not None or body.get("expires_in") is not None:
            # A GitHub App with expiring user tokens: the token stops working in hours and
            # copilot-host never refreshes a GitHub token, so a stored login would just die.
            if refresh is not None:
                register_secret(refresh)
            raise LoginError(
                "this OAuth app issues expiring user tokens (refresh_token/expires_in), which "
                'copilot-host cannot refresh; turn off "Expire user authorization tokens" '
                "in the app's settings or use another app; nothing was stored",
                code="expiring_user_token",
            )
        return Granted(token)
    server = _server_interval(body)
    if error == AUTHORIZATION_PENDING:
        return Pending(max(login.interval, server or 0.0))
    if error == SLOW_DOWN:
        return Pending(max(login.interval + SLOW_DOWN_STEP, server or 0.0))
    if error == EXPIRED_TOKEN:
        raise DeviceCodeExpiredError(
            "the device code expired before it was approved; run the login again"
        )
    if error == ACCESS_DENIED:
        raise AccessDeniedError("the login was denied on GitHub; nothing was stored")
    raw = body.get("error_description")
    description = raw if isinstance(raw, str) and raw else error
    detail = scrub(f"{error}: {description}" if description != error else error, limit=200)
    raise ResponseError(f"GitHub ended the device login: {detail}", code="oauth_error")
