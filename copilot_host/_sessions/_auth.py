"""Dynamic httpx2 auth: the current session bearer per request, for one origin only.

Per request: check the target, read what the body says (image input, who started the
turn), get the session, write the headers, send; on a refusal (401, or 403 on a session
from the cache) the resolver decides whether one more try is worth a new exchange. The
steps are methods shared by the two drivers (``sync_auth_flow`` and ``async_auth_flow``),
which only differ in how they wait for a session.

Which client a route serves follows from its host: a blocking host's routes serve
``httpx2.Client`` and ``httpx2.AsyncClient`` (an exchange the async client needs runs in a
worker thread); an asynchronous host's routes serve ``httpx2.AsyncClient`` only, since
its exchanges run on an event loop a blocking client does not have.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator, Mapping
from typing import Final, NoReturn

import httpx2

from .._errors import OriginError
from .._hosts import CopilotSession
from .._origin import CopilotEndpoint
from .._safety._text import clean
from ._inspect import inspect_body, protocol_of_path
from ._resolver import AsyncSessionResolver, SessionResolver

__all__ = ["CopilotAuth"]

INITIATOR = "X-Initiator"
VISION = "Copilot-Vision-Request"
_INITIATOR_KEY = INITIATOR.lower().encode("ascii")
_VISION_ENTRY = (VISION.encode("ascii"), VISION.lower().encode("ascii"), b"true")

# (image input, initiator) of a request whose body is not an inference turn.
_Facts = tuple[bool, str | None]
_NOT_A_TURN: Final[_Facts] = (False, None)


class CopilotAuth(httpx2.Auth):
    """Adds ``Authorization: Bearer <session>`` and the host's editor headers per request.

    * Only requests for ``endpoint``'s origin get the bearer; any other target (a wrong
      base URL, a redirect that left the origin) is refused with ``OriginError``
      (``origin_mismatch``), and so is a session that names another endpoint (the account
      moved: register the models again).
    * An ``Authorization`` header the client set itself (an SDK's placeholder API key) is
      replaced, never sent.
    * On an inference request it sets ``Copilot-Vision-Request: true`` exactly when the
      body carries image input (a client-set value is removed otherwise) and
      ``X-Initiator`` (``user``/``agent``) from the body, unless the client set one.
    * A 401, or a 403 on a session from the cache, drops that session and the request goes
      out once more with a new one, at most one new exchange per second however many
      requests are refused; otherwise the refusal is returned as it is.

    The session lives in the resolver; the auth keeps the header values of the last
    session it used (built once per session, not once per request), in memory only, as the
    resolver keeps the session. Its repr shows neither, it cannot be pickled, and copying
    returns the same object.
    """

    def __init__(
        self,
        resolver: SessionResolver | AsyncSessionResolver,
        endpoint: CopilotEndpoint,
        headers: Mapping[str, str],
    ) -> None:
        self._resolver = resolver
        self._endpoint = endpoint
        self._headers: tuple[tuple[str, str], ...] = _check_headers(headers)
        # The same headers as httpx2 stores them: (raw name, lower-case name, value) bytes.
        self._encoded = tuple(
            (name.encode("ascii"), name.lower().encode("ascii"), value.encode("ascii"))
            for name, value in self._headers
        )
        self._owned = frozenset(
            {b"authorization", _VISION_ENTRY[1], *(lower for _, lower, _ in self._encoded)}
        )
        host = endpoint.host.strip("[]")
        self._target = (endpoint.scheme, host.encode("ascii"), endpoint.port)
        # The same target as httpx2's parsed URL holds it (lower-case host, default port as
        # None, IPv6 without brackets), when the layout probe at import recognised it.
        self._parsed_target = (endpoint.scheme, host, endpoint.port)
        # What the last session adds to a request, kept with the session it was built from.
        self._prepared: tuple[CopilotSession, tuple[tuple[bytes, bytes, bytes], ...]] | None = None
        # The resolver's own pieces, for the per-request hot path (same package).
        self._core = resolver._core
        self._availability = resolver._host.availability

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

    # -- the drivers ------------------------------------------------------------------------

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        resolver = self._resolver
        if not isinstance(resolver, SessionResolver):
            raise TypeError(
                "this route belongs to an asynchronous host (AsyncGitHubCopilotHost): use "
                "httpx2.AsyncClient, or register with a blocking GitHubCopilotHost to use "
                "httpx2.Client"
            )
        try:
            request.content  # noqa: B018 - raises when the body is a stream not read yet
        except httpx2.RequestNotRead:
            request.read()  # the retry after a refusal resends the same body
        facts = self._prepare(request)
        core = self._core
        asked = core.installs
        # The resolver's hot path, inlined: most requests find a fresh session at once.
        session = core.hot(self._availability()) or resolver.get()
        self._apply(request, session, facts)
        response = yield request
        if self._retry(response, session, asked):
            self._apply(request, resolver.get(), facts)
            response = yield request
            self._check_landing(response)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            request.content  # noqa: B018 - raises when the body is a stream not read yet
        except httpx2.RequestNotRead:
            await request.aread()
        facts = self._prepare(request)
        asked = self._core.installs
        # A session that needs no waiting is served inline: no coroutine, no thread hop.
        session = self._resolver.peek() or await self._session()
        self._apply(request, session, facts)
        response = yield request
        if self._retry(response, session, asked):
            self._apply(request, await self._session(), facts)
            response = yield request
            self._check_landing(response)

    async def _session(self) -> CopilotSession:
        resolver = self._resolver
        if isinstance(resolver, AsyncSessionResolver):
            return await resolver.get()
        # A blocking host's exchange is network I/O: it runs in a worker thread, and a
        # cancelled request leaves it running for the other callers waiting on it.
        return await asyncio.to_thread(resolver.get)

    # -- the steps, once ----------------------------------------------------------------------

    def _prepare(self, request: httpx2.Request) -> _Facts:
        """Refuse another origin; read what an inference body says about its turn."""
        url = request.url
        parsed = url._uri_reference if _FAST_URLS else None
        if parsed is None or (parsed.scheme, parsed.host, parsed.port) != self._parsed_target:
            self._check_target(url)  # the whole check, which names what it refuses
        if request.method != "POST":
            return _NOT_A_TURN
        protocol = protocol_of_path(url.path)
        if protocol is None:
            return _NOT_A_TURN
        return inspect_body(protocol, request.content)

    def _retry(self, response: httpx2.Response, session: CopilotSession, asked: int) -> bool:
        """Whether a refusal is worth one more try with a new session."""
        self._check_landing(response)
        status = response.status_code
        if status not in (401, 403):
            return False
        return self._resolver.rejected(session, asked, forbidden=status == 403)

    def _check_target(self, url: httpx2.URL) -> None:
        if _FAST_URLS:
            parsed = url._uri_reference
            if (parsed.scheme, parsed.host, parsed.port) == self._parsed_target:
                return
        if (url.scheme, url.raw_host, url.port) != self._target:
            origin = clean(f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}", limit=120)
            raise OriginError(
                f"refusing to send the Copilot session to {origin}: this auth serves "
                f"{self._endpoint.origin} only (check the client's base URL)",
                code="origin_mismatch",
            )

    def _prepare_session(
        self, session: CopilotSession
    ) -> tuple[CopilotSession, tuple[tuple[bytes, bytes, bytes], ...]]:
        """What a session adds to every request (its bearer, the host's headers), built and
        checked once per session rather than once per request."""
        if session.endpoint != self._endpoint:
            # The one place a session's endpoint meets a route's: the account now lives on
            # another inference host, and these routes point at the old one.
            raise OriginError(
                f"the Copilot session names {session.endpoint.origin}, but these routes were "
                f"registered for {self._endpoint.origin}; register the models again",
                code="origin_mismatch",
            )
        # The resolver admits only printable-ASCII tokens, so this cannot fail.
        bearer = b"Bearer " + session.token.reveal().encode("ascii")
        prepared = (session, ((b"Authorization", b"authorization", bearer), *self._encoded))
        self._prepared = prepared
        return prepared

    def _check_landing(self, response: httpx2.Response) -> None:
        # httpx2 follows redirects below the auth flow (and drops Authorization when one
        # leaves the origin); a response that came from elsewhere is refused, not returned.
        if response.history:
            for hop in (*response.history, response):
                self._check_target(hop.request.url)

    def _apply(self, request: httpx2.Request, session: CopilotSession, facts: _Facts) -> None:
        prepared = self._prepared
        if prepared is None or prepared[0] is not session:
            prepared = self._prepare_session(session)
        vision, initiator = facts
        headers = request.headers
        if _FAST_HEADERS:
            # One pass over httpx2's header list drops every header we own (whatever its
            # case, duplicates included) and appends ours. Setting the headers one by one
            # costs several times as much on the per-request path; Headers.update more
            # still. The layout was checked at import (see _probe_header_layout).
            entries: list[tuple[bytes, bytes, bytes]] = headers._list
            owned = self._owned
            kept = [entry for entry in entries if entry[1] not in owned]
            kept += prepared[1]
            if vision:
                kept.append(_VISION_ENTRY)
            if initiator is not None and not any(e[1] == _INITIATOR_KEY for e in kept):
                kept.append((INITIATOR.encode("ascii"), _INITIATOR_KEY, initiator.encode()))
            entries[:] = kept
        else:  # pragma: no cover - only if a future httpx2 changes its header layout
            headers["Authorization"] = "Bearer " + session.token.reveal()
            for name, value in self._headers:
                headers[name] = value
            if vision:
                headers[VISION] = "true"
            else:
                headers.pop(VISION, None)
            if initiator is not None and INITIATOR not in headers:
                headers[INITIATOR] = initiator


_FORBIDDEN = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "host",
        "cookie",
        "content-length",
        # Decided per request from the body, never fixed by a host.
        VISION.lower(),
        INITIATOR.lower(),
    }
)


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


def _probe_url_layout() -> bool:
    """Whether httpx2.URL still keeps its parsed parts (lower-case host, default port as
    None, IPv6 without brackets) in ``_uri_reference``: comparing those is cheaper than the
    public properties, on the path every request takes."""
    try:
        parsed = httpx2.URL("https://Example.COM:443/x")._uri_reference
        v6 = httpx2.URL("https://[::1]:8443/")._uri_reference
        return (parsed.scheme, parsed.host, parsed.port) == ("https", "example.com", None) and (
            v6.host,
            v6.port,
        ) == ("::1", 8443)
    except Exception:  # any surprise: the public properties alone decide
        return False


_FAST_URLS: Final = _probe_url_layout()
