"""The loopback gateway: the account's Copilot models for programs in any language.

:func:`create_app` returns an ASGI 3 application that speaks the OpenAI API
(``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/responses``) and the
Anthropic Messages API (``POST /v1/messages``) for any :class:`copilot_host.AsyncCopilotHost`,
holding every token itself: its clients present only the gateway's own key. What it
changes in a request so that Copilot gets the shapes its own clients send is named in
:data:`REWRITES` (docs/WIRE.md, "Agents through the gateway").
:func:`serve` (or a :class:`GatewayServer`, the same with a handle) runs it on its ASGI
server with the bounds that keep it answering its own user while other local programs misbehave
(:mod:`._hardening`): ``copilot-host serve`` and ``run`` serve it so. Any other ASGI
server can run the app too, without those bounds.

This package uses the library's public API only.
"""

from __future__ import annotations

from ._access import FORWARDED_REQUEST_HEADERS
from ._app import ACCESS_LOGGER, MAX_BODY_BYTES, MODEL_HEADER, GatewayApp, create_app
from ._hardening import STOP_SIGNALS, Hardening
from ._hooks import AnswerObserver, GatewayHooks
from ._lines import write_stderr_line
from ._messages import SERVED_BETAS
from ._names import ModelNames
from ._registry import REREGISTER_AFTER
from ._relay import MAX_ANSWER_BYTES, RELAYED_RESPONSE_HEADERS
from ._rewrites import REWRITES, REWRITES_VARIABLE, rewrites_from_environment
from ._serving import GRACE, GatewayServer, ServeOptions, bind, serve
from ._stack import ServerStack, upstream_transport

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
