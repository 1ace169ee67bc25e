"""Dynamic httpx2 auth: the current session bearer per request, for one origin only.

Per request: check the target, read what the body says (image input, who started the
turn, the model), then drive the request pipeline (:mod:`._pipeline`), which decides the
headers, the retry after a refusal and the identity switch. The two drivers
(``sync_auth_flow`` and ``async_auth_flow``) do only what its steps ask, and differ only
in how they wait. Only httpx2's public API is used.

Which client a route serves follows from its host: a blocking host's routes serve
``httpx2.Client`` and ``httpx2.AsyncClient`` (an exchange the async client needs runs in a
worker thread); an asynchronous host's routes serve ``httpx2.AsyncClient`` only, since
its exchanges run on an event loop a blocking client does not have.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Generator, Iterable, Mapping
from typing import NoReturn

import httpx2

from .._api import ApiProtocol, protocol_of_path
from .._errors import EntitlementError, OriginError, SessionError
from .._hosts import CopilotSession, LoginIdentity
from .._origin import CopilotEndpoint
from .._safety._text import clean
from ._auto import AutoChooser, AutoPick, session_entry
from ._inspect import NOT_A_TURN, RequestFacts, facts_of_body, read_json_body
from ._pipeline import (
    INITIATOR,
    NEED_ERROR_BODY,
    NEED_SESSION,
    VISION,
    Extra,
    Pipeline,
    Send,
    Step,
    SwitchesIdentity,
)
from ._refusals import refusal_of
from ._resolver import ASK_HOST, AsyncSessionResolver, SessionResolver

__all__ = ["INITIATOR", "VISION", "CopilotAuth"]

# A socket's scheme -> the scheme of the origin it belongs to (RFC 6455 §3).
_SOCKET_SCHEMES = {"wss": "https", "ws": "http"}


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
      ``X-Initiator`` (``user``/``agent``) from the body, unless the client set exactly
      ``user`` or ``agent`` itself (any other client value is replaced).
    * With a ``switcher`` (a host that has another identity to present), a 400
      ``model_not_supported`` for a model in ``listed`` is sent once more with the other
      identity's headers; the switch is kept only when that answer is a success. No
      request is sent more than twice.
    * A 401, or a 403 on a session from the cache, drops that session and the request goes
      out once more with a new one, at most one new exchange per second however many
      requests are refused; otherwise the refusal is returned as it is. A 403 that is an
      organisation's policy refusing the client is returned at once (:meth:`refusal` reads
      it, and a 400 ``model_not_available_for_integrator``, in plain words).
    * With ``auto`` (the auth of Copilot Auto's route, ``github-copilot/auto``), every
      inference request goes to the model of the account's Auto session that serves its
      API: the body's ``model`` is replaced by that model's id (and its length with it)
      and the request carries the session's ``Copilot-Session-Token``
      (:mod:`copilot_host._sessions._auto` says how the session and the model are chosen).
      A Copilot session Auto's call refuses (401) is dropped as a refused request's is, so
      the next request exchanges a new one.

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
        *,
        switcher: SwitchesIdentity | None = None,
        listed: Iterable[str] = (),
        auto: AutoChooser | None = None,
    ) -> None:
        self._resolver = resolver
        self._auto = auto
        self._endpoint = endpoint
        self._pipeline = Pipeline(resolver, endpoint, headers, switcher=switcher, listed=listed)
        # The target as httpx2's URL names it: scheme, host bytes (IPv6 without brackets),
        # port (None for the scheme's default).
        self._target = (endpoint.scheme, endpoint.host.strip("[]").encode("ascii"), endpoint.port)

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

    def refusal(self, response: httpx2.Response) -> EntitlementError | None:
        """What ``response`` means when the service refused the client by policy, else None.

        A 403 "not authorized to use this Copilot feature" is an ``EntitlementError`` with
        code ``policy_refused``, a 400 ``model_not_available_for_integrator`` one with code
        ``integrator_refused``; the message says which identity or OAuth app is refused and
        what an administrator or the person can do. ``route.auth`` returns such an answer
        to the SDK as it is (a 403 of this kind is not taken for a stale session: no new
        exchange, no second send); an application that wants the plain words passes the
        SDK error's ``response`` here. A response not read yet is read (sync responses).
        """
        try:
            body = response.content
        except httpx2.ResponseNotRead:
            body = response.read()
        found = refusal_of(response.status_code, body)
        if found is None:
            return None
        presented = [
            value
            for name, value in self._pipeline.presented.items()
            if name.lower() == "copilot-integration-id"
        ]
        return found.error("the Copilot API request", presented)

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

    # -- a WebSocket's handshake -------------------------------------------------------------

    def handshake_headers(
        self, url: str, *, vision: bool = False, rejected: bool = False
    ) -> list[tuple[str, str]]:
        """The headers of a WebSocket handshake to ``url``: the session bearer and the
        host's editor headers, as a request of this route carries them (VS Code opens
        Copilot's ``wss://{api}/responses`` so), and ``Copilot-Vision-Request: true`` when
        ``vision`` (the socket will carry image input). ``X-Initiator`` is not among them:
        on a socket each message says who started its turn (``"initiator"`` in its body).

        ``url`` must be this auth's origin as a socket names it (``wss://`` for
        ``https://``, ``ws://`` for a loopback ``http://`` one), any path: anything else is
        refused with ``OriginError`` (``origin_mismatch``), as :meth:`origin_guard` refuses
        a request, and so is a session that names another endpoint. With ``rejected`` (the
        headers given last were answered 401), a new session is exchanged first when one is
        worth it, under the same rule as a request refused over HTTP. Blocking hosts only
        (as ``httpx2.Client``); :meth:`ahandshake_headers` is the asynchronous twin. The
        caller passes the headers to its socket client and keeps them no longer than the
        socket: calling again before each use tells whether the session moved on (the
        headers then differ), which a socket opened with the old ones does not follow.
        """
        resolver = self._resolver
        if not isinstance(resolver, SessionResolver):
            raise TypeError(
                f"this route belongs to an asynchronous host ({type(resolver.host).__name__}): "
                "use ahandshake_headers"
            )
        self._check_socket_target(url)
        asked = resolver.installs
        session = resolver.get()
        if rejected and resolver.rejected(session, asked, forbidden=False):
            session = resolver.get()
        return self._handshake(session, vision)

    async def ahandshake_headers(
        self, url: str, *, vision: bool = False, rejected: bool = False
    ) -> list[tuple[str, str]]:
        """:meth:`handshake_headers` for either kind of host, waiting as the asynchronous
        flow waits (a blocking host's exchange in a worker thread)."""
        self._check_socket_target(url)
        resolver = self._resolver
        asked = resolver.installs
        session = await self._session(ASK_HOST)
        if rejected and resolver.rejected(session, asked, forbidden=False):
            session = await self._session(ASK_HOST)
        return self._handshake(session, vision)

    def _handshake(self, session: CopilotSession, vision: bool) -> list[tuple[str, str]]:
        facts = RequestFacts(vision=vision) if vision else NOT_A_TURN
        headers, _ = self._pipeline.first(facts, (), session)
        return [(name.decode("ascii"), value.decode("ascii")) for name, value in headers]

    def _check_socket_target(self, url: str) -> None:
        try:
            parsed = httpx2.URL(url)
        except (httpx2.InvalidURL, TypeError):
            parsed = None
        scheme = _SOCKET_SCHEMES.get(parsed.scheme) if parsed is not None else None
        if parsed is None or scheme is None:
            shown = clean(str(url).partition("?")[0], limit=120)
            raise OriginError(
                f"refusing to send the Copilot session to {shown}: a socket's handshake goes "
                f"to this auth's origin ({self._endpoint.origin}) as wss://",
                code="origin_mismatch",
            )
        self._check_target(parsed.copy_with(scheme=scheme))

    def for_request(
        self, facts: RequestFacts, identity: LoginIdentity | None, auto: AutoPick | None = None
    ) -> httpx2.Auth:
        """This auth for one asynchronous request whose caller has read the body and the
        login already (the gateway): ``facts`` replace the body inspection, ``identity``
        (the host's ``availability()`` just now) the resolver's own look at the login.
        ``auto`` is the caller's :meth:`auto_pick` for the request, whose body already
        names the picked model: the request goes with that session's header."""
        return _Bound(self, facts, identity, auto)

    @property
    def serves_auto(self) -> bool:
        """Whether this is the auth of Copilot Auto's route (``github-copilot/auto``)."""
        return self._auto is not None

    async def auto_pick(
        self,
        protocol: ApiProtocol,
        value: object,
        *,
        facts: RequestFacts,
        identity: LoginIdentity | None,
    ) -> AutoPick:
        """For a caller that sends the request itself (the gateway): the model an Auto
        request on ``protocol`` (its parsed body ``value``) goes to, and its session (the
        session obtained first when none serves). Raises ``EntitlementError``
        (``auto_unavailable``) when Auto cannot serve it; ``TypeError`` on an auth that is
        not Auto's."""
        auto = self._auto
        if auto is None:
            raise TypeError("this route is not Copilot Auto's: its auth picks no model")
        session = await self._session(identity)
        return await self._achoose(auto, session, protocol, value, facts)

    async def _achoose(
        self,
        auto: AutoChooser,
        session: CopilotSession,
        protocol: ApiProtocol,
        value: object,
        facts: RequestFacts,
    ) -> AutoPick:
        try:
            return await auto.achoose(session, protocol, value, vision=facts.vision)
        except SessionError as exc:
            self._dead(session, exc)
            raise

    def _dead(self, session: CopilotSession, error: SessionError) -> None:
        # Auto's call answered 401: GitHub no longer takes this session (revoked, or
        # expired by its clock). Kept, it would be sent again until it expires by ours.
        if error.code == "session_expired":
            self._resolver.invalidate(session)

    # -- the drivers: each step of the pipeline, done; they differ only in how they wait ----

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        resolver = self._resolver
        if not isinstance(resolver, SessionResolver):
            raise TypeError(
                f"this route belongs to an asynchronous host ({type(resolver.host).__name__}): "
                "use httpx2.AsyncClient, or register with a blocking host to use httpx2.Client"
            )
        try:
            request.content  # noqa: B018 - raises when the body is a stream not read yet
        except httpx2.RequestNotRead:
            request.read()  # the retry after a refusal resends the same body
        protocol, facts = self._facts(request)
        # The pipeline's first steps, taken inline (see its module docstring): most requests end
        # at their first answer, and a generator per request is a fifth of the cost.
        pipeline = self._pipeline
        asked = resolver.installs
        session = resolver.get()
        extra: Extra = None
        auto = self._auto
        if auto is not None and protocol is not None:
            value = _value_of(request)
            try:
                pick = auto.choose(session, protocol, value, vision=facts.vision)
            except SessionError as exc:
                self._dead(session, exc)
                raise
            request, facts, extra = _to_pick(request, value, facts, pick)
        client = request.headers.raw
        headers, identity = pipeline.first(facts, client, session, extra)
        request.headers = httpx2.Headers(headers)
        response = yield request
        self._check_landing(response)
        status = response.status_code
        if pipeline.settled(status, facts):
            return
        flow = pipeline.after(
            facts,
            client,
            session=session,
            identity=identity,
            asked=asked,
            status=status,
            extra=extra,
        )
        step: Step | None = next(flow, None)  # None: the answer stands after all
        while step is not None:
            reply: object
            if step is NEED_SESSION:
                reply = resolver.get()
            elif step is NEED_ERROR_BODY:
                reply = response.read()
            else:
                assert isinstance(step, Send)
                request.headers = httpx2.Headers(step.headers)
                response = yield request
                self._check_landing(response)
                reply = response.status_code
            try:
                step = flow.send(reply)
            except StopIteration:
                return

    def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self._adrive(request, None, ASK_HOST, None)

    async def _adrive(
        self,
        request: httpx2.Request,
        facts: RequestFacts | None,
        identity: LoginIdentity | object | None,
        pick: AutoPick | None,
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        protocol: ApiProtocol | None = None
        if facts is None:
            try:
                request.content  # noqa: B018 - raises when the body is a stream not read yet
            except httpx2.RequestNotRead:
                await request.aread()
            protocol, facts = self._facts(request)
        else:
            self._check_target(request.url)
        pipeline = self._pipeline
        asked = self._resolver.installs
        session = await self._session(identity)
        extra: Extra = None if pick is None else session_entry(pick)
        auto = self._auto
        if pick is None and auto is not None and protocol is not None:
            value = _value_of(request)
            chosen = await self._achoose(auto, session, protocol, value, facts)
            request, facts, extra = _to_pick(request, value, facts, chosen)
        client = request.headers.raw
        headers, presented = pipeline.first(facts, client, session, extra)
        request.headers = httpx2.Headers(headers)
        response = yield request
        self._check_landing(response)
        status = response.status_code
        if pipeline.settled(status, facts):
            return
        flow = pipeline.after(
            facts,
            client,
            session=session,
            identity=presented,
            asked=asked,
            status=status,
            extra=extra,
        )
        step: Step | None = next(flow, None)  # None: the answer stands after all
        while step is not None:
            reply: object
            if step is NEED_SESSION:
                reply = await self._session(identity)
            elif step is NEED_ERROR_BODY:
                reply = await response.aread()
            else:
                assert isinstance(step, Send)
                request.headers = httpx2.Headers(step.headers)
                response = yield request
                self._check_landing(response)
                reply = response.status_code
            try:
                step = flow.send(reply)
            except StopIteration:
                return

    async def _session(self, identity: LoginIdentity | object | None) -> CopilotSession:
        resolver = self._resolver
        # A session that needs no waiting is served inline: no coroutine, no thread hop.
        session = resolver.peek(identity)
        if session is not None:
            return session
        if isinstance(resolver, AsyncSessionResolver):
            return await resolver.get()
        # A blocking host's exchange is network I/O: it runs in a worker thread, and a
        # cancelled request leaves it running for the other callers waiting on it.
        return await asyncio.to_thread(resolver.get)

    def _facts(self, request: httpx2.Request) -> tuple[ApiProtocol | None, RequestFacts]:
        """Refuse another origin; read what an inference body says about its turn (and
        the API it speaks; None for a request that is not an inference turn)."""
        url = request.url
        self._check_target(url)
        if request.method != "POST":
            return None, NOT_A_TURN
        protocol = protocol_of_path(url.raw_path) or protocol_of_path(url.path)
        if protocol is None:
            return None, NOT_A_TURN
        return protocol, facts_of_body(protocol, request.content)

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


def _value_of(request: httpx2.Request) -> object:
    """The request's body as JSON (None when it is not JSON: it goes as it is)."""
    try:
        return read_json_body(request.content)
    except ValueError:
        return None


def _to_pick(
    request: httpx2.Request, value: object, facts: RequestFacts, pick: AutoPick
) -> tuple[httpx2.Request, RequestFacts, Extra]:
    """The request as it goes to Auto's pick: its body's ``model`` the picked id (a new
    request, so that the length follows), the facts naming that model, and the session's
    header. A body that is not a JSON object goes as it is (the service refuses it)."""
    model = pick.model_id
    facts = RequestFacts(facts.vision, facts.initiator, model)
    if isinstance(value, dict):
        value["model"] = model
        try:
            body = json.dumps(value, separators=(",", ":")).encode("ascii")
        except (ValueError, RecursionError):  # what the parser took, nested past the encoder
            return request, facts, session_entry(pick)
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        request = httpx2.Request(
            request.method,
            request.url,
            headers=headers,
            content=body,
            extensions=request.extensions,
        )
    return request, facts, session_entry(pick)


class _Bound(httpx2.Auth):
    """:class:`CopilotAuth` for one request whose body and login were read by its caller."""

    def __init__(
        self,
        auth: CopilotAuth,
        facts: RequestFacts,
        identity: LoginIdentity | None,
        pick: AutoPick | None,
    ) -> None:
        self._auth = auth
        self._facts = facts
        self._identity = identity
        self._pick = pick

    def __repr__(self) -> str:
        return repr(self._auth)

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise TypeError("a route's auth for one request serves httpx2.AsyncClient only")

    def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self._auth._adrive(request, self._facts, self._identity, self._pick)
