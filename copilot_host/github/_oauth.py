"""The OAuth 2.0 / RFC 8628 vocabulary, taken from authlib rather than retyped.

The one module that imports authlib; it exposes typed values so the rest of the adapter
stays checked. No authlib token object is ever built: tokens become ``Secret`` at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from authlib.common.urls import url_encode  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.errors import (  # type: ignore[import-untyped]
    AccessDeniedError as _AccessDenied,
)
from authlib.oauth2.rfc6749.parameters import (  # type: ignore[import-untyped]
    prepare_token_request,
)
from authlib.oauth2.rfc8628 import (  # type: ignore[import-untyped]
    DEVICE_CODE_GRANT_TYPE as _GRANT,
)
from authlib.oauth2.rfc8628 import (
    AuthorizationPendingError as _Pending,
)
from authlib.oauth2.rfc8628 import (
    ExpiredTokenError as _Expired,
)
from authlib.oauth2.rfc8628 import (
    SlowDownError as _SlowDown,
)

__all__ = [
    "ACCESS_DENIED",
    "AUTHORIZATION_PENDING",
    "DEVICE_CODE_GRANT_TYPE",
    "EXPIRED_TOKEN",
    "SLOW_DOWN",
    "device_token_body",
    "form_body",
]

DEVICE_CODE_GRANT_TYPE: str = str(_GRANT)
AUTHORIZATION_PENDING: str = str(_Pending.error)
SLOW_DOWN: str = str(_SlowDown.error)
EXPIRED_TOKEN: str = str(_Expired.error)
ACCESS_DENIED: str = str(_AccessDenied.error)


def form_body(pairs: Sequence[tuple[str, str]]) -> bytes:
    """``application/x-www-form-urlencoded`` bytes for ``pairs``, in order."""
    return str(url_encode(list(pairs))).encode("ascii")


def device_token_body(client_id: str, device_code: str) -> bytes:
    """The RFC 8628 section 3.4 device access token request body."""
    body = prepare_token_request(
        DEVICE_CODE_GRANT_TYPE, client_id=client_id, device_code=device_code
    )
    return str(body).encode("ascii")
