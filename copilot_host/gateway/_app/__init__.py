"""The gateway's ASGI application: its stages, and what they share (the routes, the budget).

Below the server (:mod:`copilot_host.gateway._server`), above the table of changes
(:mod:`copilot_host.gateway._changes`) and the protocol descriptors.
"""

from __future__ import annotations

from ._access import FORWARDED_REQUEST_HEADERS
from ._account import ACCESS_LOGGER
from ._app import GatewayApp, create_app
from ._hooks import AnswerObserver, GatewayHooks
from ._intake import MAX_BODY_BYTES, body_deadline
from ._names import ModelNames
from ._pipeline import MODEL_HEADER
from ._registry import REREGISTER_AFTER
from ._relay import MAX_ANSWER_BYTES, RELAYED_RESPONSE_HEADERS, UPSTREAM_LIMITS
from ._socket import BUSY, SOCKET_PATHS

__all__ = [
    "ACCESS_LOGGER",
    "BUSY",
    "FORWARDED_REQUEST_HEADERS",
    "MAX_ANSWER_BYTES",
    "MAX_BODY_BYTES",
    "MODEL_HEADER",
    "RELAYED_RESPONSE_HEADERS",
    "REREGISTER_AFTER",
    "SOCKET_PATHS",
    "UPSTREAM_LIMITS",
    "AnswerObserver",
    "GatewayApp",
    "GatewayHooks",
    "ModelNames",
    "body_deadline",
    "create_app",
]
