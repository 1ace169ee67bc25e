"""The gateway's serving layer: uvicorn, the bounds that keep it answering its own user while
other local programs misbehave, the stack (HTTP parser, upstream transport), the queued
stderr. Above the application (:mod:`copilot_host.gateway._app`), which it runs.
"""

from __future__ import annotations

from ._errors import ServingError
from ._hardening import Hardening
from ._lines import write_stderr_line
from ._process import STOP_SIGNALS
from ._serving import GRACE, GatewayServer, ServeOptions, bind, serve
from ._stack import ServerStack, upstream_transport

__all__ = [
    "GRACE",
    "STOP_SIGNALS",
    "GatewayServer",
    "Hardening",
    "ServeOptions",
    "ServerStack",
    "ServingError",
    "bind",
    "serve",
    "upstream_transport",
    "write_stderr_line",
]
