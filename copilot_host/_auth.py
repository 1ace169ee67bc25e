"""Dynamic httpx2 auth: the current session bearer per request, for one origin only.

One generator (:meth:`CopilotAuth._steps`) holds the protocol — check the target, get a
session, set the headers, send, and on a 401 invalidate and send once more. Blocking
clients run it directly as their auth flow (it calls the resolver itself); the asyncio
driver has it yield :data:`_SESSION` ("give me a session") and answers with an ``await``,
so the logic exists once.
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
        self._resolver = resolver
        self._endpoint = endpoint
        self._headers: tuple[tuple[str, str], ...] = _check_headers(headers)
        # The same headers as httpx2 stores them: (raw name, lower-case name, value) bytes.
        self._encoded = tuple(
            (name.encode("ascii"), name.lower().encode("ascii"), value.encode("ascii"))
            for name, value in self._headers
        )
        self._owned = frozenset({b"authorization", *(lower for _, lower, _ in self._encoded)})
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

    # -- request hooks ----------------------------------------------------------------------

    def origin_guard(self, request: httpx2.Request) -> None:
        """A request event hook for ``httpx2.Client`` that refuses any hop to another origin.

        httpx2 follows redirects below the auth flow: the bearer is dropped on a hop that
        leaves the origin and the response is then refused, but the request (its body, a
        prompt) has gone out. The hook runs before every hop, so nothing is sent:
        ``httpx2.Client(auth=route.auth, event_hooks={"request": [route.auth.origin_guard]})``.
        """
        self._check_target(request.url)

    async def async_origin_guard(self, request: httpx2.Request) -> None:
        """:meth:`origin_guard` for ``httpx2.AsyncClient`` (its hooks are awaited)."""
        self._check_target(request.url)

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

    def _steps(self, request: httpx2.Request, session_now: Callable[[], object]) -> _Steps:
        """The whole protocol. ``session_now()`` returns a session, or :data:`_SESSION` when
        the driver must supply one (the generator then yields it and is sent the session).
        The blocking driver passes the resolver itself, so httpx2 drives this generator
        directly with no layer in between."""
        self._check_target(request.url)
        session = session_now()
        if session is _SESSION:
            session = yield _SESSION
        assert isinstance(session, CopilotSession)
        self._apply(request, session)
        response: httpx2.Response = yield request
        self._check_landing(response)
        if response.status_code != 401:
            return
        self._resolver.invalidate(session)
        session = session_now()
        if session is _SESSION:
            session = yield _SESSION
        assert isinstance(session, CopilotSession)
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
        headers = request.headers
        if _FAST_HEADERS:
            # One pass over httpx2's header list drops every header we own (whatever its
            # case, duplicates included) and appends ours. Setting six headers one by one
            # costs about ten times as much, over 10% of a warm request; Headers.update
            # more still. The layout was checked at import (see _probe_header_layout).
            entries: list[tuple[bytes, bytes, bytes]] = headers._list
            owned = self._owned
            entries[:] = [entry for entry in entries if entry[1] not in owned]
            # The resolver admits only printable-ASCII tokens, so this cannot fail.
            bearer = b"Bearer " + session.token.reveal().encode("ascii")
            entries.append((b"Authorization", b"authorization", bearer))
            entries.extend(self._encoded)
        else:  # pragma: no cover - only if a future httpx2 changes its header layout
            headers["Authorization"] = "Bearer " + session.token.reveal()
            for name, value in self._headers:
                headers[name] = value

    # -- drivers ---------------------------------------------------------------------------

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        _buffer_body(request)
        # With a blocking session source the steps never yield _SESSION: they are the flow.
        return self._steps(request, self._sync_session)  # type: ignore[return-value]

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if _needs_buffer(request):
            await request.aread()
        steps = self._steps(request, self._session_inline)
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

    def _session_inline(self) -> object:
        # On the event loop, a session that needs no waiting is served inline (no
        # coroutine, no thread hop); only a refresh goes through the async driver.
        session = self._resolver.peek()
        return _SESSION if session is None else session

    async def _session_off_loop(self) -> CopilotSession:
        # A blocking resolver's exchange is network I/O: it runs in a worker thread, and a
        # cancelled request leaves it running for the other callers waiting on it.
        resolver = self._resolver
        assert isinstance(resolver, SessionResolver)
        return await asyncio.to_thread(resolver.get)


_FORBIDDEN = frozenset({"authorization", "proxy-authorization", "host", "cookie", "content-length"})


def _check_headers(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Host headers: printable ASCII (no CR/LF injection), none we or httpx2 must own."""
    checked: dict[str, tuple[str, str]] = {}
    for name, value in headers.items():
        if not (isinstance(name, str) and isinstance(value, str)):
            raise TypeError("request headers are str names and values")
        if not name or not (name.isascii() and name.isprintable()) or ":" in name or " " in name:
            raise ValueError(f"not a valid header name: {clean(name, limit=40)!r}")
        if not (value.isascii() and value.isprintable()):
            raise ValueError(f"the {name} header value must be printable ASCII")
        lower = name.lower()
        if lower in _FORBIDDEN:
            raise ValueError(f"{name} is not a header a host may add to every request")
        if lower in checked:
            raise ValueError(f"the {name} header is given twice")
        checked[lower] = (name, value)
    return tuple(checked.values())


def _probe_header_layout() -> bool:
    """Whether httpx2.Headers still keeps (raw, lower, value) byte triples in ``_list``."""
    try:
        probe = httpx2.Headers({"X-Probe": "1"})
        entries = probe._list
        if entries != [(b"X-Probe", b"x-probe", b"1")]:
            return False
        entries.append((b"X-Other", b"x-other", b"2"))
        return probe.get("x-other") == "2" and probe.raw[1] == (b"X-Other", b"2")
    except Exception:  # any surprise: use the public, slower path
        return False


_FAST_HEADERS: Final = _probe_header_layout()


def _needs_buffer(request: httpx2.Request) -> bool:
    try:
        request.content  # noqa: B018 - raises when the body is a stream not read yet
    except httpx2.RequestNotRead:
        return True
    return False


def _buffer_body(request: httpx2.Request) -> None:
    if _needs_buffer(request):
        request.read()
