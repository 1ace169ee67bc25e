"""``GitHubCopilotHost``: the blocking GitHub.com adapter (a thin I/O shell)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import httpx2

from .._catalog._specs import Inventory
from .._clock import SYSTEM_CLOCK, Clock
from .._device import cancelled, pause
from .._errors import CopilotHostError
from .._hosts import Authorized, CopilotDeviceLogin, CopilotSession, LoginIdentity, Pending
from .._sessions._auto import AutoProbe, AutoSession
from . import _login
from ._auto import (
    PROBE_BUDGET,
    both_refused,
    build_pool_request,
    build_route_request,
    parse_pool,
    parse_route,
)
from ._checkup import Checkup, ProbeCheck, run_checkup, run_probe
from ._core import HostCore
from ._discovery import build_models_request, parse_models
from ._exchange import build_exchange_request, parse_exchange
from ._headers import DEFAULT_CLIENT_ID, EditorIdentity
from ._http import Sender
from ._usage import build_usage_request, parse_usage

if TYPE_CHECKING:
    from collections.abc import Generator

    from .._api import ApiProtocol
    from .._usage import CopilotUsage
    from ..store import CredentialStore, Deleted

__all__ = ["GitHubCopilotHost"]

_T = TypeVar("_T")


class GitHubCopilotHost(HostCore):
    """The :class:`~copilot_host.CopilotHost` for GitHub.com.

    ``transport`` is the only seam for tests (see :mod:`copilot_host.testing`); the URLs
    are fixed. ``sleep`` paces the one retry of a 429/5xx on exchange and discovery. The
    store keeps the credential (``CredentialStore(key_file=True)`` to keep its key in a
    file).
    """

    def __init__(
        self,
        *,
        store: CredentialStore | None = None,
        client_id: str = DEFAULT_CLIENT_ID,
        editor: EditorIdentity | None = None,
        transport: httpx2.BaseTransport | None = None,
        timeout: httpx2.Timeout | None = None,
        clock: Clock = SYSTEM_CLOCK,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(store=store, client_id=client_id, editor=editor, clock=clock)
        self._sender = Sender(transport=transport, timeout=timeout, clock=clock, sleep=sleep)

    # -- the seam -----------------------------------------------------------------------

    def begin_device_login(self) -> CopilotDeviceLogin:
        return self._drive(_login.begin(self._client_id, self._editor))

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        return self._drive(_login.poll(self._client_id, self._editor, login))

    def exchange(self, identity: LoginIdentity) -> CopilotSession:
        stored, token = self._load(identity)
        response = self._sender.send(build_exchange_request(token, self._editor))
        return parse_exchange(response, stored)

    def inventory(self, session: CopilotSession) -> Inventory:
        headers = self._discovery_headers(session)
        response = self._sender.send(build_models_request(session, headers))
        other = self._discovery_fallback(session, headers, response)
        if other is not None:
            # Once, with the other identity: the one that works is kept for this login.
            response = self._sender.send(build_models_request(session, other))
            if response.status == 200:
                headers = other
        found = parse_models(response, self._tried(headers, other))
        self._kept(session, headers)
        return found

    # -- Copilot Auto (docs/WIRE.md, "Copilot Auto") ---------------------------------------

    def auto_probe(self, session: CopilotSession) -> AutoProbe:
        """Registration's one look at Auto: the pool call, bounded to
        :data:`~copilot_host.github._auto.PROBE_BUDGET` seconds; never raises."""
        request = build_pool_request(session, self.request_headers(), budget=PROBE_BUDGET)
        try:
            found: AutoSession | CopilotHostError | None = parse_pool(
                self._sender.send(request), session
            )
        except CopilotHostError as exc:
            found = exc
        return self._probed(session, found)

    def auto_session(
        self, session: CopilotSession, *, prompt: str, vision: bool = False, tier: str | None = None
    ) -> AutoSession:
        """An Auto session for a request: the pool call (no prompt); only once that was
        answered 404 for this login, the routing call, with ``prompt``."""
        headers = self.request_headers()
        if self._asks_pool(session):
            found = parse_pool(self._sender.send(build_pool_request(session, headers)), session)
            if found is not None:
                return found
            self._pool_gated(session)
        request = build_route_request(session, headers, prompt, vision=vision, tier=tier)
        found = parse_route(self._sender.send(request), session)
        if found is None:
            raise both_refused()
        return found

    # -- people-facing operations ---------------------------------------------------------

    def usage(self) -> CopilotUsage:
        """The stored login's plan and quotas (``GET /copilot_internal/user``).

        Sent with the GitHub token to api.github.com only, under the same deadlines and
        retry as the exchange. Raises ``NotLoggedInError`` without a login,
        ``QuotaExceededError`` on a 402, ``EntitlementError`` (``usage_unavailable``)
        when GitHub does not show this login its usage.
        """
        stored, token = self._load_current()
        response = self._sender.send(build_usage_request(token, self._editor))
        return parse_usage(response, stored.account)

    def checkup(self) -> Checkup:
        """What ``copilot-host doctor`` asks GitHub for the stored login: a session exchange,
        then ``/models`` under each identity this host presents (the editor's, then the
        Copilot CLI's), each answer reported, never raised (:class:`Checkup`). Raises only
        what loading the login raises (``NotLoggedInError``, store and keyring errors). The
        session it holds is its own: the host's routes and identity choice are untouched.
        """
        stored, token = self._load_current()
        identities = {"editor": self._chat, "cli": self._cli}
        return run_checkup(stored, token, self._editor, identities, self._sender.send)

    def probe(self, checkup: Checkup, protocol: ApiProtocol, model: str) -> ProbeCheck:
        """One small request to ``model`` on ``protocol`` (a one-word answer of at most 16
        tokens), with the session and identity ``checkup`` was served with. It is billed
        like any model request; it is sent once, never retried."""
        return run_probe(checkup, protocol, model, self._sender.send, self._clock)

    def login(
        self,
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> LoginIdentity:
        """Run the whole device flow; ``on_code`` shows the user code and page to the person.

        Setting ``cancel`` ends the wait promptly with ``LoginCancelledError``, up to the
        moment the credential is kept; nothing is stored unless the person approved and
        GitHub granted the account a Copilot session.
        """
        steps = _login.login(self._client_id, self._editor, self._clock)
        return self._drive(steps, on_code=on_code, cancel=cancel, sleep=sleep)

    def logout(self) -> Deleted:
        """Delete the stored credential and its key, and say what was removed (true when
        anything was). GitHub's authorization is not revoked."""
        self._forget()
        return self._store.delete()

    # -- the driver -----------------------------------------------------------------------

    def _drive(
        self,
        steps: Generator[_login.Step, object, _T],
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> _T:
        """Run the login steps with blocking I/O; ``cancel`` is honoured between steps."""
        answer: object = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if cancel is not None and cancel.is_set():
                raise cancelled()
            answer = None
            if isinstance(step, _login.Send):
                answer = self._sender.send(step.request)
            elif isinstance(step, _login.Wait):
                pause(step.seconds, cancel, sleep)
            elif isinstance(step, _login.Show):
                if on_code is not None:
                    on_code(step.login)
            elif isinstance(step, _login.Check):
                self._check()
            else:
                answer = self._keep(step)

    def close(self) -> None:
        self._sender.close()

    def __enter__(self) -> GitHubCopilotHost:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
