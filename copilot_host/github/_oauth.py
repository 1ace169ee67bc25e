"""The OAuth 2.0 device-flow vocabulary (RFC 8628) and its form encoding.

Five names from the RFC and a form body are all the device flow needs from OAuth: GitHub's
answers are parsed by the steps themselves, strictly, and tokens become ``Secret`` at once.
(A general OAuth library would bring token objects whose repr shows the token, and client
integrations for other HTTP stacks than httpx2; see docs/ARCHITECTURE.md.)
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

__all__ = [
    "ACCESS_DENIED",
    "AUTHORIZATION_PENDING",
    "DEVICE_CODE_GRANT_TYPE",
    "EXPIRED_TOKEN",
    "SLOW_DOWN",
    "device_token_body",
    "form_body",
]

# RFC 8628 section 3.4: the grant type of the device access token request.
DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
# RFC 8628 section 3.5 and RFC 6749 section 5.2: what the token endpoint answers while the
# person has not decided yet, and how a login ends.
AUTHORIZATION_PENDING = "authorization_pending"
SLOW_DOWN = "slow_down"
EXPIRED_TOKEN = "expired_token"  # noqa: S105 - an error code, not a token
ACCESS_DENIED = "access_denied"


def form_body(pairs: Sequence[tuple[str, str]]) -> bytes:
    """``application/x-www-form-urlencoded`` bytes for ``pairs``, in order."""
    return urlencode(list(pairs)).encode("ascii")


def device_token_body(client_id: str, device_code: str) -> bytes:
    """The RFC 8628 section 3.4 device access token request body."""
    return form_body(
        [
            ("grant_type", DEVICE_CODE_GRANT_TYPE),
            ("client_id", client_id),
            ("device_code", device_code),
        ]
    )
