"""Which stack the gateway is served on: the server's HTTP parser and the upstream transport.

On the base install both are pure Python: the server's h11 protocol, and httpx2's own
transport under the gateway's client. With ``copilot-host[fast]`` installed, the
httptools protocol (llhttp, in C) and the aiohttp transport (:mod:`._aiotransport`) are
used instead, unless ``COPILOT_HOST_PURE_PYTHON=1`` rules them out, and (for the
transport) unless a proxy variable is set, which httpx2's own transport applies.
:func:`server_stack` asks the core's one reading of the environment
(:func:`copilot_host._accel.accelerations`), once for each serving. The event loop is
asyncio's own: uvloop was measured under the gateway (1.00 against 1.02 ms of CPU a
request, the same added latency) and does not pay for the different way libuv handles
running out of descriptors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import httpx2

__all__ = ["PURE_PYTHON", "PURE_PYTHON_ENV", "ServerStack", "server_stack", "upstream_transport"]

PURE_PYTHON_ENV = "COPILOT_HOST_PURE_PYTHON"


@dataclass(frozen=True)
class ServerStack:
    """The server's ``http`` protocol for the gateway, and the transport under the gateway's
    upstream client when its app was given none (``"httpx2"``: httpx2's own)."""

    http: Literal["httptools", "h11"]
    transport: Literal["aiohttp", "httpx2"] = "httpx2"


PURE_PYTHON = ServerStack(http="h11", transport="httpx2")


def server_stack(environ: Mapping[str, str] | None = None) -> ServerStack:
    """The stack for ``environ`` (default: this process's): httptools and aiohttp where
    installed and not ruled out (see the module docstring)."""
    from copilot_host._internal import accelerations

    found = accelerations(environ)
    return ServerStack(
        http="httptools" if found.httptools else "h11",
        transport="aiohttp" if found.aiohttp else "httpx2",
    )


def upstream_transport(stack: ServerStack | None = None) -> httpx2.AsyncBaseTransport | None:
    """The transport :func:`~copilot_host.gateway.serve` gives an app of
    :func:`~copilot_host.gateway.create_app` made without one: the aiohttp transport
    bounded by the gateway's pool limits on a stack that says so (default: the
    environment's), else None (httpx2's own, with the proxy settings it reads). Raises
    what building the TLS context raises (``OSError``, ``ValueError``) for unusable
    ``SSL_CERT_*`` settings. Tests pass it to ``GitHubEmulator.async_transport(inner=...)``
    to run the path ``serve`` runs."""
    stack = stack if stack is not None else server_stack()
    if stack.transport != "aiohttp":
        return None
    from .._app._relay import UPSTREAM_LIMITS
    from ._aiotransport import AiohttpTransport

    return AiohttpTransport(limits=UPSTREAM_LIMITS)
