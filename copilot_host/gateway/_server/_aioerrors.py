"""aiohttp's errors as the httpx2 exceptions httpx2's own transport raises in the same case.

Messages are built here from the target and the OS error only: never the exception's own
text, which can quote the request's URL or headers (an ``Authorization`` header among
them), and never chained to it.
"""

from __future__ import annotations

import ssl

import aiohttp
import httpx2

__all__ = ["mapped_error", "where_of"]


def where_of(request: httpx2.Request) -> str:
    url = request.url
    return f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"


def _os_text(error: BaseException | None) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or type(error).__name__}"
    return type(error).__name__


def mapped_error(exc: BaseException, request: httpx2.Request) -> httpx2.TransportError:
    """The httpx2 exception httpx2's own transport raises for the failure ``exc`` is."""
    where = where_of(request)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx2.ConnectTimeout(f"timed out connecting to {where}", request=request)
    if isinstance(exc, TimeoutError):  # aiohttp's SocketTimeoutError and its base
        return httpx2.ReadTimeout(f"timed out reading from {where}", request=request)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        # Its os_error is unset in some releases (3.10.0): the certificate error is not.
        text = _os_text(exc.certificate_error)
        return httpx2.ConnectError(f"cannot connect to {where}: {text}", request=request)
    if isinstance(exc, aiohttp.ClientConnectorError):
        text = _os_text(exc.os_error)
        return httpx2.ConnectError(f"cannot connect to {where}: {text}", request=request)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return httpx2.RemoteProtocolError(
            f"{where} disconnected without sending a complete answer", request=request
        )
    if isinstance(exc, aiohttp.ClientPayloadError):
        return httpx2.RemoteProtocolError(
            f"the answer from {where} ended before its body was complete", request=request
        )
    if isinstance(exc, aiohttp.ClientResponseError):
        # aiohttp's own name for an answer its parser refused.
        return httpx2.RemoteProtocolError(f"malformed HTTP answer from {where}", request=request)
    if isinstance(exc, aiohttp.ClientOSError):
        return httpx2.ReadError(f"connection to {where} failed: {_os_text(exc)}", request=request)
    if isinstance(exc, aiohttp.ClientConnectionError):
        return httpx2.ReadError(f"connection to {where} failed", request=request)
    if isinstance(exc, ValueError):  # a header aiohttp refuses to write (CR, LF)
        return httpx2.LocalProtocolError(
            f"the request to {where} cannot be sent as given ({type(exc).__name__})",
            request=request,
        )
    return httpx2.TransportError(f"request to {where} failed ({type(exc).__name__})")
