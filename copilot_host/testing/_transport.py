"""httpx2 transports that carry GitHub's real https URLs to the loopback emulator.

The adapter keeps its fixed URLs and the allowlist stays strict: only github.com,
api.github.com and the allowlisted Copilot hosts are routed, over a real TCP socket; any
other destination fails like an unreachable host, and is noted in ``refused``.

The requests go out over httpx2's own transport unless the caller gives another as
``inner``: the emulator is the oracle the gateway's transport is checked against, so it
never sends through that code by itself (the gateway's tests and benchmark pass it on
purpose, so that the ``[fast]`` path stays exercised).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2

__all__ = [
    "AsyncLoopbackTransport",
    "LoopbackTransport",
    "async_loopback_transport",
    "loopback_socket_connector",
    "loopback_transport",
]


def _rewrite(
    request: httpx2.Request, port: int, routed: frozenset[str], refuse: Callable[[str], None]
) -> httpx2.Request:
    url = request.url
    if url.scheme != "https" or url.host not in routed or url.port not in (None, 443):
        # Scheme, host, port and path only: a query or user:password could carry a token.
        refuse(str(url.copy_with(query=None, fragment=None, userinfo=b"")))
        raise httpx2.ConnectError(
            f"the GitHub emulator does not route {url.scheme}://{url.host}", request=request
        )
    # A copy, so an auth flow that resends the caller's request (a 401 retry) still sees
    # the real URL. The Host header keeps the real name (httpx2 set it from the original
    # URL), so the emulator knows which service was addressed.
    return httpx2.Request(
        request.method,
        url.copy_with(scheme="http", host="127.0.0.1", port=port),
        headers=request.headers,
        stream=request.stream,
        extensions=request.extensions,
    )


class LoopbackTransport(httpx2.BaseTransport):
    def __init__(self, port: int, routed: frozenset[str], refuse: Callable[[str], None]) -> None:
        self._port = port
        self._routed = routed
        self._refuse = refuse
        self._inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._inner.handle_request(_rewrite(request, self._port, self._routed, self._refuse))

    def close(self) -> None:
        self._inner.close()


class AsyncLoopbackTransport(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        port: int,
        routed: frozenset[str],
        refuse: Callable[[str], None],
        limits: httpx2.Limits | None = None,
        inner: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        if inner is not None and limits is not None:
            raise ValueError("give limits or inner, not both: inner carries its own")
        self._port = port
        self._routed = routed
        self._refuse = refuse
        if inner is None:
            inner = (
                httpx2.AsyncHTTPTransport()
                if limits is None
                else httpx2.AsyncHTTPTransport(limits=limits)
            )
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._inner.handle_async_request(
            _rewrite(request, self._port, self._routed, self._refuse)
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _not_noted(_url: str) -> None:
    return None


def loopback_transport(port: int) -> httpx2.BaseTransport:
    """A blocking transport to an emulator already listening on ``port`` (one running in
    another process: a benchmark's, a child's); URLs it refuses are not noted anywhere."""
    from ._routes import ROUTED_HOSTS

    return LoopbackTransport(port, ROUTED_HOSTS, _not_noted)


def async_loopback_transport(
    port: int,
    *,
    limits: httpx2.Limits | None = None,
    inner: httpx2.AsyncBaseTransport | None = None,
) -> httpx2.AsyncBaseTransport:
    """The asyncio twin of :func:`loopback_transport`; ``limits`` bounds its connection
    pool (httpx2's default otherwise: 100 connections). It sends over httpx2's own
    transport, or over ``inner`` when given (``limits`` then does not apply; closing this
    transport closes ``inner``)."""
    from ._routes import ROUTED_HOSTS

    return AsyncLoopbackTransport(port, ROUTED_HOSTS, _not_noted, limits, inner)


def loopback_socket_connector(port: int) -> Callable[..., Any]:
    """:meth:`GitHubEmulator.socket_connector` for an emulator in another process whose
    socket port (:attr:`GitHubEmulator.socket_port`) is ``port``; URLs it refuses are not
    noted anywhere."""
    from ._routes import COPILOT_HOSTS
    from ._sockets import socket_connector

    return socket_connector(port, COPILOT_HOSTS, _not_noted)
