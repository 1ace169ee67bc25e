"""The I/O shells: send a :class:`WireRequest`, read the answer within its size cap.

Sync and async differ only in awaiting. Every httpx2 failure becomes a typed error here
(``TransportError`` for the network and timeouts, ``ResponseError`` for a body we cannot
decode or one over its cap), so nothing above this module sees a raw httpx2 exception.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable

import httpx2

from .._clock import Clock
from .._errors import CopilotHostError, ResponseError, SessionError, TransportError
from .._redact import scrub
from ._status import retry_delay
from ._wire import WireRequest, WireResponse

__all__ = ["DEFAULT_TIMEOUT", "AsyncSender", "Sender"]

_log = logging.getLogger("copilot_host.github")

# DESIGN.md: connect 10 s, read 30 s; writes and pool waits share the read budget.
DEFAULT_TIMEOUT = httpx2.Timeout(30.0, connect=10.0)


def _host_of(request: WireRequest) -> str:
    return httpx2.URL(request.url).host


def _error_for(exc: httpx2.HTTPError, request: WireRequest) -> CopilotHostError:
    where = f"{request.what} ({_host_of(request)})"
    if isinstance(exc, httpx2.TimeoutException):
        return TransportError(f"{where} timed out; check the network and try again", code="timeout")
    if isinstance(exc, httpx2.TransportError):
        reason = scrub(str(exc), limit=120) or type(exc).__name__
        return TransportError(f"{where} failed on the network: {reason}")
    return ResponseError(f"{where} sent an answer that could not be decoded ({type(exc).__name__})")


def _setup_error(exc: Exception) -> TransportError:
    # Only the exception's type: its text can quote a proxy URL with a password in it.
    return TransportError(
        "could not set up the HTTPS client: check SSL_CERT_FILE, SSL_CERT_DIR and the "
        f"HTTPS_PROXY/ALL_PROXY settings ({type(exc).__name__})",
        code="network_config",
        retryable=False,
    )


def _closed_error() -> SessionError:
    return SessionError(
        "the GitHub host behind these routes was closed; keep the host open while its "
        "routes are in use, or register the models again with an open host",
        code="host_closed",
    )


def _too_large(request: WireRequest) -> ResponseError:
    return ResponseError(
        f"{request.what} answered with more than {request.limit // 1024} KiB; refusing to read it",
        code="response_too_large",
    )


def _declared_too_large(response: httpx2.Response, request: WireRequest) -> bool:
    declared = response.headers.get("content-length", "")
    digits = declared.isascii() and declared.isdigit()  # isdigit() alone accepts "¹"
    return digits and len(declared) < 20 and int(declared) > request.limit


def _lower_headers(response: httpx2.Response) -> dict[str, str]:
    return {name.lower(): value for name, value in response.headers.items()}


def _log_answer(request: WireRequest, response: WireResponse) -> None:
    if _log.isEnabledFor(logging.DEBUG):
        # Method, URL, status and size only: URLs never hold credentials; headers may.
        _log.debug(
            "%s %s -> HTTP %d (%d bytes)",
            request.method,
            request.url,
            response.status,
            len(response.body),
        )


class _CappedBody:
    """Collects a response body up to the request's cap (the I/O-free half of a read)."""

    __slots__ = ("_chunks", "_received", "_request", "_response", "_total")

    def __init__(self, request: WireRequest, response: httpx2.Response, clock: Clock) -> None:
        self._received = (clock.monotonic(), clock.time())
        if _declared_too_large(response, request):
            raise _too_large(request)
        self._request = request
        self._response = response
        self._chunks: list[bytes] = []
        self._total = 0

    def add(self, chunk: bytes) -> None:
        self._total += len(chunk)
        if self._total > self._request.limit:
            raise _too_large(self._request)
        self._chunks.append(chunk)

    def answer(self) -> WireResponse:
        return WireResponse(
            self._response.status_code,
            _lower_headers(self._response),
            b"".join(self._chunks),
            *self._received,
        )


class Sender:
    """Blocking shell over one ``httpx2.Client`` (created on first use)."""

    def __init__(
        self,
        *,
        transport: httpx2.BaseTransport | None,
        timeout: httpx2.Timeout | None,
        clock: Clock,
        sleep: Callable[[float], None],
    ) -> None:
        self._transport = transport
        self._timeout = timeout or DEFAULT_TIMEOUT
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._client: httpx2.Client | None = None
        self._closed = False

    def _get_client(self) -> httpx2.Client:
        # Built on first use: `status` and availability checks never pay for a TLS context.
        with self._lock:
            if self._closed:
                raise _closed_error()
            if self._client is None:
                # No trust_env override and no proxy argument: httpx2's defaults honour
                # HTTPS_PROXY, SSL_CERT_FILE and the system trust store.
                try:
                    self._client = httpx2.Client(
                        transport=self._transport, timeout=self._timeout, follow_redirects=False
                    )
                except (OSError, ValueError, ImportError) as exc:  # ssl.SSLError is an OSError
                    raise _setup_error(exc) from None
            return self._client

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()
        elif self._transport is not None:
            self._transport.close()

    def send_once(self, request: WireRequest) -> WireResponse:
        try:
            with self._get_client().stream(
                request.method, request.url, headers=request.headers, content=request.body
            ) as response:
                body = _CappedBody(request, response, self._clock)
                for chunk in response.iter_bytes():
                    body.add(chunk)
                answer = body.answer()
        except httpx2.HTTPError as exc:
            raise _error_for(exc, request) from None
        _log_answer(request, answer)
        return answer

    def send(self, request: WireRequest) -> WireResponse:
        """Send; for steps marked ``retry``, one bounded retry of a 429 or 5xx."""
        answer = self.send_once(request)
        if request.retry:
            delay = retry_delay(answer)
            if delay is not None:
                _log.debug(
                    "%s: HTTP %d, retrying once in %.1f s", request.what, answer.status, delay
                )
                self._sleep(delay)
                answer = self.send_once(request)
        return answer


class AsyncSender:
    """The asyncio shell over one ``httpx2.AsyncClient``."""

    def __init__(
        self,
        *,
        transport: httpx2.AsyncBaseTransport | None,
        timeout: httpx2.Timeout | None,
        clock: Clock,
        sleep: Callable[[float], Awaitable[object]],
    ) -> None:
        self._transport = transport
        self._timeout = timeout or DEFAULT_TIMEOUT
        self._clock = clock
        self._sleep = sleep
        self._client: httpx2.AsyncClient | None = None
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closed = False

    def _get_client(self) -> httpx2.AsyncClient:
        # One event loop owns this object, so creation needs no lock (no await inside).
        if self._closed:
            raise _closed_error()
        loop = asyncio.get_running_loop()
        if self._client is None:
            try:
                self._client = httpx2.AsyncClient(
                    transport=self._transport, timeout=self._timeout, follow_redirects=False
                )
            except (OSError, ValueError, ImportError) as exc:  # ssl.SSLError is an OSError
                raise _setup_error(exc) from None
            self._loop = weakref.ref(loop)
        elif self._loop is not None and self._loop() is not loop:
            # An httpx2 client's connections belong to the loop that opened them; used from
            # another (a second asyncio.run) they fail with a bare "Event loop is closed".
            raise SessionError(
                "this AsyncGitHubCopilotHost is bound to the event loop it was first used on; "
                "create one host per event loop (e.g. inside the asyncio.run that uses it)",
                code="wrong_event_loop",
            )
        return self._client

    async def aclose(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        owner = self._loop() if self._loop is not None else None
        if client is not None:
            if owner is not None and owner is not asyncio.get_running_loop():
                return  # its connections died with their loop; nothing left to close here
            await client.aclose()
        elif self._transport is not None:
            await self._transport.aclose()

    async def send_once(self, request: WireRequest) -> WireResponse:
        try:
            async with self._get_client().stream(
                request.method, request.url, headers=request.headers, content=request.body
            ) as response:
                body = _CappedBody(request, response, self._clock)
                async for chunk in response.aiter_bytes():
                    body.add(chunk)
                answer = body.answer()
        except httpx2.HTTPError as exc:
            raise _error_for(exc, request) from None
        _log_answer(request, answer)
        return answer

    async def send(self, request: WireRequest) -> WireResponse:
        answer = await self.send_once(request)
        if request.retry:
            delay = retry_delay(answer)
            if delay is not None:
                _log.debug(
                    "%s: HTTP %d, retrying once in %.1f s", request.what, answer.status, delay
                )
                await self._sleep(delay)
                answer = await self.send_once(request)
        return answer
