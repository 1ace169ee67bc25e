"""Dynamic httpx2 auth: the current session bearer per request, for one origin only.

One generator (:meth:`CopilotAuth._steps`) holds the protocol — check the target, ask for a
session, set the headers, send, and on a 401 invalidate and send once more. It yields
either a request to send or :data:`_SESSION` ("give me a session"); the thread and asyncio
drivers answer the latter each in their own way, so the logic exists once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Mapping
from typing import Any, Final, NoReturn

import httpx2

from ._errors import OriginError
from ._origin import CopilotEndpoint
from ._resolver import AsyncSessionResolver, SessionResolver
from ._seam import CopilotSession
from ._text import clean

__all__ = ["CopilotAuth"]


class _Need:
    """The sentinel a step yields to ask its driver for the current session."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<session needed>"


_SESSION: Final = _Need()
_Step = httpx2.Request | _Need
_Steps = Generator[_Step, Any, None]


class CopilotAuth(httpx2.Auth):
    """Adds ``Authorization: Bearer <session>`` and the host's editor headers per request.

    * Only requests for ``endpoint``'s origin get the bearer; any other target (a wrong
      base URL, a redirect that left the origin) is refused with ``OriginError``
      (``origin_mismatch``).
    * An ``Authorization`` header the client set itself (an SDK's placeholder API key) is
      replaced, never sent.
    * A 401 invalidates the session it was sent with and the request goes out once more
      with a new one; a second 401 is returned to the caller as it is.
    * It serves ``httpx2.Client`` and ``httpx2.AsyncClient`` with either resolver. A blocking
      resolver used from an async client serves a usable session inline and runs a needed
      exchange in a worker thread; an async resolver used from a blocking client follows
      :meth:`AsyncSessionResolver.get_blocking`.

    The object holds no token: the session lives in the resolver and the header value is
    built per request. It cannot be pickled; copying returns the same object.
    """

    # The request body must be replayable so that the retry after a 401 can resend it;
    # the flows below buffer a streaming body only when it is not already in memory.
    requires_request_body = True
    requires_response_body = False

    def __init__(
        self,
        resolver: SessionResolver | AsyncSessionResolver,
        endpoint: CopilotEndpoint,
        headers: Mapping[str, str],
    ) -> None:
        if resolver.endpoint != endpoint:
            raise OriginError(
                f"the resolver serves {resolver.endpoint.origin}, not {endpoint.origin}",
                code="origin_mismatch",
            )
        for name in headers:
            if name.lower() in ("authorization", "proxy-authorization", "host", "cookie"):
                raise ValueError(f"{name} is not a header a host may add to every request")
        self._resolver = resolver
        self._endpoint = endpoint
        self._headers: tuple[tuple[str, str], ...] = tuple(headers.items())
        host = endpoint.host.strip("[]")
        self._target = (endpoint.scheme, host.encode("ascii"), endpoint.port)
        self._sync_session: Callable[[], CopilotSession]
        self._async_session: Callable[[], Coroutine[Any, Any, CopilotSession]]
        if isinstance(resolver, AsyncSessionResolver):
            self._sync_session = resolver.get_blocking
            self._async_session = resolver.get
        else:
            self._sync_session = resolver.get
            self._async_session = self._session_off_loop

    @property
    def endpoint(self) -> CopilotEndpoint:
        return self._endpoint

    def __repr__(self) -> str:
        return f"CopilotAuth({self._endpoint.origin!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("CopilotAuth is bound to a live session resolver and cannot be pickled")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("CopilotAuth is bound to a live session resolver and cannot be pickled")

    def __copy__(self) -> CopilotAuth:
        return self

    def __deepcopy__(self, memo: object) -> CopilotAuth:
        return self

    # -- the protocol, once ---------------------------------------------------------------

    def _steps(self, request: httpx2.Request) -> _Steps:
        self._check_target(request.url)
        session: CopilotSession = yield _SESSION
        self._apply(request, session)
        response: httpx2.Response = yield request
        self._check_landing(response)
        if response.status_code != 401:
            return
        self._resolver.invalidate(session)
        session = yield _SESSION
        self._apply(request, session)
        response = yield request
        self._check_landing(response)

    def _check_target(self, url: httpx2.URL) -> None:
        if (url.scheme, url.raw_host, url.port) != self._target:
            origin = clean(f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}", limit=120)
            raise OriginError(
                f"refusing to send the Copilot session to {origin}: this auth serves "
                f"{self._endpoint.origin} only (check the client's base URL)",
                code="origin_mismatch",
            )

    def _check_landing(self, response: httpx2.Response) -> None:
        # httpx2 follows redirects below the auth flow (and drops Authorization when one
        # leaves the origin); a response that came from elsewhere is refused, not returned.
        if response.history:
            for hop in (*response.history, response):
                self._check_target(hop.request.url)

    def _apply(self, request: httpx2.Request, session: CopilotSession) -> None:
        # One by one: Headers.update rebuilds the header list and is several times slower.
        headers = request.headers
        headers["Authorization"] = "Bearer " + session.token.reveal()
        for name, value in self._headers:
            headers[name] = value

    # -- drivers ---------------------------------------------------------------------------

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        _buffer_body(request)
        steps = self._steps(request)
        step = next(steps)
        while True:
            if step is _SESSION:
                answer: object = self._sync_session()
            else:
                answer = yield step  # type: ignore[misc]
            try:
                step = steps.send(answer)
            except StopIteration:
                return

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if _needs_buffer(request):
            await request.aread()
        steps = self._steps(request)
        step = next(steps)
        while True:
            if step is _SESSION:
                answer: object = await self._async_session()
            else:
                answer = yield step  # type: ignore[misc]
            try:
                step = steps.send(answer)
            except StopIteration:
                return

    async def _session_off_loop(self) -> CopilotSession:
        resolver = self._resolver
        assert isinstance(resolver, SessionResolver)
        # Inline when no waiting is needed: a thread hop per request would cost more than
        # the request. Only an exchange (network I/O) leaves the event loop.
        session = resolver.peek()
        if session is not None:
            return session
        return await asyncio.to_thread(resolver.get)


def _needs_buffer(request: httpx2.Request) -> bool:
    try:
        request.content  # noqa: B018 - raises when the body is a stream not read yet
    except httpx2.RequestNotRead:
        return True
    return False


def _buffer_body(request: httpx2.Request) -> None:
    if _needs_buffer(request):
        request.read()
