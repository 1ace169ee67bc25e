"""Which HTTP parser the gateway is served on.

uvicorn's httptools protocol (llhttp, in C) takes uvicorn's own share of a relayed
request from about 180 µs of CPU to about 60 (bench/gateway.py); it is used when it can be
imported, and ``COPILOT_HOST_PURE_PYTHON=1`` forces h11, the pure-Python parser, to rule
it out when something looks wrong. The event loop is asyncio's own: uvloop was measured
under the gateway (1.00 against 1.02 ms of CPU a request, the same added latency) and
does not pay for the different way libuv handles running out of descriptors.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["PURE_PYTHON", "PURE_PYTHON_ENV", "ServerStack", "server_stack"]

PURE_PYTHON_ENV = "COPILOT_HOST_PURE_PYTHON"


@dataclass(frozen=True)
class ServerStack:
    """uvicorn's ``http`` protocol for the gateway."""

    http: Literal["httptools", "h11"]


PURE_PYTHON = ServerStack(http="h11")


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def server_stack(environ: Mapping[str, str] | None = None) -> ServerStack:
    """httptools where importable, unless ``COPILOT_HOST_PURE_PYTHON`` is set to anything
    but empty or ``0``."""
    env = os.environ if environ is None else environ
    if env.get(PURE_PYTHON_ENV, "").strip() not in ("", "0"):
        return PURE_PYTHON
    return ServerStack(http="httptools" if _importable("httptools") else "h11")
