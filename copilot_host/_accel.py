"""Whether the optional accelerations may be used: the one reading of ``COPILOT_HOST_PURE_PYTHON``.

``COPILOT_HOST_PURE_PYTHON=1`` (any value but empty or ``0``) keeps everything on the
pure-Python path even when httptools, aiohttp or orjson are installed: a way to
rule them out when something misbehaves, and how the suite exercises that path. Each part
reads the switch when it starts (the gateway's server and upstream client); the JSON
reader reads it when this module is first imported.
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType
from urllib.request import getproxies

import httpx2

__all__ = [
    "PURE_PYTHON_ENV",
    "aiohttp_usable",
    "fast_transport",
    "orjson",
    "proxy_configured",
    "pure_python",
]

PURE_PYTHON_ENV = "COPILOT_HOST_PURE_PYTHON"


def pure_python() -> bool:
    """True when the environment asks for the pure-Python path."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip() not in ("", "0")


def aiohttp_usable() -> bool:
    """True when the upstream requests may go through aiohttp (installed, not ruled out)."""
    return not pure_python() and importlib.util.find_spec("aiohttp") is not None


def proxy_configured() -> bool:
    """True when httpx2 would send some request through a proxy: it reads the same
    ``urllib.request.getproxies()`` (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``)."""
    found = getproxies()
    return any(found.get(scheme) for scheme in ("http", "https", "all"))


def fast_transport(limits: httpx2.Limits | None = None) -> httpx2.AsyncBaseTransport | None:
    """The aiohttp transport (:mod:`._aiotransport`) bounded by ``limits``, or None when
    aiohttp cannot be used: the caller then keeps httpx2's own. Raises what building the
    TLS context raises (``OSError``, ``ValueError``) for unusable ``SSL_CERT_*`` settings."""
    if not aiohttp_usable():
        return None
    from ._aiotransport import AiohttpTransport

    return AiohttpTransport(limits=limits)


def _orjson() -> ModuleType | None:
    if pure_python():
        return None
    try:
        import orjson as module
    except ImportError:
        return None
    return module


# A JSON parser in Rust, two to three times as fast as ``json`` on request bodies
# (``read_json_body``); None on the pure path.
orjson = _orjson()
