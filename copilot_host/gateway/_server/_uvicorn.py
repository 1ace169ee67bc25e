"""uvicorn, as the gateway's server uses it: the one module that names its classes and
attributes.

The hardening (:mod:`._hardening`) needs four things uvicorn has no setting for: to see
each connection's bytes before the protocol parses them, to answer two questions about a
connection ("is a request body still unread?", "is it waiting for a request head?"), to
know when an answer is complete, and to take more signals than SIGINT and SIGTERM. The
protocol classes below subclass uvicorn's h11 and httptools protocols and read their state
(``conn``, ``cycle``, ``pipeline``) to answer, and decide which upgrades become WebSockets
(:mod:`._http` has them); :class:`Server` subclasses uvicorn's server for its signals and
start-up. Nothing else in the package imports uvicorn.

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
from typing import Any

import uvicorn

from ._errors import ServingError

__all__ = [
    "SERVER_LOGGER",
    "TESTED",
    "Config",
    "Server",
    "check",
    "config",
    "http_protocol",
    "not_a_cut",
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
    """Refuse (:class:`ServingError` ``server_unsupported``) a uvicorn that lacks anything
    this module relies on for protocol ``http``; warn once for one newer than tested."""
    version = getattr(uvicorn, "__version__", "unknown")
    missing = _missing(http)
    oldest, newest = TESTED
    tested = f"{oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}"
    if missing:
        raise ServingError(
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


def http_protocol(http: str) -> type[Any]:
    """uvicorn's HTTP protocol class ``http`` (``"h11"`` or ``"httptools"``), which
    :mod:`._http` guards."""
    if http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


# uvicorn's own log (start-up, shutdown, an exception in the application).
SERVER_LOGGER = "uvicorn.error"


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


def not_a_cut(is_cut: Callable[[BaseException | None], bool]) -> Callable[[], None]:
    """Keep uvicorn's log free of the tracebacks of answers ``is_cut`` says were cut on
    purpose; returns the undo."""
    server_log = logging.getLogger(SERVER_LOGGER)

    def keep(record: logging.LogRecord) -> bool:
        return not is_cut(record.exc_info[1] if record.exc_info else None)

    server_log.addFilter(keep)
    return lambda: server_log.removeFilter(keep)
