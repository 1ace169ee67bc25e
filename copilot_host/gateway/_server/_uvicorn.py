"""uvicorn, as the gateway's server uses it: the one module that names its classes and
attributes.

The hardening (:mod:`._hardening`) needs four things uvicorn has no setting for: to see
each connection's bytes before the protocol parses them, to answer two questions about a
connection ("is a request body still unread?", "is it waiting for a request head?"), to
know when an answer is complete, and to take more signals than SIGINT and SIGTERM. The
protocol classes below subclass uvicorn's h11 and httptools protocols and read their state
(``conn``, ``cycle``, ``pipeline``) to answer; :class:`Server` subclasses uvicorn's server
for its signals and start-up. Nothing else in the package imports uvicorn.

pyproject.toml puts a floor under uvicorn and no ceiling, so :func:`check` (called by
:func:`copilot_host.gateway.serve` before anything is bound) makes sure that every class,
method, attribute and setting named here exists in the uvicorn installed, refusing with
one line that names what is missing, and logs one warning for a release newer than
:data:`TESTED` (``.ci/run`` runs the hardening tests on the floor and on the newest).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections.abc import Callable
from contextlib import _GeneratorContextManager
from typing import Any, Protocol, cast

import uvicorn

import copilot_host as ch

__all__ = [
    "SERVER_LOGGER",
    "TESTED",
    "Config",
    "Server",
    "check",
    "config",
    "not_a_cut",
    "protocol",
]

# The oldest and the newest uvicorn releases (major, minor) the suite has passed on.
TESTED = ((0, 30), (0, 55))

# What this module relies on, by class: (module, class, methods, attributes its __init__
# sets). An attribute is looked for among the names __init__ assigns, so a rename
# upstream is caught without making a server or a connection.
_H11 = "uvicorn.protocols.http.h11_impl"
_HTTPTOOLS = "uvicorn.protocols.http.httptools_impl"
_GUARDED = ("connection_made", "connection_lost", "data_received", "on_response_complete")
# How a WebSocket upgrade is decided and handed over (both protocols): the decision, the
# handover, and what the decision reads.
_UPGRADE = ("_should_upgrade_to_ws", "handle_websocket_upgrade")
_UPGRADE_STATE = ("scope", "ws_protocol_class", "server_state", "app_state")
_RELIED_ON: dict[str, tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...]] = {
    "server": (
        (
            "uvicorn",
            "Server",
            ("capture_signals", "handle_exit", "startup", "serve", "main_loop", "on_tick"),
            ("started", "should_exit", "_captured_signals"),
        ),
        # What a WebSocket protocol is handed (._socket): the connections a shutdown closes
        # and the tasks it waits for.
        ("uvicorn.server", "ServerState", (), ("connections", "tasks")),
    ),
    "h11": (
        (_H11, "H11Protocol", (*_GUARDED, *_UPGRADE), ("conn", "cycle", *_UPGRADE_STATE)),
        (_H11, "RequestResponseCycle", (), ("response_complete", "body")),
    ),
    "httptools": (
        (
            _HTTPTOOLS,
            "HttpToolsProtocol",
            (
                *_GUARDED,
                *_UPGRADE,
                "on_headers_complete",
                "on_message_complete",
                "send_400_response",
                # What keeps the request target (url) the upgrade decision reads.
                "on_url",
            ),
            ("cycle", "pipeline", "logger", "parser", *_UPGRADE_STATE),
        ),
        (_HTTPTOOLS, "RequestResponseCycle", (), ("response_complete", "body", "keep_alive")),
    ),
}
# The settings :func:`config` passes.
_SETTINGS = (
    "lifespan",
    "log_config",
    "access_log",
    "ws",
    "http",
    "loop",
    "h11_max_incomplete_event_size",
    "proxy_headers",
    "server_header",
    "timeout_graceful_shutdown",
    "backlog",
)
_log = logging.getLogger("copilot_host.gateway")
_warned: set[str] = set()


def _version() -> tuple[int, ...]:
    parts = []
    for part in str(getattr(uvicorn, "__version__", "0")).split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _missing(http: str) -> list[str]:
    missing: list[str] = []
    for module_name, class_name, methods, attributes in (
        *_RELIED_ON["server"],
        *_RELIED_ON[http],
    ):
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{class_name}")
            continue
        missing += [f"{class_name}.{m}" for m in methods if not callable(getattr(found, m, None))]
        init = getattr(found.__init__, "__code__", None)
        assigned = set(init.co_names) if init is not None else set()
        missing += [f"{class_name}.{a}" for a in attributes if a not in assigned]
    parameters = inspect.signature(uvicorn.Config.__init__).parameters
    missing += [f"Config({name}=)" for name in _SETTINGS if name not in parameters]
    return missing


def check(http: str) -> None:
    """Refuse (``CopilotHostError`` ``server_unsupported``) a uvicorn that lacks anything
    this module relies on for protocol ``http``; warn once for one newer than tested."""
    version = getattr(uvicorn, "__version__", "unknown")
    missing = _missing(http)
    oldest, newest = TESTED
    tested = f"{oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}"
    if missing:
        raise ch.CopilotHostError(
            f"uvicorn {version} lacks what the gateway's server relies on "
            f"({', '.join(missing)}); copilot-host is tested with uvicorn {tested}",
            code="server_unsupported",
        )
    if _version() > newest and version not in _warned:
        _warned.add(version)
        _log.warning(
            "uvicorn %s is newer than the releases copilot-host is tested with (%s)",
            version,
            tested,
        )


# What the serving layer holds between configuring and serving.
Config = uvicorn.Config

# uvicorn's own log (start-up, shutdown, an exception in the application).
SERVER_LOGGER = "uvicorn.error"


class Guard(Protocol):
    """What watches one connection (:class:`._hardening.Guard`), as the protocols call it."""

    def wrap(self, transport: asyncio.BaseTransport) -> asyncio.Transport: ...
    def opened(self) -> None: ...
    def received(self, data: bytes) -> None: ...
    def answered(self) -> None: ...
    def lost(self) -> None: ...


# Makes a connection's guard, given the protocol: its ``body_unread()``,
# ``waiting_for_head()`` and ``feed(data)`` answer the guard's questions.
Guards = Callable[[Any], Guard]


def config(
    app: Any,
    *,
    http: type[asyncio.Protocol],
    ws: type[asyncio.Protocol],
    lifespan: bool,
    grace: int,
    max_head_bytes: int,
    accept_batch: int,
) -> uvicorn.Config:
    """uvicorn's configuration for the gateway on protocol ``http``, its WebSocket
    connections handed to ``ws``, accepting at most ``accept_batch`` connections at a time
    (:class:`Server` keeps the listen queue)."""
    return uvicorn.Config(
        app,
        # asyncio accepts as many connections in one go as the backlog it is given, and
        # sets them all up before it reads a byte from any: a batch larger than the
        # connections the bound lets in unanswered would have them push each other out
        # before their heads are read (a key holder's among a flood of keyless ones).
        backlog=accept_batch,
        lifespan="on" if lifespan else "off",
        # Logging is the embedding program's (the CLI's: redacted, on stderr); access
        # lines are the app's.
        log_config=None,
        access_log=False,
        ws=ws,
        http=http,
        loop="asyncio",
        h11_max_incomplete_event_size=max_head_bytes,
        # No forwarding headers are trusted: every client is on this machine.
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=grace,
    )


class Server(uvicorn.Server):
    """uvicorn's server with its signals taken by ``signals`` (given uvicorn's exit
    handler and the list of signals it captured, to raise again afterwards), and
    ``on_started`` called once it accepts connections."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        signals: Callable[[Callable[[int, Any], None], list[int]], _GeneratorContextManager[None]],
        on_started: Callable[[], None],
        listen_queue: int,
    ) -> None:
        super().__init__(config)
        self._signals = signals
        self._on_started = on_started
        self._listen_queue = listen_queue
        self._exit_requested = False

    def capture_signals(self) -> _GeneratorContextManager[None]:
        return self._signals(self.handle_exit, self._captured_signals)

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        # asyncio made the config's backlog (the accept batch) the listen queue too: the
        # kernel keeps queueing as many as before.
        for sock in sockets or ():
            sock.listen(self._listen_queue)
        if self.started:
            self._on_started()

    def request_exit(self) -> None:
        """Stop accepting; requests in flight get the grace period (polled by the loop,
        so any thread may call it)."""
        # Not should_exit: set during start-up, uvicorn before 0.46 returns without its
        # shutdown (the app's lifespan is then cancelled, with a traceback). The main
        # loop's first tick sees this instead, and the shutdown is the orderly one.
        self._exit_requested = True

    async def on_tick(self, counter: int) -> bool:
        return self._exit_requested or await super().on_tick(counter)


def protocol(
    http: str,
    guard: Guards,
    *,
    max_head_bytes: int,
    socket_paths: frozenset[bytes] = frozenset(),
) -> type[asyncio.Protocol]:
    """uvicorn's protocol ``http`` (``"h11"`` or ``"httptools"``), each connection watched
    by the guard ``guard`` makes for it, taking a WebSocket upgrade only for a ``GET`` of
    one of ``socket_paths`` (any query aside)."""
    if http == "h11":
        return _h11_protocol(guard, socket_paths)
    if http == "httptools":
        return _httptools_protocol(guard, max_head_bytes, socket_paths)
    raise ValueError(f"unknown HTTP protocol {http!r}")


def _guarded(base: type[Any], guard: Guards, socket_paths: frozenset[bytes]) -> type[Any]:
    """``base`` (one of uvicorn's protocols) with its connection events passed through a
    guard, and WebSocket upgrades taken only on ``socket_paths``."""

    class Guarded(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.guard = guard(self)

        def target(self) -> bytes:
            """The request's path, as sent (no query)."""
            raise NotImplementedError

        def _should_upgrade_to_ws(self, *args: Any) -> bool:
            # Any other request that asks to switch protocols is answered as the HTTP
            # request it is (405, 404, ...), as it was before the gateway took sockets.
            scope = self.scope
            asked = scope is not None and scope.get("method") == "GET"
            return asked and self.target() in socket_paths and super()._should_upgrade_to_ws(*args)

        def _unsupported_upgrade_warning(self) -> None:
            # uvicorn's two warnings per such request (0.35 on) say nothing the answer does
            # not: one DEBUG line, no header.
            _log.debug("a request asked to switch protocols; answered over HTTP")

        def _handed_over(self, early: bool) -> None:
            """After uvicorn handed the connection to the WebSocket protocol: tell it of
            bytes that came after the upgrade request in the same read."""
            socket = self.transport.get_protocol()
            if early and hasattr(socket, "early"):
                socket.early()

        def feed(self, data: bytes) -> None:
            super().data_received(data)

        def body_buffered(self) -> bool:
            # Both protocols gather the body the app has not taken yet in cycle.body.
            cycle = self.cycle
            return cycle is not None and bool(cycle.body)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(self.guard.wrap(transport))
            self.guard.opened()

        def connection_lost(self, exc: Exception | None) -> None:
            self.guard.lost()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self.guard.received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.guard.answered()

    return Guarded


def _h11_protocol(guard: Guards, socket_paths: frozenset[bytes]) -> type[asyncio.Protocol]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HardenedH11Protocol(_guarded(H11Protocol, guard, socket_paths)):  # type: ignore[misc]
        """h11 keeps the connection's state: a body is unread while the client may still
        send one; a head is awaited while the client is idle and no answer is due. h11
        bounds the head itself (the config's ``h11_max_incomplete_event_size``)."""

        def body_unread(self) -> bool:
            return bool(self.conn.their_state is h11.SEND_BODY)

        def waiting_for_head(self) -> bool:
            cycle = self.cycle
            return bool(
                self.conn.their_state is h11.IDLE and (cycle is None or cycle.response_complete)
            )

        def target(self) -> bytes:
            return bytes(self.scope.get("raw_path", b""))

        def handle_websocket_upgrade(self, event: Any) -> None:
            # h11 keeps what followed the request head; uvicorn hands over the head alone.
            early = bool(self.conn.trailing_data[0])
            super().handle_websocket_upgrade(event)
            self._handed_over(early)

    return cast(type[asyncio.Protocol], HardenedH11Protocol)


def _httptools_protocol(
    guard: Guards, max_head_bytes: int, socket_paths: frozenset[bytes]
) -> type[asyncio.Protocol]:
    import sys

    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    base = _guarded(HttpToolsProtocol, guard, socket_paths)

    class HardenedHttpToolsProtocol(base):  # type: ignore[misc,valid-type]
        """httptools (llhttp) keeps no state to ask, so the parser's callbacks tell: a
        body is open from a head's end to its message's end. A head is awaited while no
        request is being answered or queued behind one (pipelined): a head being dripped
        in does not count as a request until it is complete, and neither does a body
        still arriving for a request already answered. llhttp puts no bound on a head
        (httptools buffers a header until it ends): the bytes received while a head is
        incomplete are counted, and past ``max_head_bytes`` the request is refused as h11
        refuses it (400, then the connection is closed)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._body_open = False
            self._head_bytes = 0
            # The chunk being parsed, and whether the connection was handed to a socket.
            self._chunk = b""
            self._upgraded = False

        def target(self) -> bytes:
            return bytes(self.url).partition(b"?")[0]

        def handle_websocket_upgrade(self) -> None:
            # Called while uvicorn handles llhttp's upgrade exception, whose argument is
            # where the request head ended in the chunk parsed.
            raised = sys.exc_info()[1]
            ended = raised.args[0] if raised is not None and raised.args else None
            early = isinstance(ended, int) and len(self._chunk) > ended
            self._upgraded = True
            super().handle_websocket_upgrade()
            self._handed_over(early)

        def body_unread(self) -> bool:
            return self._body_open

        def waiting_for_head(self) -> bool:
            cycle = self.cycle
            return bool((cycle is None or cycle.response_complete) and not self.pipeline)

        def on_headers_complete(self) -> None:
            self._body_open = True
            self._head_bytes = 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._body_open = False
            super().on_message_complete()

        def feed(self, data: bytes) -> None:
            # Bytes that arrive while no head is complete count toward the head; a head
            # completed in this chunk starts the count again. What follows a completed
            # message in the same chunk is not counted: at most one read (256 KiB) more.
            if not self._body_open:
                self._head_bytes += len(data)
            self._chunk = data
            super().feed(data)
            self._chunk = b""
            if self._upgraded:
                return
            if self.parser.should_upgrade():
                self._no_upgrade()
            if self._head_bytes > max_head_bytes and not self.transport.is_closing():
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self.send_400_response(message)

        def _no_upgrade(self) -> None:
            # A request that asks to switch protocols: llhttp parses nothing after it (it
            # waits for the switch, which the gateway never makes), so a request
            # pipelined behind it would wait, unanswered, for the head deadline. The
            # connection ends with this request's answer instead, as h11's would not
            # need to: the client learns at once to send the next one elsewhere.
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                cycle.keep_alive = False
            elif not self.transport.is_closing():
                self.transport.close()

    return cast(type[asyncio.Protocol], HardenedHttpToolsProtocol)


def not_a_cut(is_cut: Callable[[BaseException | None], bool]) -> Callable[[], None]:
    """Keep uvicorn's log free of the tracebacks of answers ``is_cut`` says were cut on
    purpose; returns the undo."""
    server_log = logging.getLogger(SERVER_LOGGER)

    def keep(record: logging.LogRecord) -> bool:
        return not is_cut(record.exc_info[1] if record.exc_info else None)

    server_log.addFilter(keep)
    return lambda: server_log.removeFilter(keep)
