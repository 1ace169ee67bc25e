"""``GitHubEmulator``: start, script and inspect the loopback GitHub."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx2

from ._accounts import Logins
from ._auto import AutoBook
from ._quota import Quota
from ._record import RecordedRequest
from ._routes import ROUTED_HOSTS
from ._scenario import Scenario
from ._server import make_server
from ._state import EmulatorState
from ._transport import AsyncLoopbackTransport, LoopbackTransport

if TYPE_CHECKING:
    from ._sockets import SocketServer

__all__ = ["GitHubEmulator"]


class GitHubEmulator:
    """A faithful stand-in for GitHub.com and the Copilot API on 127.0.0.1.

    Use it as a context manager; pass :meth:`transport` (or :meth:`async_transport`) to a
    host. Tokens it issues are random per run (canaries): :attr:`github_token`,
    :attr:`session_tokens`, :attr:`device_codes`, :attr:`auto_session_tokens`.
    """

    def __init__(self, scenario: Scenario | None = None) -> None:
        self._scenario = scenario if scenario is not None else Scenario()
        self._state = EmulatorState(self._scenario)
        self._server = make_server(self._state)
        self._thread: threading.Thread | None = None
        # Copilot's WebSocket, on a port of its own, started when first asked for.
        self._sockets: SocketServer | None = None
        self._sockets_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> GitHubEmulator:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="github-emulator",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        # Answers still pausing (a stream, a drip, a stall) end at their next pause.
        self._state.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()
        with self._sockets_lock:
            sockets, self._sockets = self._sockets, None
        if sockets is not None:
            sockets.stop()

    def __enter__(self) -> GitHubEmulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- wiring ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def scenario(self) -> Scenario:
        return self._scenario

    def transport(self) -> httpx2.BaseTransport:
        """A new blocking transport routing GitHub's hosts here (the caller closes it)."""
        return LoopbackTransport(self.port, ROUTED_HOSTS, self._refused)

    def async_transport(
        self, *, inner: httpx2.AsyncBaseTransport | None = None
    ) -> httpx2.AsyncBaseTransport:
        """The asyncio twin of :meth:`transport`: over httpx2's own transport, or over
        ``inner`` when given (closing this transport closes ``inner``)."""
        return AsyncLoopbackTransport(self.port, ROUTED_HOSTS, self._refused, inner=inner)

    @property
    def socket_port(self) -> int:
        """The port of Copilot's WebSocket (``wss://{api}/responses``), served from the
        first time it is asked for (the ``websockets`` package is imported then)."""
        with self._sockets_lock:
            if self._sockets is None:
                from ._sockets import SocketServer

                self._sockets = SocketServer(self._state)
            return self._sockets.port

    def socket_connector(self) -> Callable[..., Any]:
        """The connect seam for Copilot's WebSocket: an async ``connect(url, headers,
        **options)`` that opens a ``websockets`` client connection to this emulator for a
        ``wss://`` URL on a Copilot API host, as :meth:`async_transport` routes HTTPS
        (what ``copilot_host.gateway.create_app(sockets=...)`` takes)."""
        from ._routes import COPILOT_HOSTS
        from ._sockets import socket_connector

        return socket_connector(self.socket_port, COPILOT_HOSTS, self._refused)

    def _refused(self, url: str) -> None:
        with self._state.lock:
            self._state.refused.append(url)

    # -- the person and GitHub's side ------------------------------------------------------

    @property
    def _logins(self) -> Logins:
        return self._state.part(Logins)

    def authorize(self) -> None:
        """The person approves the pending login (with
        ``Scenario(login=DeviceFlow(auto_approve=False))``)."""
        self._logins.decide("approved")

    def deny(self) -> None:
        self._logins.decide("access_denied")

    def revoke_login(self) -> None:
        """GitHub stops accepting the OAuth token (the person revoked the app)."""
        self._logins.revoke_login()

    def revoke_sessions(self) -> None:
        """Every Copilot session issued so far stops working (answers 401)."""
        self._logins.revoke_sessions()

    # -- what happened ---------------------------------------------------------------------

    @property
    def quota_used(self) -> float:
        """What the account has used of its scripted quota, in the plan's unit."""
        return self._state.part(Quota).used

    @property
    def github_token(self) -> str:
        return self._logins.github_token

    @property
    def session_tokens(self) -> tuple[str, ...]:
        with self._state.lock:
            return tuple(self._logins.session_tokens)

    @property
    def device_codes(self) -> tuple[str, ...]:
        with self._state.lock:
            return tuple(self._logins.device_codes)

    @property
    def auto_session_tokens(self) -> tuple[str, ...]:
        """The Copilot Auto session tokens issued (``Copilot-Session-Token``), in order."""
        return self._state.part(AutoBook).tokens()

    def canaries(self) -> tuple[str, ...]:
        """Every credential issued so far: none may ever appear in output, logs or files."""
        return (
            self.github_token,
            *self.session_tokens,
            *self.device_codes,
            *self.auto_session_tokens,
        )

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        with self._state.lock:
            return tuple(self._state.requests)

    def requests_to(self, endpoint: str) -> tuple[RecordedRequest, ...]:
        return tuple(r for r in self.requests if r.endpoint == endpoint)

    @property
    def refusals(self) -> tuple[RecordedRequest, ...]:
        """Requests the emulator refused by one of its rules (``refusal`` names the rule:
        a check of ``CHECKS``, or ``"model"``), oldest first: a test of a real client
        asserts this is empty."""
        return tuple(r for r in self.requests if r.refusal is not None)

    def assert_no_refusals(self) -> None:
        """Raise ``AssertionError`` naming each refusal (rule, path, model, what broke it)."""
        found = self.refusals
        if found:
            lines = (
                f"{r.refusal} {r.method} {r.path} model={r.model} {r.refusal_detail}" for r in found
            )
            raise AssertionError(f"the emulator refused {len(found)}: " + "; ".join(lines))

    @property
    def refused(self) -> tuple[str, ...]:
        """URLs a transport refused to route (hosts that are not GitHub's), without their
        query, fragment or user information."""
        with self._state.lock:
            return tuple(self._state.refused)

    @property
    def disconnects(self) -> tuple[RecordedRequest, ...]:
        """Requests whose client went away before the whole answer was written: the proof
        that a gateway cancelled its upstream stream when its own client left."""
        return tuple(r for r in self.requests if r.disconnected)

    def wait_for_disconnects(
        self, count: int = 1, timeout: float = 5.0
    ) -> tuple[RecordedRequest, ...]:
        """Block until ``count`` requests have been disconnected and return them.

        The emulator notices a client that hangs up while it pauses between events (or at
        its next write), on its own thread; this waits for that instead of polling. Raises
        ``TimeoutError`` after ``timeout`` seconds.
        """
        state = self._state
        with state.changed:
            done = state.changed.wait_for(
                lambda: sum(r.disconnected for r in state.requests) >= count, timeout
            )
            seen = tuple(r for r in state.requests if r.disconnected)
        if not done:
            raise TimeoutError(f"{len(seen)} of {count} disconnects within {timeout} s")
        return seen

    def clear_requests(self) -> None:
        self._state.clear()

    def __repr__(self) -> str:
        return f"GitHubEmulator(port={self.port})"
