"""Step 1 of the device flow: ask github.com for a device code (sans-IO).

Only bounded, validated data reaches the person: a short user code and the one fixed
verification page. The device code itself is a credential and becomes a ``Secret`` at once.
"""

from __future__ import annotations

import re

from .._device import MIN_INTERVAL
from .._errors import ResponseError
from .._hosts import CopilotDeviceLogin
from .._safety._redact import register_secret
from ._headers import EditorIdentity, oauth_headers
from ._oauth import form_body
from ._status import status_error
from ._urls import DEVICE_CODE_URL, VERIFICATION_URI
from ._wire import (
    WireRequest,
    WireResponse,
    json_object,
    opt_number,
    reads_response,
    req_number,
    req_str,
    server_message,
    take_secret,
)

__all__ = [
    "DEFAULT_INTERVAL",
    "MAX_EXPIRES_IN",
    "SCOPE",
    "build_device_code_request",
    "parse_device_code",
]

WHAT = "GitHub's device code request"
# `read:user` is all the Copilot token exchange and `GET /user` need.
SCOPE = "read:user"
MAX_EXPIRES_IN = 900.0
# RFC 8628 section 3.2: when the server names no interval, poll every 5 seconds.
DEFAULT_INTERVAL = 5.0
_USER_CODE = re.compile(r"[A-Z0-9](?:[A-Z0-9-]{2,14})[A-Z0-9]")
_OPAQUE = re.compile(r"[\x21-\x7e]{1,512}")


def build_device_code_request(client_id: str, editor: EditorIdentity) -> WireRequest:
    headers = oauth_headers(editor)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    body = form_body([("client_id", client_id), ("scope", SCOPE)])
    return WireRequest("POST", DEVICE_CODE_URL, WHAT, tuple(headers.items()), body)


@reads_response
def parse_device_code(response: WireResponse) -> CopilotDeviceLogin:
    """A bounded :class:`CopilotDeviceLogin`, its deadline measured from receipt."""
    if response.status != 200:
        if 400 <= response.status < 500 and response.status not in (403, 429):
            detail = server_message(response)
            raise ResponseError(
                f"GitHub refused to start a device login (HTTP {response.status})"
                + (f": {detail}" if detail else ""),
                code="oauth_error",
            )
        raise status_error(response, WHAT)
    body = json_object(response, WHAT)
    if "error" in body:
        detail = server_message(response)
        raise ResponseError(f"GitHub refused to start a device login: {detail}", code="oauth_error")
    # The device code lets its holder collect the credential: a Secret before any check.
    device_code = take_secret(body, "device_code", WHAT, shape=_OPAQUE)
    if device_code is None:
        raise ResponseError(f"{WHAT} answered without the field 'device_code'")
    user_code = req_str(body, "user_code", WHAT, max_len=16)
    uri = req_str(body, "verification_uri", WHAT, max_len=200)
    expires_in = req_number(body, "expires_in", WHAT)
    interval = opt_number(body, "interval", WHAT)
    if not _USER_CODE.fullmatch(user_code):
        raise ResponseError(f"{WHAT} answered with a user code that is not a short A-Z/0-9 code")
    if uri != VERIFICATION_URI:
        # Never shown: a person must only ever be sent to GitHub's own device page.
        raise ResponseError(
            f"{WHAT} named a verification page other than {VERIFICATION_URI}; refusing it"
        )
    if expires_in <= 0:
        raise ResponseError(f"{WHAT} answered with a device code that has already expired")
    expires_in = min(expires_in, MAX_EXPIRES_IN)
    if interval is None:
        interval = DEFAULT_INTERVAL
    elif interval < 0:
        raise ResponseError(f"{WHAT} answered with a negative polling interval")
    # Never faster than asked, never faster than the pacing loop's floor (once a second);
    # beyond the lifetime the login simply ends at its deadline.
    interval = min(max(interval, MIN_INTERVAL), MAX_EXPIRES_IN)
    register_secret(device_code)
    return CopilotDeviceLogin(
        user_code=user_code,
        verification_uri=VERIFICATION_URI,
        expires_in=expires_in,
        interval=interval,
        deadline=response.received_monotonic + expires_in,
        device_code=device_code,
    )
