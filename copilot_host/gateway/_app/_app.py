"""The gateway as an ASGI 3 application: the access stage, then a request's pipeline.

A request is refused, with nothing sent upstream, at the first of (stage **access**,
:mod:`._access`): framing that two parsers could read two ways (both ``Content-Length`` and
``Transfer-Encoding``: 400, and the connection closed); its Host, its Origin, its key; a
path or method the gateway does not serve (404, 405). ``HEAD``/``GET`` on ``/`` and
``/api/hello`` (agents' probes) answer 200 once Host, Origin and key pass. Then the request
goes through :class:`~._pipeline.Pipeline`: ``GET /v1/models`` is answered from the routes,
and a model request goes through intake, resolve, change, admit, relay and account
(docs/ARCHITECTURE.md, "The path of one gateway request", walks it stage by stage). Errors
take the shape of the API the path belongs to (:mod:`copilot_host.gateway._protocols`).

Every answer to a request that carried ``Transfer-Encoding`` closes the connection
(RFC 9112 §6.1), so no two readings of one request's end can disagree on where the next
one starts.

Each request ends with one access line (:mod:`._account`); details (refusal reasons,
upstream request ids, failures) go to ``copilot_host.gateway`` at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Literal

import httpx2

import copilot_host as ch

from .._agents import NAMES
from .._changes import Changes, check_rewrites
from .._ledger import Recorder
from .._protocols import api_of_path, errors_of
from ._access import allowed_hosts, check_access, read_headers
from ._account import ACCESS_LOGGER, writer
from ._connect import Connector, connect
from ._failures import answer_failure
from ._flow import Flow, Message, Receive, Send
from ._hooks import GatewayHooks
from ._intake import MAX_BODY_BYTES
from ._names import ModelNames, Served
from ._pipeline import MODEL_HEADER, MODEL_PREFIX, MODELS, Pipeline
from ._registry import Registry
from ._relay import UPSTREAM_LIMITS, UPSTREAM_TIMEOUT
from ._routes import framing_refusal, route_refusal
from ._socket import serve_socket
from ._socket_health import CopilotSockets
from ._spend import Spend

__all__ = ["ACCESS_LOGGER", "MAX_BODY_BYTES", "MODEL_HEADER", "GatewayApp", "create_app"]

Scope = Message

_log = logging.getLogger("copilot_host.gateway")
_access = logging.getLogger(ACCESS_LOGGER)

# Paths agents probe to see whether a server is there (Claude Code sends HEAD /api/hello).
_PROBES = frozenset({"/", "/api/hello"})


def create_app(
    host: ch.AsyncCopilotHost,
    *,
    api_key: str,
    transport: httpx2.AsyncBaseTransport | None = None,
    clock: ch.Clock = ch.SYSTEM_CLOCK,
    hooks: GatewayHooks | None = None,
    max_credits: float | None = None,
    model_aliases: Mapping[str, str] | None = None,
    default_model: str | None = None,
    rewrites: Collection[str] | None = None,
    access_line: Callable[[str], None] | None = None,
    sockets: Connector | Literal[False] | None = None,
) -> GatewayApp:
    """The gateway for ``host``'s account, as an ASGI 3 application with lifespan support.

    ``api_key`` is what clients must present (at least 16 printable ASCII characters; the
    app registers it with the redaction filter). ``transport`` carries the upstream
    requests (None: httpx2's own, with the proxy settings it reads, so a test suite that
    mocks httpx2 intercepts them; :func:`~copilot_host.gateway.serve` puts an app made
    without one on the aiohttp transport when ``[fast]`` is installed; tests pass
    ``GitHubEmulator().async_transport()``). ``clock`` times re-registration and the
    routes' sessions (give the host the same one). The app does not own ``host``: close it
    after the server has stopped. Use the app on one event loop (an asynchronous host
    belongs to one). ``hooks`` plug features into the request path (:mod:`._hooks`).
    ``max_credits`` is a budget in AI credits: once the costs the answers reported since
    start reach it, model requests are refused (``budget_exhausted``: :mod:`._admit`).
    ``model_aliases`` (name -> model id) and ``default_model`` take part in how a request's
    model name is read (:mod:`copilot_host.gateway._names`); a bad spelling is a
    ``ValueError``.
    ``rewrites`` names the changes to apply (:data:`copilot_host.gateway.REWRITES`; None:
    all of them; an unknown name is a ``ValueError``). ``access_line`` takes each request's
    access line (its text, without a newline) instead of :data:`ACCESS_LOGGER`: for a
    program that writes the lines itself, as ``copilot-host serve`` does (a logging record
    per request cost a tenth of a relayed request's CPU, bench/gateway.py); it is called on
    the server's loop and must neither block nor raise. The line is the same either way;
    the app's warnings stay on the logger. ``sockets`` opens Copilot's own WebSocket for
    a client socket's requests to a model that lists ``ws:/responses``: an async
    ``connect(url, headers, **options)`` (tests pass ``GitHubEmulator.socket_connector()``;
    :mod:`._connect` says what it returns); None: the ``websockets`` client when the app
    makes its own transport (``transport`` None), else none (a caller that routes HTTPS
    somewhere routes sockets too, or they stay off); False: never (HTTP only).
    """
    names = ModelNames(dict(model_aliases or {}), default_model)
    enabled = check_rewrites(rewrites)
    return GatewayApp(
        host,
        api_key=api_key,
        transport=transport,
        clock=clock,
        hooks=hooks,
        max_credits=max_credits,
        names=names,
        rewrites=enabled,
        access_line=access_line,
        sockets=sockets,
    )


class GatewayApp:
    """See :func:`create_app` and the module docstring."""

    def __init__(
        self,
        host: ch.AsyncCopilotHost,
        *,
        api_key: str,
        transport: httpx2.AsyncBaseTransport | None,
        clock: ch.Clock,
        hooks: GatewayHooks | None = None,
        max_credits: float | None = None,
        names: ModelNames | None = None,
        rewrites: frozenset[str] | None = None,
        access_line: Callable[[str], None] | None = None,
        sockets: Connector | Literal[False] | None = None,
    ) -> None:
        # First: a bad budget fails before anything is registered.
        self.spend = Spend(max_credits, warn=_access.warning)
        if not isinstance(api_key, str):
            raise TypeError("api_key is a str")
        if (
            len(api_key) < 16
            or not (api_key.isascii() and api_key.isprintable())
            or (" " in api_key)
        ):
            raise ValueError("api_key must be at least 16 printable ASCII characters, no spaces")
        self._key = api_key.encode("ascii")
        # Registered so that logs and relayed answers mask it; held so the registration
        # (a weak one) lasts as long as the app.
        self._secret = ch.Secret(api_key)
        ch.register_secret(self._secret)
        self._registry = Registry(host, clock, names)
        self._clock = clock
        self._transport = transport
        # What the serving layer offers when no transport was given (:meth:`_offer`).
        self._offered: Callable[[], httpx2.AsyncBaseTransport | None] | None = None
        self._hooks = hooks or GatewayHooks()
        self._client: httpx2.AsyncClient | None = None
        self._hosts: dict[int, frozenset[bytes]] = {}
        self._changes = Changes(check_rewrites(None) if rewrites is None else rewrites)
        self._pipeline = Pipeline(
            self._registry, self._changes, self.spend, self._hooks, self._upstream
        )
        self._pipeline.clock = clock
        self._access_line = access_line
        if sockets is None and transport is None:
            sockets = connect
        self._sockets = CopilotSockets(sockets, clock) if sockets else None

    def __repr__(self) -> str:
        return f"GatewayApp({len(self._registry.catalog)} routes)"

    @property
    def catalog(self) -> ch.Catalog:
        """The gateway's own catalog (empty until the first request is served)."""
        return self._registry.catalog

    # -- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await serve_socket(
                scope,
                receive,
                send,
                pipeline=self._pipeline,
                key=self._key,
                hosts=self._allowed(scope),
                clock=self._clock,
                access_line=self._access_line,
                sockets=self._sockets,
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except ch.CopilotHostError as exc:
                    await send({"type": "lifespan.startup.failed", "message": exc.message})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        """Open the upstream connection pool, so that HTTPS settings that cannot work fail
        before the first request: raises :class:`copilot_host.TransportError`
        (``network_config``). The lifespan startup calls it; without a lifespan, the first
        request does."""
        self._upstream()

    async def model_name_problems(self) -> list[str] | None:
        """For a start-up check: one line per ``--model-alias``/``--default-model`` naming a
        model the account lacks; None when the models cannot be registered now (no login,
        no network), in which case each registration warns instead."""
        try:
            snapshot = await self._registry.current()
        except ch.CopilotHostError:
            return None
        return snapshot.names.missing_targets()

    async def served_routes(self) -> tuple[ch.ModelRoute, ...]:
        """The routes the gateway serves now, in the inventory's order, registering first
        when it has none; raises what a client would be told (``NotLoggedInError``, a
        failed registration)."""
        return (await self._registry.current()).names.routes

    def route_for(self, name: str, protocol: ch.ApiProtocol | None) -> ch.ModelRoute | None:
        """The route a request for ``name`` on ``protocol``'s endpoint is served with now
        (the gateway's naming rules), None when none would be or nothing is registered."""
        snapshot = self._registry.snapshot
        found = snapshot.names.resolve(name, protocol) if snapshot is not None else None
        return found.route if isinstance(found, Served) else None

    async def first_registration(self) -> None:
        """Return once the gateway has registered the account's models (at once when it
        has): what a start that found no login waits for before it tells the plan."""
        await self._registry.registered.wait()

    def add_model_aliases(self, aliases: Mapping[str, str]) -> None:
        """Serve ``aliases`` (name -> model id) besides those given at creation, which win
        (``run``'s agent profiles add the names an agent sends that no account has)."""
        self._registry.add_aliases(ModelNames(dict(aliases)).aliases)

    def serve_auto_by_default(self) -> None:
        """On a plan that can use only Copilot Auto, serve the model names no rule finds
        with ``auto``, unless ``default_model`` was given at creation (which wins): what
        ``run`` does, so that its command's usual model names are served by Auto."""
        self._registry.serve_auto_by_default()

    def _record_with(self, recorder: Recorder) -> None:
        """Record each model request in ``recorder`` (``serve``'s and ``run``'s ledger,
        :mod:`copilot_host.gateway._ledger`; through ``_plumbing``). Before serving."""
        self._pipeline.recorder = recorder

    def agent_started(self, name: str) -> None:
        """The agent ``run`` started (of NAMES): requests no rule names are its."""
        if name not in NAMES:
            raise ValueError(f"not an agent's name: {name[:40]!r}")
        self._pipeline.agent = name

    async def aclose(self) -> None:
        """Stop registrations in flight and close the upstream connections (the lifespan
        shutdown does this; call it yourself when the server runs the app without one)."""
        await self._registry.aclose()
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _offer(self, transport: Callable[[], httpx2.AsyncBaseTransport | None]) -> None:
        """The serving layer's transport (made by ``transport`` when the client opens),
        taken only when the app was given none and has not opened its client yet."""
        if self._transport is None and self._client is None:
            self._offered = transport

    def _upstream(self) -> httpx2.AsyncClient:
        client = self._client
        if client is None:
            try:
                transport = self._transport
                if transport is None and self._offered is not None:
                    transport = self._offered()
                client = self._client = httpx2.AsyncClient(
                    transport=transport,
                    timeout=UPSTREAM_TIMEOUT,
                    # Only for the transport the client makes itself: httpx2's own.
                    limits=UPSTREAM_LIMITS,
                    follow_redirects=False,
                )
            except (OSError, ValueError, ImportError) as exc:  # ssl.SSLError is an OSError
                # The type only: the text can quote a proxy URL with its password.
                raise ch.TransportError(
                    "the gateway could not set up its HTTPS client: check SSL_CERT_FILE, "
                    f"SSL_CERT_DIR and the HTTPS_PROXY/ALL_PROXY settings ({type(exc).__name__})",
                    code="network_config",
                    retryable=False,
                ) from None
        return client

    def _allowed(self, scope: Scope) -> frozenset[bytes] | None:
        server = scope.get("server")
        if not server:
            return None
        port = int(server[1])
        hosts = self._hosts.get(port)
        if hosts is None:
            hosts = self._hosts[port] = allowed_hosts(port)
        return hosts

    # -- one request -----------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = read_headers(scope["headers"])
        path: str = scope["path"]
        flow = Flow(
            receive,
            send,
            headers=headers,
            path=path,
            method=scope["method"],
            errors=errors_of(
                api_of_path(path) or self._changes.api_of_path(path),
                models=path == MODELS or path.startswith(MODEL_PREFIX),
                anthropic_version=headers.values.get(b"anthropic-version"),
            ),
            started=started,
        )
        # Looked up once: each lookup of the running loop asks the kernel for the process id.
        task = asyncio.current_task()
        assert task is not None
        flow.task = task
        log = writer(flow, self._access_line)
        # Written just before the last piece of the answer goes out, so a client that
        # has its answer can find the line; or at the end, when there was no answer.
        flow.outcome.on_done = log
        try:
            await self._serve(flow, scope)
        finally:
            log()

    async def _serve(self, flow: Flow, scope: Scope) -> None:
        refusal = framing_refusal(flow) or check_access(
            flow.headers, self._allowed(scope), self._key
        )
        if refusal is not None:
            await flow.refuse(refusal)
            return
        path, method = flow.path, flow.method
        if path in _PROBES and method in ("GET", "HEAD"):
            await flow.answer(200, b"" if method == "HEAD" else b"{}")
            return
        refusal = route_refusal(path, method, self._changes)
        if refusal is not None:
            await flow.refuse(refusal)
            return
        try:
            if method == "GET":
                await self._pipeline.models(flow)
            else:
                api = api_of_path(path) or self._changes.api_of_path(path)
                assert api is not None
                await self._pipeline.inference(flow, api)
        except Exception as exc:
            await answer_failure(flow, exc)
