"""The I/O shells: send a :class:`WireRequest`, read the answer within its size cap.

Sync and async differ only in awaiting. Every httpx2 failure becomes a typed error here
(``TransportError`` for the network and timeouts, ``ResponseError`` for a body we cannot
decode or one over its cap), so nothing above this module sees a raw httpx2 exception.

Each step has a total deadline, not only a per-read timeout: a server that drips its
answer a byte at a time, each byte just inside the read timeout, would otherwise keep a
step (and everyone waiting on it) going for as long as the size cap allows. The deadline
covers the whole step: connect, send, every read, and the one retry with its wait. The
asyncio shell enforces it with ``asyncio.timeout``; the blocking shell runs the step in a
worker thread and stops waiting for it at the deadline (the worker, abandoned, ends at its
next read: per-read timeouts never exceed the time the step had left).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable

import httpx2

from .._bounded import Abandoned, call_bounded
from .._clock import Clock
from .._errors import CopilotHostError, ResponseError, SessionError, TransportError
from .._safety._redact import scrub
from ._status import retry_delay
from ._wire import WireRequest, WireResponse

__all__ = ["DEFAULT_TIMEOUT", "STEP_BUDGET_READS", "AsyncSender", "Sender", "step_budget"]

_log = logging.getLogger("copilot_host.github")

# Connect 10 s, read 30 s; writes and pool waits share the read budget.
DEFAULT_TIMEOUT = httpx2.Timeout(30.0, connect=10.0)
# A whole step (a retry and its wait included) may take this many read timeouts.
STEP_BUDGET_READS = 3.0


def step_budget(timeout: httpx2.Timeout) -> float:
    """Seconds a whole step may take: three read timeouts (or connect, if larger)."""
    given = [t for t in (timeout.read, timeout.connect) if t is not None]
    longest = max(given) if given else DEFAULT_TIMEOUT.read or 30.0
    return STEP_BUDGET_READS * longest


def _budget_of(request: WireRequest, budget: float) -> float:
    """The step's budget: the sender's, or the request's own when it is shorter."""
    return budget if request.budget is None else min(budget, request.budget)


def _timed_out(request: WireRequest, budget: float) -> TransportError:
    return TransportError(
        f"{request.what} ({_host_of(request)}) did not complete within {budget:g} s; "
        "check the network and try again",
        code="timeout",
    )


def _phase_timeout(timeout: httpx2.Timeout, remaining: float) -> httpx2.Timeout:
    """Per-phase timeouts no longer than what is left of the step."""
    left = max(remaining, 0.001)

    def cap(value: float | None) -> float:
        return left if value is None else min(value, left)

    return httpx2.Timeout(
        connect=cap(timeout.connect),
        read=cap(timeout.read),
        write=cap(timeout.write),
        pool=cap(timeout.pool),
    )


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

    __slots__ = ("_chunks", "_deadline", "_received", "_request", "_response", "_total")

    def __init__(
        self, request: WireRequest, response: httpx2.Response, clock: Clock, deadline: _Deadline
    ) -> None:
        self._received = (clock.monotonic(), clock.time())
        if _declared_too_large(response, request):
            raise _too_large(request)
        self._request = request
        self._response = response
        self._deadline = deadline
        self._chunks: list[bytes] = []
        self._total = 0

    def add(self, chunk: bytes) -> None:
        self._total += len(chunk)
        if self._total > self._request.limit:
            raise _too_large(self._request)
        # An abandoned blocking worker stops here at its next read after the deadline.
        self._deadline.check(self._request)
        self._chunks.append(chunk)

    def answer(self) -> WireResponse:
        return WireResponse(
            self._response.status_code,
            _lower_headers(self._response),
            b"".join(self._chunks),
            *self._received,
        )


class _Deadline:
    """When a step must have finished, on the real monotonic clock (the injected clock
    orders session deadlines; a step's budget is wall time actually spent waiting)."""

    __slots__ = ("budget", "end")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.end = time.monotonic() + budget

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self, request: WireRequest) -> None:
        if self.remaining() <= 0:
            raise _timed_out(request, self.budget)


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
        self._budget = step_budget(self._timeout)
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

    def _send_once(self, request: WireRequest, deadline: _Deadline) -> WireResponse:
        try:
            with self._get_client().stream(
                request.method,
                request.url,
                headers=request.headers,
                content=request.body,
                timeout=_phase_timeout(self._timeout, deadline.remaining()),
            ) as response:
                body = _CappedBody(request, response, self._clock, deadline)
                for chunk in response.iter_bytes():
                    body.add(chunk)
                answer = body.answer()
        except httpx2.HTTPError as exc:
            raise self._failure(exc, request, deadline) from None
        _log_answer(request, answer)
        return answer

    def _failure(
        self, exc: httpx2.HTTPError, request: WireRequest, deadline: _Deadline
    ) -> CopilotHostError:
        if self._closed:
            # The host was closed under this request: a retry cannot succeed.
            return _closed_error()
        if deadline.remaining() <= 0:
            return _timed_out(request, deadline.budget)
        return _error_for(exc, request)

    def _attempts(self, request: WireRequest, deadline: _Deadline) -> WireResponse:
        answer = self._send_once(request, deadline)
        if request.retry:
            delay = retry_delay(answer)
            # A retry that could not finish in time is not made: the answer stands.
            if delay is not None and delay < deadline.remaining():
                _log.debug(
                    "%s: HTTP %d, retrying once in %.1f s", request.what, answer.status, delay
                )
                self._sleep(delay)
                answer = self._send_once(request, deadline)
        return answer

    def send(self, request: WireRequest) -> WireResponse:
        """Send; for steps marked ``retry``, one bounded retry of a 429 or 5xx. The whole
        step ends by its deadline with ``TransportError(code="timeout")``."""
        deadline = _Deadline(_budget_of(request, self._budget))
        self._get_client()  # a closed host or a broken TLS setup fails here, typed
        try:
            return call_bounded(
                lambda: self._attempts(request, deadline),
                deadline.remaining(),
                name="copilot-host-step",
            )
        except Abandoned:
            _log.debug("%s: abandoned at its %.0f s deadline", request.what, deadline.budget)
            raise _timed_out(request, deadline.budget) from None


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
        self._budget = step_budget(self._timeout)
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

    async def _send_once(self, request: WireRequest, deadline: _Deadline) -> WireResponse:
        try:
            async with self._get_client().stream(
                request.method,
                request.url,
                headers=request.headers,
                content=request.body,
                timeout=_phase_timeout(self._timeout, deadline.remaining()),
            ) as response:
                body = _CappedBody(request, response, self._clock, deadline)
                async for chunk in response.aiter_bytes():
                    body.add(chunk)
                answer = body.answer()
        except httpx2.HTTPError as exc:
            if self._closed:
                raise _closed_error() from None
            raise _error_for(exc, request) from None
        _log_answer(request, answer)
        return answer

    async def _attempts(self, request: WireRequest, deadline: _Deadline) -> WireResponse:
        answer = await self._send_once(request, deadline)
        if request.retry:
            delay = retry_delay(answer)
            if delay is not None and delay < deadline.remaining():
                _log.debug(
                    "%s: HTTP %d, retrying once in %.1f s", request.what, answer.status, delay
                )
                await self._sleep(delay)
                answer = await self._send_once(request, deadline)
        return answer

    async def send(self, request: WireRequest) -> WireResponse:
        """The asyncio twin of :meth:`Sender.send`: the step ends by its deadline."""
        deadline = _Deadline(_budget_of(request, self._budget))
        try:
            async with asyncio.timeout(deadline.remaining()):
                return await self._attempts(request, deadline)
        except TimeoutError:
            raise _timed_out(request, deadline.budget) from None
