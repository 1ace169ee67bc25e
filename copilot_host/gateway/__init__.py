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

Names 0.4.0 exported beyond these (the server's plumbing and the wire's tables) are
importable from here until 0.6.0 with a :class:`DeprecationWarning` naming what to use.
"""

from __future__ import annotations

import warnings
from typing import Any

from ._app import (
    ACCESS_LOGGER,
    MAX_BODY_BYTES,
    MODEL_HEADER,
    AnswerObserver,
    GatewayApp,
    GatewayHooks,
    ModelNames,
    create_app,
)
from ._changes import REWRITES, rewrites_from_environment
from ._server import GatewayServer, ServeOptions, ServingError, serve, upstream_transport

__all__ = [
    "ACCESS_LOGGER",
    "MAX_BODY_BYTES",
    "MODEL_HEADER",
    "REWRITES",
    "AnswerObserver",
    "GatewayApp",
    "GatewayHooks",
    "GatewayServer",
    "ModelNames",
    "ServeOptions",
    "ServingError",
    "create_app",
    "rewrites_from_environment",
    "serve",
    "upstream_transport",
]

# Exported by 0.4.0, private since 0.5.0: the module each lives in, and what to use instead.
_MOVED: dict[str, tuple[str, str]] = {
    "FORWARDED_REQUEST_HEADERS": ("_app", "no replacement: the gateway's own list"),
    "MAX_ANSWER_BYTES": ("_app", "no replacement: the gateway's own bound"),
    "RELAYED_RESPONSE_HEADERS": ("_app", "no replacement: the gateway's own list"),
    "REREGISTER_AFTER": ("_app", "no replacement: the gateway's own schedule"),
    "REWRITES_VARIABLE": ("_changes", "the name COPILOT_HOST_REWRITES"),
    "SERVED_BETAS": ("_changes", "no replacement: docs/WIRE.md lists them"),
    "GRACE": ("_server", "ServeOptions' grace (5 seconds unless set)"),
    "STOP_SIGNALS": ("_server", "serve(), which handles them"),
    "Hardening": ("_server", "the bounds serve() applies by default"),
    "ServerStack": ("_server", "the stack serve() chooses by default"),
    "bind": ("_server", "serve() or GatewayServer with ServeOptions(port=...)"),
    "write_stderr_line": ("_server", "the logging module"),
}


def __getattr__(name: str) -> Any:
    moved = _MOVED.get(name)
    if moved is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, instead = moved
    warnings.warn(
        f"copilot_host.gateway.{name} is no longer public (removed in 0.6.0); use {instead}",
        DeprecationWarning,
        stacklevel=2,
    )
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_MOVED])
