"""The loopback gateway: the account's Copilot models for programs in any language.

:func:`create_app` returns an ASGI 3 application that speaks the OpenAI API
(``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/responses``,
``POST /v1/embeddings``) and the Anthropic Messages API (``POST /v1/messages``) for any
:class:`copilot_host.AsyncCopilotHost`, holding every token itself: its clients present only
the gateway's own key. What it changes on the wire so that Copilot gets the shapes its own
clients send is one table of named changes (:mod:`._changes`; their names in
:data:`REWRITES`; docs/WIRE.md, "Agents through the gateway").
:func:`serve` (or a :class:`GatewayServer`, the same with a handle) runs it on its ASGI
server with the bounds that keep it answering its own user while other local programs misbehave
(:mod:`._server._hardening`): ``copilot-host serve`` and ``run`` serve it so. Any other ASGI
server can run the app too, without those bounds.

This package uses the library's public API only.
"""

from __future__ import annotations

from ._app import (
    ACCESS_LOGGER,
    FORWARDED_REQUEST_HEADERS,
    MAX_ANSWER_BYTES,
    MAX_BODY_BYTES,
    MODEL_HEADER,
    RELAYED_RESPONSE_HEADERS,
    REREGISTER_AFTER,
    AnswerObserver,
    GatewayApp,
    GatewayHooks,
    ModelNames,
    create_app,
)
from ._changes import REWRITES, REWRITES_VARIABLE, SERVED_BETAS, rewrites_from_environment
from ._server import (
    GRACE,
    STOP_SIGNALS,
    GatewayServer,
    Hardening,
    ServeOptions,
    ServerStack,
    bind,
    serve,
    upstream_transport,
    write_stderr_line,
)

__all__ = [
    "ACCESS_LOGGER",
    "FORWARDED_REQUEST_HEADERS",
    "GRACE",
    "MAX_ANSWER_BYTES",
    "MAX_BODY_BYTES",
    "MODEL_HEADER",
    "RELAYED_RESPONSE_HEADERS",
    "REREGISTER_AFTER",
    "REWRITES",
    "REWRITES_VARIABLE",
    "SERVED_BETAS",
    "STOP_SIGNALS",
    "AnswerObserver",
    "GatewayApp",
    "GatewayHooks",
    "GatewayServer",
    "Hardening",
    "ModelNames",
    "ServeOptions",
    "ServerStack",
    "bind",
    "create_app",
    "rewrites_from_environment",
    "serve",
    "upstream_transport",
    "write_stderr_line",
]
