"""The loopback gateway: the account's Copilot models for programs in any language.

:func:`create_app` returns an ASGI 3 application that speaks the OpenAI API
(``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/responses``) and the
Anthropic Messages API (``POST /v1/messages``) for any :class:`copilot_host.AsyncCopilotHost`,
holding every token itself: its clients present only the gateway's own key.
``copilot-host serve`` runs it under uvicorn on a loopback address; an application may
serve it with any ASGI server of its own.

This package uses the library's public API only.
"""

from __future__ import annotations

from ._access import FORWARDED_REQUEST_HEADERS
from ._app import ACCESS_LOGGER, MAX_BODY_BYTES, MODEL_HEADER, GatewayApp, create_app
from ._hooks import AnswerObserver, GatewayHooks
from ._messages import SERVED_BETAS
from ._names import ModelNames
from ._registry import REREGISTER_AFTER
from ._relay import MAX_ANSWER_BYTES, RELAYED_RESPONSE_HEADERS

__all__ = [
    "ACCESS_LOGGER",
    "FORWARDED_REQUEST_HEADERS",
    "MAX_ANSWER_BYTES",
    "MAX_BODY_BYTES",
    "MODEL_HEADER",
    "RELAYED_RESPONSE_HEADERS",
    "REREGISTER_AFTER",
    "SERVED_BETAS",
    "AnswerObserver",
    "GatewayApp",
    "GatewayHooks",
    "ModelNames",
    "create_app",
]
