"""How the gateway opens a socket to Copilot: the connect seam, and its default, ``websockets``.

A connector is an async ``connect(url, headers, **options) -> socket``: ``url`` the
``wss://`` URL ``route.auth`` vetted (:meth:`copilot_host.CopilotAuth.ahandshake_headers`),
``headers`` the handshake's, ``options`` the ``websockets`` client's limits; the socket it
returns is a ``websockets`` client connection (``send``, ``recv``, ``close``,
``response``). Tests pass ``GitHubEmulator.socket_connector()``, which carries the URL to
the emulator's loopback port as ``async_transport()`` carries HTTPS.

The default (:func:`connect`) imports ``websockets`` when it is first called (a gateway
serving no model that lists ``ws:/responses`` never pays for it), verifies TLS as httpx2
does (``httpx2.create_ssl_context()``: ``SSL_CERT_FILE``/``SSL_CERT_DIR``, else the system's
store) and goes through the proxy httpx2 would use for the same origin over HTTPS
(:func:`proxy_for`): ``HTTPS_PROXY``, else ``ALL_PROXY``, unless ``NO_PROXY`` names the host.
A SOCKS proxy (which ``websockets`` reaches only through an optional package) is not
tried: the socket is refused and the request goes over HTTP, where httpx2 applies it.
"""

from __future__ import annotations

import functools
import ssl
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["Connector", "connect", "proxy_for"]

Connector = Callable[..., Awaitable[Any]]


@functools.lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()


def proxy_for(url: str, environ: dict[str, str] | None = None) -> str | None:
    """The proxy URL httpx2 would send a request to ``url``'s origin over HTTPS through
    (its reading of the environment: urllib's ``getproxies()``), or None for none.
    Raises ``OSError`` for a proxy a socket cannot go through here (SOCKS)."""
    found = urllib.request.getproxies() if environ is None else _from(environ)
    host = urllib.parse.urlsplit(url).hostname or ""
    if _bypassed(host, found.get("no", "")):
        return None
    proxy = found.get("https") or found.get("all")
    if not proxy:
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    scheme = proxy.partition("://")[0].lower()
    if scheme not in ("http", "https"):
        raise OSError(f"a {scheme} proxy is not used for sockets (HTTP is)")
    return proxy


def _from(environ: dict[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in environ.items():
        lower = name.lower()
        if value and lower.endswith("_proxy"):
            found.setdefault(lower[:-6], value)
    return found


def _bypassed(host: str, no_proxy: str) -> bool:
    """``NO_PROXY`` as httpx2 reads it: ``*`` for every host; a name for itself and the
    names under it (``.name`` for those under it only)."""
    host = host.lower().strip("[]")
    for entry in no_proxy.split(","):
        name = entry.strip().lower()
        if name == "*":
            return True
        if not name or "/" in name:
            continue
        name = name.removeprefix("*")
        if name.startswith("."):
            if host.endswith(name):
                return True
        elif host == name.strip("[]") or host.endswith("." + name):
            return True
    return False


async def connect(url: str, headers: Sequence[tuple[str, str]], **options: Any) -> Any:
    """The default connector (see the module docstring)."""
    from websockets.asyncio.client import connect as open_socket

    if url.startswith("wss://"):
        options["ssl"] = _tls()
    return await open_socket(
        url,
        additional_headers=list(headers),
        proxy=proxy_for(url),
        # The host's headers say who the client is; no library name beside them.
        user_agent_header=None,
        **options,
    )
