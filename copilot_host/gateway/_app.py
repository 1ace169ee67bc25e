"""The gateway as an ASGI 3 application: refusals in a fixed order, then the relay.

A request is refused, with nothing sent upstream, at the first of: its Host, its Origin,
its key (:mod:`._access`); a path or method the gateway does not serve (404, 405); a body
over :data:`MAX_BODY_BYTES` (413), or one that does not arrive within
:func:`body_deadline` (408); a body that is not a JSON object with a ``model``
(400); no login (503); a model the account does not have (404), or one that does not
list the endpoint called (400): the name is read by the rules of :mod:`._names` (aliases,
the names coding agents send, a default model). Otherwise it is relayed (:mod:`._relay`)
through the route's own ``route.auth``, with the served model's id in the body, on
Messages the edits of :mod:`._messages`, and the rewrites of :mod:`._rewrites` (a request
that offered only server tools is answered by the gateway); every relayed answer carries
``x-copilot-host-model``. ``POST /v1/messages/count_tokens`` is answered by the gateway
(:mod:`._count_tokens`) once the key and the model pass, whatever the budget.
``HEAD``/``GET`` on ``/`` and ``/api/hello`` (agents' probes) answer 200 once Host, Origin
and key pass. Errors take the shape of the API the path belongs to
(:mod:`._answers`).

Framing is checked here as well as in the server's parser (the two parsers serve may use
differ on malformed framing, docs/ARCHITECTURE.md): a request that carries both
``Content-Length`` and ``Transfer-Encoding`` is refused (400) and its connection closed,
and every answer to a request that carried ``Transfer-Encoding`` closes the connection
(RFC 9112 §6.1), so no two readings of one request's end can disagree on where the next
one starts.

While a request is relayed, a watcher waits for the client to hang up (ASGI's
``http.disconnect``) and then cancels the relay at once, which closes the upstream
connection, even while upstream is silent; with a budget (``max_credits``) the answer is
instead read to its end, bounded, so that the cost it reports counts (:class:`_HangUp`).
A model request is admitted against the budget with a reservation (:mod:`._spend`).

Each request ends with one access line on the ``copilot_host.gateway.access`` logger
(INFO): method, path, model, status, bytes sent, duration; nothing from bodies, keys or
tokens. Details (refusal reasons, upstream request ids, failures) go to
``copilot_host.gateway`` at DEBUG.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, MutableMapping
from typing import Any

import httpx2

import copilot_host as ch
from copilot_host._internal import clean

from ._access import Refusal, RequestHeaders, allowed_hosts, check_access, read_headers
from ._answers import Shape, error_body, failure_of
from ._count_tokens import estimate_input_tokens
from ._hooks import GatewayHooks, both
from ._messages import forwarded_betas, system_as_blocks
from ._names import MAX_MODEL_NAME, ModelNames, NotFound, Served
from ._registry import PROTOCOL_OF_PATH, Registry, anthropic_entry, endpoints_of, openai_entry
from ._relay import MAX_ANSWER_BYTES, AnswerTooLarge, Outcome, relay
from ._request import (
    PARSE_IN_THREAD_ABOVE,
    encode_body,
    read_request,
    rewrite_model,
    system_blocks,
)
from ._responses_tools import AnswerMapper
from ._rewrites import check_rewrites, rewrite_request, server_tools_answer
from ._spend import CostReader, Reservation, Spend, estimate_cost, format_credits

__all__ = [
    "ACCESS_LOGGER",
    "BODY_SECONDS",
    "BODY_SECONDS_PER_MIB",
    "MAX_BODY_BYTES",
    "MODEL_HEADER",
    "GatewayApp",
    "body_deadline",
    "create_app",
]

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# The largest request body accepted; past it the answer is 413. Large enough for a long
# conversation with several images inlined as base64.
MAX_BODY_BYTES = 32 * 1024 * 1024
# A request body must have arrived within BODY_SECONDS of the head, plus
# BODY_SECONDS_PER_MIB for each MiB of the larger of its declared and received sizes
# (some 8.7 KiB/s: far below any real client, far above one byte every few seconds);
# past it the answer is 408 and the connection is closed. Without it a key holder could
# hold a connection (and a descriptor) for ever by dripping a body.
BODY_SECONDS = 60.0
BODY_SECONDS_PER_MIB = 120.0
ACCESS_LOGGER = "copilot_host.gateway.access"

# Inference has no total deadline (a long answer streams for minutes); a read waiting
# this long for the next byte means the connection is dead. The pool wait is unbounded:
# a request queued behind others waits for them, and its client can hang up.
UPSTREAM_TIMEOUT = httpx2.Timeout(connect=10.0, read=600.0, write=60.0, pool=None)
# Many streams may be open at once; each holds one upstream connection for its length.
# Idle connections are kept on every transport: a new one costs a TCP and TLS handshake
# (about 6x a kept-alive request's CPU on loopback, bench/upstream_reuse.py, and two or
# three round trips to the service). On httpx2's own transport an answer that carried
# bytes past its declared length would hand them to the next request on its connection
# (an httpcore2 defect: docs/upstream/httpcore2-leftover-bytes.md says why that is not
# worth a new connection per request); aiohttp discards them.
UPSTREAM_LIMITS = httpx2.Limits(max_connections=512, max_keepalive_connections=64)

# How long, with a budget set, an answer whose client hung up is still read for its cost.
DRAIN_SECONDS = 60.0
_RETRY_SOON = ((b"retry-after", b"1"),)
# The fields that cap a request's output, on each API.
_OUTPUT_CAPS = ("max_tokens", "max_completion_tokens", "max_output_tokens")

_log = logging.getLogger("copilot_host.gateway")
_access = logging.getLogger(ACCESS_LOGGER)

_MODELS = "/v1/models"
_MODEL_PREFIX = "/v1/models/"
# Answered by the gateway itself (._count_tokens): Copilot does not serve it.
COUNT_TOKENS = "/v1/messages/count_tokens"
_METHODS = {_MODELS: "GET", COUNT_TOKENS: "POST", **dict.fromkeys(PROTOCOL_OF_PATH, "POST")}
_EVENT_STREAM = b"text/event-stream"
_JSON = b"application/json"
# Paths agents probe to see whether a server is there (Claude Code sends HEAD /api/hello).
_PROBES = frozenset({"/", "/api/hello"})
# On every answer relayed from a route: the Copilot model that served it.
MODEL_HEADER = "x-copilot-host-model"
_MODEL_HEADER = MODEL_HEADER.encode("ascii")
_CLOSE = (b"connection", b"close")


def body_deadline(declared: int, received: int) -> float:
    """Seconds a request body has, from its head, to arrive whole: see
    :data:`BODY_SECONDS`."""
    return BODY_SECONDS + BODY_SECONDS_PER_MIB * max(declared, received) / (1024 * 1024)


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
    start reach it, model requests get 429 ``budget_exhausted``. ``model_aliases`` (name ->
    model id) and ``default_model`` take part in how a request's model name is read
    (:mod:`copilot_host.gateway._names`); a bad spelling is a ``ValueError``.
    ``rewrites`` names the request rewrites to apply (:data:`._rewrites.REWRITES`; None: all
    of them; an unknown name is a ``ValueError``). ``access_line`` takes each request's
    access line (its text, without a newline) instead of :data:`ACCESS_LOGGER`: for a
    program that writes the lines itself, as ``copilot-host serve`` does (a logging record
    per request cost a tenth of a relayed request's CPU, bench/gateway.py); it is called on
    the server's loop and must neither block nor raise. The line is the same either way;
    the app's warnings stay on the logger.
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
        self._transport = transport
        # What the serving layer offers when no transport was given (:meth:`_offer`).
        self._offered: Callable[[], httpx2.AsyncBaseTransport | None] | None = None
        self._hooks = hooks or GatewayHooks()
        self._client: httpx2.AsyncClient | None = None
        self._hosts: dict[int, frozenset[bytes]] = {}
        self._rewrites = check_rewrites(None) if rewrites is None else rewrites
        self._served_locally = 0
        self._access_line = access_line

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
            await send({"type": "websocket.close", "code": 1008})

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
        shape = (
            Shape.ANTHROPIC
            if path in ("/v1/messages", COUNT_TOKENS)
            or (path.startswith(_MODELS) and headers.get(b"anthropic-version") is not None)
            else Shape.OPENAI
        )
        call = _Call(receive, send, headers=headers, path=path, method=scope["method"], shape=shape)
        # Looked up once: each lookup of the running loop asks the kernel for the process id.
        task = asyncio.current_task()
        assert task is not None
        call.task = task
        logged = False
        sink = self._access_line

        def log() -> None:
            nonlocal logged
            if logged or (sink is None and not _access.isEnabledFor(logging.INFO)):
                return
            logged = True
            outcome = call.outcome
            credits = outcome.credits
            asked = call.asked
            model = call.model if not asked or asked == call.model else f"{asked}->{call.model}"
            line = (
                f"{call.method} {_shown(path)} model={model} status={outcome.status or 499} "
                f"bytes={outcome.sent} {(time.perf_counter() - started) * 1000.0:.1f}ms"
            )
            if credits is not None:
                line += f" credits={format_credits(credits)}"
            if call.rewrote:
                line += " rewrote=" + ",".join(call.rewrote)
            if sink is not None:
                sink(line)
                return
            # The record made here and handed to the logger's handlers as .info() would,
            # without its search of the stack for the caller (the same every time).
            _access.handle(
                _access.makeRecord(ACCESS_LOGGER, logging.INFO, __file__, 0, line, (), None, "log")
            )

        # Written just before the last piece of the answer goes out, so a client that
        # has its answer can find the line; or at the end, when there was no answer.
        call.outcome.on_done = log
        try:
            await self._serve(call, scope)
        finally:
            log()

    async def _serve(self, call: _Call, scope: Scope) -> None:
        headers = call.headers
        if headers.get(b"transfer-encoding") is not None:
            # Whatever the parser made of it, the connection ends with this answer.
            call.close = True
            if headers.get(b"content-length") is not None:
                await call.refuse(
                    Refusal(
                        400,
                        "invalid_request",
                        "copilot-host gateway: a request may not carry both Content-Length "
                        "and Transfer-Encoding",
                    )
                )
                return
        refusal = check_access(headers, self._allowed(scope), self._key)
        if refusal is not None:
            await call.refuse(refusal)
            return
        path, method = call.path, call.method
        if path in _PROBES and method in ("GET", "HEAD"):
            await call.answer(200, b"" if method == "HEAD" else b"{}")
            return
        expected = _METHODS.get(path)
        if expected is None and path.startswith(_MODEL_PREFIX):
            expected = "GET"
        if expected is None or (path == COUNT_TOKENS and "count-tokens" not in self._rewrites):
            await call.refuse(
                Refusal(
                    404,
                    "not_found",
                    "copilot-host gateway: no such endpoint; it serves GET /v1/models, "
                    "POST /v1/chat/completions, POST /v1/responses, POST /v1/messages and "
                    "POST /v1/messages/count_tokens",
                )
            )
            return
        if method != expected:
            await call.refuse(
                Refusal(
                    405,
                    "method_not_allowed",
                    f"copilot-host gateway: {clean(path, limit=80)} takes {expected} only",
                    ((b"allow", expected.encode("ascii")),),
                )
            )
            return
        try:
            if method == "GET":
                await self._models(call)
            else:
                await self._inference(call)
        except Exception as exc:
            if call.outcome.status:
                # The answer has started, so no error document can follow it: the server
                # cuts the connection when the app raises, and the client sees an answer
                # that did not end. This line says why; the error is typed (answer_cut) so
                # that a server may log it without a traceback (serve does).
                _log.warning("relay of %s ended early: %s", _shown(path), type(exc).__name__)
                raise ch.TransportError(
                    f"the answer to {_shown(path)} broke off after it had started "
                    f"({type(exc).__name__}); the client's connection was cut",
                    code="answer_cut",
                ) from exc
            failure = failure_of(exc)
            _log.debug("request failed: %s (%s)", failure.code, type(exc).__name__, exc_info=exc)
            await call.answer(
                failure.status,
                error_body(call.shape, failure.status, failure.code, failure.message),
                failure.headers,
            )

    async def _models(self, call: _Call) -> None:
        if len(call.path) - len(_MODEL_PREFIX) > MAX_MODEL_NAME:
            call.asked = call.model = _shown(call.path[len(_MODEL_PREFIX) :][:65], 64)
            await call.refuse(_name_too_long())
            return
        snapshot = await self._registry.current()
        anthropic = call.shape == Shape.ANTHROPIC
        if call.path == _MODELS:
            await call.answer(200, snapshot.anthropic_list if anthropic else snapshot.openai_list)
            return
        name = call.path[len(_MODEL_PREFIX) :]
        # An Anthropic client can call /v1/messages only; an OpenAI one any endpoint.
        found = snapshot.names.resolve(
            name, ch.ApiProtocol.ANTHROPIC_MESSAGES if anthropic else None
        )
        call.asked = _shown(name, 64)
        if not isinstance(found, Served):
            call.model = call.asked
            await call.refuse(
                Refusal(404, "model_not_found", found.message)
                if isinstance(found, NotFound)
                else _unknown_model(name)
            )
            return
        route = found.route
        call.model = route.model_id
        entry = anthropic_entry(route) if anthropic else openai_entry(route, route.owner)
        await call.answer(
            200,
            ch.mask_secrets(json.dumps(entry, ensure_ascii=False).encode()),
            ((_MODEL_HEADER, route.model_id.encode("ascii")),),
        )

    async def _inference(self, call: _Call) -> None:
        body = await _read_body(call.receive, call.headers, call.task)
        if isinstance(body, Refusal):
            await call.refuse(body)
            return
        if body is None:
            return  # the client hung up while sending
        call.body_read = True
        counting = call.path == COUNT_TOKENS
        protocol = ch.ApiProtocol.ANTHROPIC_MESSAGES if counting else PROTOCOL_OF_PATH[call.path]
        parsed = await read_request(body, protocol)
        if isinstance(parsed, Refusal):
            await call.refuse(parsed)
            return
        name = parsed.name
        if len(name) > MAX_MODEL_NAME:
            call.asked = call.model = _shown(name[:65], 64)
            await call.refuse(_name_too_long())
            return
        snapshot = await self._registry.current()
        found = snapshot.names.resolve(name, protocol)
        call.asked = _shown(name, 64)
        if isinstance(found, NotFound):
            call.model = call.asked
            await call.refuse(Refusal(404, "model_not_found", found.message))
            return
        route = found.route
        call.model = route.model_id
        if not isinstance(found, Served):
            await call.refuse(_wrong_endpoint(route, call.path))
            return
        if counting:
            # Never upstream, never billed, served whatever the budget: an estimate.
            count = estimate_input_tokens(parsed.value)
            await call.answer(
                200,
                b'{"input_tokens": %d}' % count,
                ((_MODEL_HEADER, route.model_id.encode("ascii")),),
            )
            return
        if self.spend.exhausted():
            await call.refuse(Refusal(429, "budget_exhausted", self.spend.refusal_message()))
            return
        rewritten = rewrite_request(
            protocol,
            parsed.value,
            max_output=route.spec.max_output_tokens,
            betas=forwarded_betas(call.headers.repeated.get(b"anthropic-beta", ()))
            if protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES
            else frozenset(),
            enabled=self._rewrites,
        )
        call.rewrote = rewritten.names
        if rewritten.answer_locally:
            await self._server_tools(call, route, parsed.value)
            return
        if rewritten.value is not None:
            # Edited: encoded again, with the model upstream knows and a block system.
            value = rewritten.value
            value["model"] = route.model_id
            if protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES:
                system_as_blocks(value)
            # A large body is encoded in a worker thread, as it was parsed (._request).
            body = (
                await asyncio.to_thread(encode_body, value)
                if len(body) > PARSE_IN_THREAD_ABOVE
                else encode_body(value)
            )
        elif protocol is ch.ApiProtocol.ANTHROPIC_MESSAGES and isinstance(
            parsed.value.get("system"), str
        ):
            # A string system becomes a text block (._messages.system_as_blocks), spliced
            # into the bytes with the model upstream knows where it can be (._request).
            body = system_blocks(body, parsed, route.model_id)
        elif name != route.model_id:
            # Upstream knows the model by its own id only (a route id, an alias, Claude
            # Code's spelling, a family: ._names); spliced into the bytes where it can be.
            body = rewrite_model(body, parsed, route.model_id)
        tools = rewritten.tools
        # Every field of the facts, with the model upstream knows (dataclasses.replace
        # costs several times this; tests/gateway/test_units.py pins the fields).
        known = parsed.facts
        facts = ch.RequestFacts(
            vision=known.vision, initiator=known.initiator, model=route.model_id
        )
        # The parsed tree goes before the request does: only the bytes travel on.
        # Admitted last, with no await before _forward settles it: every way out of
        # this request after here releases the reservation.
        held = await self._admit(call, route, body, rewritten.value or parsed.value)
        if held is None:
            return
        del parsed, rewritten
        await self._forward(
            call,
            route,
            protocol,
            body,
            facts=facts,
            identity=snapshot.identity,
            held=held,
            mapper=AnswerMapper(tools) if tools is not None else None,
        )

    async def _server_tools(self, call: _Call, route: ch.ModelRoute, value: dict[str, Any]) -> None:
        """The gateway's own answer to a request that offered only server tools: nothing
        goes upstream and nothing is billed (._rewrites.server_tools_answer)."""
        self._served_locally += 1
        stream = value.get("stream") is True
        body = server_tools_answer(
            call.asked or route.model_id, stream=stream, serial=str(self._served_locally)
        )
        headers: tuple[tuple[bytes, bytes], ...] = (
            (_MODEL_HEADER, route.model_id.encode("ascii")),
        )
        await call.answer(200, body, headers, content_type=_EVENT_STREAM if stream else _JSON)

    async def _admit(
        self, call: _Call, route: ch.ModelRoute, body: bytes, value: Mapping[str, Any]
    ) -> Reservation | None:
        """The request's reservation against the budget, or None once it was refused."""
        held = self.spend.admit(route.model_id, _estimate(route, body, value))
        if held is None:
            refusal = Refusal(429, "budget_in_flight", self.spend.in_flight_message(), _RETRY_SOON)
            await call.refuse(refusal)
        return held

    async def _forward(
        self,
        call: _Call,
        route: ch.ModelRoute,
        protocol: ch.ApiProtocol,
        body: bytes,
        *,
        facts: ch.RequestFacts,
        identity: ch.LoginIdentity,
        held: Reservation,
        mapper: AnswerMapper | None = None,
    ) -> None:
        task = call.task
        outcome = call.outcome
        # With a budget, a client that hangs up does not end the upstream request: its
        # answer is read to the end (bounded) so that the cost it reports counts.
        hangup = _HangUp(call, task, drain=self.spend.max_credits is not None)
        auth = route.auth
        if isinstance(auth, ch.CopilotAuth):
            # What the gateway read already, so route.auth reads neither body nor login.
            auth = auth.for_request(facts, identity)
        hooks = self._hooks
        watcher = task.get_loop().create_task(hangup.watch())
        try:
            await relay(
                self._upstream(),
                route,
                protocol,
                body,
                headers=call.headers,
                send=hangup.send,
                outcome=outcome,
                auth=auth,
                header_filter=hooks.request_headers,
                observer=both(CostReader(outcome), hooks.observe(route) if hooks.observe else None),
                extra_headers=(
                    (_MODEL_HEADER, route.model_id.encode("ascii")),
                    *((_CLOSE,) if call.close else ()),
                ),
                mapper=mapper,
            )
        except asyncio.CancelledError:
            if hangup.gone and task.uncancel() == 0:
                _log.debug(
                    "client hung up: upstream request for %s %s",
                    route.model_id,
                    "read for its cost until cut" if hangup.drain else "cancelled",
                )
                return
            raise
        except ch.OriginError as exc:
            if exc.code == "origin_mismatch":
                # The account's inference origin moved: these routes point at the old one.
                self._registry.stale()
            raise
        except AnswerTooLarge:
            raise ch.ResponseError(
                "the Copilot API's answer was larger than the gateway relays",
                code="response_too_large",
            ) from None
        finally:
            watcher.cancel()
            hangup.end()
            # An answer that ended before its cost could be read (a cut drain, a client
            # gone, a stream broken off) was served and may be billed: its reservation
            # counts. A request that failed before any answer was not.
            unread = hangup.cut or (
                not outcome.done and (hangup.gone or 200 <= outcome.status < 300)
            )
            self.spend.settle(held, outcome.credits, unread=unread)
            self.spend.quota(outcome.quota)
        if outcome.upstream_id and _log.isEnabledFor(logging.DEBUG):
            # Tested first: the id's cleaning would otherwise run on every request.
            _log.debug(
                "%s answered %d (GitHub request id %s)",
                route.url,
                outcome.status,
                clean(outcome.upstream_id, limit=80),
            )


class _HangUp:
    """While a request is relayed: waits for its client to hang up (ASGI's
    ``http.disconnect``), then cancels the relay at once, which closes the upstream
    connection even while upstream is silent; or, with ``drain``, lets the relay read the
    answer to its end (for the cost it reports) with nothing sent on, for at most
    :data:`DRAIN_SECONDS` and :data:`MAX_ANSWER_BYTES`, and cancels it past either."""

    __slots__ = ("_call", "_drained", "_task", "_timer", "cut", "drain", "gone")

    def __init__(self, call: _Call, task: asyncio.Task[Any], *, drain: bool) -> None:
        self._call = call
        self._task = task
        self.drain = drain
        self.gone = False
        # The drain was stopped before the answer ended.
        self.cut = False
        self._drained = 0
        self._timer: asyncio.TimerHandle | None = None

    def _stop_draining(self) -> None:
        self.cut = True
        self._task.cancel()

    async def watch(self) -> None:
        call = self._call
        while True:
            message = await call.receive()
            if message["type"] == "http.disconnect":
                if not call.outcome.done:
                    self.gone = True
                    if self.drain:
                        loop = asyncio.get_running_loop()
                        self._timer = loop.call_later(DRAIN_SECONDS, self._stop_draining)
                    else:
                        self._task.cancel()
                return

    async def send(self, message: Message) -> None:
        if not self.gone:
            await self._call.send(message)
            return
        self._drained += len(message.get("body", b""))
        if self._drained > MAX_ANSWER_BYTES and not self.cut:
            self._stop_draining()

    def end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


class _Call:
    """One request as it is served: where it came from, how it is answered, what the
    access line will say."""

    __slots__ = (
        "asked",
        "body_read",
        "close",
        "headers",
        "method",
        "model",
        "outcome",
        "path",
        "receive",
        "rewrote",
        "send",
        "shape",
        "task",
    )

    def __init__(
        self,
        receive: Receive,
        send: Send,
        *,
        headers: RequestHeaders,
        path: str,
        method: str,
        shape: str,
    ) -> None:
        self.receive = receive
        self.send = send
        self.headers = headers
        self.path = path
        self.method = method
        self.shape = shape
        self.model = "-"
        # The name the request asked for, when it named one (the access line shows both
        # when a rule of ._names found another model).
        self.asked = ""
        self.outcome = Outcome()
        # Whether the request body has been read to its end (see refuse).
        self.body_read = False
        # Whether the answer ends the connection whatever it is (see GatewayApp._serve).
        self.close = False
        # The rewrites applied (._rewrites), for the access line.
        self.rewrote: list[str] = []
        # The task serving the request (set by GatewayApp._http).
        self.task: asyncio.Task[Any]

    async def answer(
        self,
        status: int,
        body: bytes,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        content_type: bytes = _JSON,
    ) -> None:
        outcome = self.outcome
        outcome.status = status
        outcome.sent = len(body)
        if self.close and _CLOSE not in headers:
            headers = (*headers, _CLOSE)
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode("ascii")),
                    *headers,
                ],
            }
        )
        outcome.finish()
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    async def refuse(self, refusal: Refusal) -> None:
        _log.debug("refused (%d %s)", refusal.status, refusal.code)
        body = error_body(self.shape, refusal.status, refusal.code, refusal.message)
        headers = refusal.headers
        if not self.body_read:
            # Refused before its body was read (a wrong key, a bad Host, a path not
            # served, a body too large): the connection ends with the answer, so the
            # server stops reading what the client still uploads instead of reading it
            # to the end.
            headers = (*headers, _CLOSE)
        await self.answer(refusal.status, body, headers)


# -- helpers ---------------------------------------------------------------------------------


async def _read_body(
    receive: Receive, headers: RequestHeaders, task: asyncio.Task[Any]
) -> bytes | Refusal | None:
    """The whole request body; a Refusal when it is too large, its length malformed or it
    does not arrive in time (:func:`body_deadline`); None when the client hung up."""
    declared = headers.get(b"content-length")
    expected = 0
    if declared is not None:
        if not declared.strip().isdigit():
            return Refusal(400, "invalid_request", "copilot-host gateway: bad Content-Length")
        expected = int(declared)
        if expected > MAX_BODY_BYTES:
            return _too_large()
    # Chunks joined once at the end: one copy of a large body, not a growing buffer's.
    chunks: list[bytes] = []
    size = 0
    loop = task.get_loop()
    began = loop.time()
    # The deadline as one timer that cancels this task, and a flag that says it did
    # (asyncio.timeout's bookkeeping, which cost more than the rest of a read).
    late = False

    def expire() -> None:
        nonlocal late
        late = True
        task.cancel()

    cancelling = task.cancelling()
    timer = loop.call_at(began + body_deadline(expected, 0), expire)
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return _too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if size > expected:
                timer.cancel()
                timer = loop.call_at(began + body_deadline(expected, size), expire)
    except asyncio.CancelledError:
        # Cancelled by the deadline alone (not also from outside): the 408.
        if not late or task.uncancel() > cancelling:
            raise
        seconds = body_deadline(expected, size)
        return Refusal(
            408,
            "request_timeout",
            f"copilot-host gateway: the request body did not arrive within {seconds:.0f} s",
        )
    finally:
        timer.cancel()


def _too_large() -> Refusal:
    return Refusal(
        413,
        "request_too_large",
        f"copilot-host gateway: the request body is over {MAX_BODY_BYTES // (1024 * 1024)} MiB",
    )


def _estimate(route: ch.ModelRoute, body: bytes, value: Mapping[str, Any]) -> float | None:
    """The request's cost from its model's prices (._spend.estimate_cost), None unknown."""
    spec = route.spec
    prices = spec.billing.prices if spec.billing is not None else None
    if prices is None:
        return None
    cap: int | None = None
    for name in _OUTPUT_CAPS:
        found = value.get(name)
        if isinstance(found, int) and not isinstance(found, bool) and found >= 0:
            cap = found
            break
    return estimate_cost(
        prices, input_bytes=len(body), output_cap=cap, output_limit=spec.max_output_tokens
    )


def _name_too_long() -> Refusal:
    return Refusal(
        400,
        "invalid_request",
        f"copilot-host gateway: the model name is longer than {MAX_MODEL_NAME} characters; "
        "GET /v1/models lists the names this account can use",
    )


def _unknown_model(name: str) -> Refusal:
    return Refusal(
        404,
        "model_not_found",
        f"copilot-host gateway: the model {clean(name, limit=100)!r} is not one this "
        "account can use (GET /v1/models lists them)",
    )


def _wrong_endpoint(route: ch.ModelRoute, path: str) -> Refusal:
    served = " and ".join(endpoints_of(route))
    return Refusal(
        400,
        "unsupported_api_for_model",
        f"copilot-host gateway: the model {route.model_id!r} is not served on {path}; "
        f"call it on {served} (the gateway does not translate between APIs)",
    )


def _shown(text: str, limit: int = 120) -> str:
    """A path or model name as the access line shows it: inert for a terminal, bounded."""
    if len(text) <= limit and text.isascii() and text.isprintable() and " " not in text:
        # The usual case, without the character-by-character pass: clean() would return
        # such a text as it is (an empty one as "-", below).
        return text or "-"
    return clean(text, limit=limit) or "-"
