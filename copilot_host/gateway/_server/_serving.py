"""Serving the gateway: the hardened server around an app of :func:`create_app`.

``await serve(app, host="127.0.0.1", port=4141)`` binds the address, runs the app under
uvicorn with the bounds of :mod:`._hardening` (the head deadline, the connection bound,
the lingering close, one line per out-of-descriptors episode) until it is stopped, and
gives requests in flight the grace period. :class:`GatewayServer` is the same with a
handle: ``started``, ``stop()`` from any thread, the grace period.

What changes the whole process is off unless asked for, since an application may have its
own: ``signals=True`` takes :data:`STOP_SIGNALS` while serving (in the main thread only)
and raises each again once stopped, for the program's own handling; ``raise_open_files``
raises the soft open-file limit to the hard one first; ``queue_stderr`` sends the lines
of :func:`write_stderr_line` through a writer thread, so a stderr nobody reads never
blocks serving; ``tune_malloc`` keeps asyncio's socket read buffers on glibc's heap
(:mod:`._malloc` says why and what it costs). No logging handler is installed: the app
logs to ``copilot_host.gateway`` and its access lines to :data:`ACCESS_LOGGER`, for the
program to route.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import _GeneratorContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import copilot_host as ch

from .._app import MAX_BODY_BYTES, SOCKET_PATHS, body_deadline
from ._errors import ServingError
from ._hardening import (
    HEAD_TIMEOUT,
    LINGER_BYTES,
    LINGER_IDLE_SECONDS,
    LINGER_SECONDS,
    MAX_HEAD_BYTES,
    Connection,
    ConnectionBook,
    Guard,
    Hardening,
)
from ._process import (
    capture_stop_signals,
    connection_bound,
    quiet_accept_errors,
    raise_open_file_limit,
)
from ._socket import SocketLimits, socket_protocol
from ._stack import ServerStack, server_stack, upstream_transport

if TYPE_CHECKING:
    from . import _uvicorn

__all__ = ["GRACE", "GatewayServer", "ServeOptions", "bind", "serve"]

# Seconds requests in flight get to finish once the server is told to stop.
GRACE = 5
# Connections the kernel queues before the server accepts them.
_BACKLOG = 2048
# Connections accepted in one go, at most (fewer when the connection bound is small).
_ACCEPT_BATCH = 64

_log = logging.getLogger("copilot_host.gateway")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` (an IP address: ``127.0.0.1``, ``::1``) and
    ``port`` (0: a free one). A :class:`ServingError` when it cannot be had:
    ``port_in_use``, ``address_unavailable`` or ``listen_failed``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off only on sockets
    # that say they are TCP, and with it on, every answer (head and body written apart)
    # waits out the client's delayed ACK, some 40 ms.
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        # A restart may bind the port its predecessor's closed connections still wait on.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen(_BACKLOG)
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServingError(f"{where} is already in use", code="port_in_use") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise ServingError(
                f"cannot listen on {where}: this machine has no such address",
                code="address_unavailable",
            ) from None
        raise ServingError(
            f"cannot listen on {where}: {exc.strerror or type(exc).__name__}",
            code="listen_failed",
        ) from None
    return listener


# What takes the server's signals, given its exit handler and the list it captures into.
_Signals = Callable[[Callable[[int, Any], None], list[int]], _GeneratorContextManager[None]]


@contextmanager
def _no_signals(_on_signal: Callable[[int, Any], None], _captured: list[int]) -> Iterator[None]:
    yield


def _cut_on_purpose(error: BaseException | None) -> bool:
    # A relay that broke off after its answer started: the app has logged one line saying
    # so, and raised only so that the server cuts the connection; the server's "Exception
    # in ASGI application" traceback would add nothing but noise.
    return isinstance(error, ch.CopilotHostError) and error.code == "answer_cut"


class GatewayServer:
    """One serving of a gateway app, and the handle to it (see the module docstring).

    ``listener``: a bound, listening socket to serve on (the caller's to close); else
    ``host`` and ``port`` are bound (:func:`bind`) when serving starts. ``stack``: the HTTP
    parser and the upstream transport for an app made without one (default:
    :func:`server_stack` of the environment, read once, when first needed). ``hardening``: the
    bounds. ``lifespan``: run the app's ASGI lifespan (a gateway app needs it).
    ``on_started`` is called once connections are accepted; if it raises, the server
    stops the orderly way and :meth:`serve` raises that exception once it has stopped.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        listener: socket.socket | None = None,
        grace: int = GRACE,
        stack: ServerStack | None = None,
        hardening: Hardening | None = None,
        lifespan: bool = True,
        signals: bool = False,
        raise_open_files: bool = False,
        queue_stderr: bool = False,
        tune_malloc: bool = False,
        on_started: Callable[[], None] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._listener = listener
        self._grace = grace
        self._stack = stack
        self._hardening = hardening if hardening is not None else Hardening()
        self._lifespan = lifespan
        self._signals = signals
        self._raise_open_files = raise_open_files
        self._queue_stderr = queue_stderr
        self._tune_malloc = tune_malloc
        self._on_started = on_started
        self._lock = threading.Lock()
        self._server: _uvicorn.Server | None = None
        self._stopping = False
        self._failure: Exception | None = None

    @property
    def stack(self) -> ServerStack:
        """The stack this server serves on (the environment is read the first time)."""
        stack = self._stack
        if stack is None:
            stack = self._stack = server_stack()
        return stack

    def adopt(self, app: Any) -> None:
        """Put a gateway app made without ``transport=`` on this server's upstream
        transport (aiohttp on ``[fast]``; see :func:`upstream_transport`). :meth:`serve`
        does it; call it first to open the app's client before serving
        (``await app.startup()``, which fails on unusable HTTPS settings)."""
        from .._app import GatewayApp

        if isinstance(app, GatewayApp):
            stack = self.stack
            app._offer(lambda: upstream_transport(stack))

    @property
    def grace(self) -> int:
        """Seconds requests in flight get once :meth:`stop` is called."""
        return self._grace

    @property
    def started(self) -> bool:
        """Whether the server accepts (or accepted) connections."""
        server = self._server
        return server is not None and server.started

    def stop(self) -> None:
        """Stop accepting and end :meth:`serve` once requests in flight are done (or the
        grace period is over). Any thread may call it, before serving started too; so
        does cancelling the task that awaits :meth:`serve`."""
        with self._lock:
            self._stopping = True
            server = self._server
        if server is not None:
            server.request_exit()

    async def serve(self, app: Any) -> None:
        """Serve ``app`` (an ASGI 3 application) until stopped."""
        from . import _uvicorn
        from ._lines import queued_stderr

        # What the adapter relies on is there, before anything is bound or changed.
        _uvicorn.check(self.stack.http)
        if self._raise_open_files:
            raise_open_file_limit()
        if self._tune_malloc:
            from ._malloc import tune_malloc

            tune_malloc()
        self.adopt(app)
        config, book = self._config(app)
        book.accepted = quiet_accept_errors(asyncio.get_running_loop())
        signals: _Signals = capture_stop_signals if self._signals else _no_signals
        server = _uvicorn.Server(
            config, signals=signals, on_started=self._started_now, listen_queue=_BACKLOG
        )
        listener = self._listener if self._listener is not None else bind(self._host, self._port)
        with self._lock:
            self._server = server
            if self._stopping:  # stopped while it was starting
                server.request_exit()
        undo_queue = queued_stderr() if self._queue_stderr else (lambda: None)
        undo_filter = _uvicorn.not_a_cut(_cut_on_purpose)
        serving = asyncio.ensure_future(server.serve(sockets=[listener]))
        try:
            try:
                await asyncio.shield(serving)
            except asyncio.CancelledError:
                # Cancelled (asyncio.run's answer to Ctrl-C among them): the orderly way
                # still, then the cancellation goes on.
                server.request_exit()
                await serving
                raise
        finally:
            undo_filter()
            undo_queue()
            if self._listener is None:
                listener.close()
        if self._failure is not None:
            raise self._failure

    def _config(self, app: Any) -> tuple[_uvicorn.Config, ConnectionBook]:
        """uvicorn's configuration for ``app``, and the book its protocol keeps: on the
        HTTP parser of the stack (chosen now), bounded by the open-file limit in force."""
        import resource

        from . import _uvicorn

        limits = self._hardening
        stack = self.stack
        bound = limits.max_connections
        if bound is None:
            open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            bound = connection_bound(open_files)
            _log.debug(
                "open-file limit %s: at most %d client connections at once",
                "unlimited" if open_files == resource.RLIM_INFINITY else open_files,
                bound,
            )
        book = ConnectionBook(bound)
        http = hardened_protocol(
            book,
            http=stack.http,
            head_timeout=limits.head_timeout,
            linger_seconds=limits.linger_seconds,
            linger_bytes=limits.linger_bytes,
            max_head_bytes=limits.max_head_bytes,
            linger_idle_seconds=limits.linger_idle_seconds,
        )
        sockets = socket_protocol(
            app,
            SocketLimits(
                max_message_bytes=MAX_BODY_BYTES,
                message_seconds=lambda received: body_deadline(0, received),
                idle_seconds=limits.socket_idle_seconds,
            ),
        )
        config = _uvicorn.config(
            app,
            http=http,
            ws=sockets,
            lifespan=self._lifespan,
            grace=self._grace,
            max_head_bytes=limits.max_head_bytes,
            accept_batch=max(1, min(_ACCEPT_BATCH, book.fresh_bound // 2)),
        )
        return config, book

    def _started_now(self) -> None:
        if self._on_started is None:
            return
        try:
            self._on_started()
        except Exception as exc:
            # Raised from here, the server's cancelled lifespan task would log a
            # traceback: stop the orderly way, and raise it once stopped.
            self._failure = exc
            self.stop()


class ServeOptions(TypedDict, total=False):
    """:class:`GatewayServer`'s options, for :func:`serve`."""

    host: str
    port: int
    listener: socket.socket | None
    grace: int
    stack: ServerStack | None
    hardening: Hardening | None
    lifespan: bool
    signals: bool
    raise_open_files: bool
    queue_stderr: bool
    tune_malloc: bool
    on_started: Callable[[], None] | None


async def serve(app: Any, **options: Unpack[ServeOptions]) -> None:
    """Serve ``app`` (:func:`create_app`'s) on ``host``:``port`` (or ``listener``) until
    the task is cancelled or, with ``signals=True``, a stop signal arrives; either way
    requests in flight get the grace period. The options are :class:`GatewayServer`'s."""
    await GatewayServer(**options).serve(app)


def hardened_protocol(
    book: ConnectionBook,
    *,
    http: str = "h11",
    head_timeout: float = HEAD_TIMEOUT,
    linger_seconds: float = LINGER_SECONDS,
    linger_bytes: int = LINGER_BYTES,
    max_head_bytes: int = MAX_HEAD_BYTES,
    linger_idle_seconds: float = LINGER_IDLE_SECONDS,
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``http`` (``"h11"`` or ``"httptools"``) with each
    connection watched by a :class:`Guard` keeping ``book``. The two differ only in how
    they answer two questions, "is a request body still unread?" and "is the connection
    waiting for a request head?", and httptools gets the bound on a request head that h11
    keeps by itself (``max_head_bytes``, given to h11 as its largest incomplete event)."""
    from . import _http

    limits = Hardening(
        head_timeout=head_timeout,
        max_connections=book.bound,
        linger_seconds=linger_seconds,
        linger_bytes=linger_bytes,
        max_head_bytes=max_head_bytes,
        linger_idle_seconds=linger_idle_seconds,
    )

    def guard(connection: Connection) -> Guard:
        return Guard(connection, book, limits)

    socket_paths = frozenset(path.encode("ascii") for path in SOCKET_PATHS)
    return _http.protocol(http, guard, max_head_bytes=max_head_bytes, socket_paths=socket_paths)
