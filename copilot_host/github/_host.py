"""``GitHubCopilotHost``: the blocking GitHub.com adapter (a thin I/O shell)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import httpx2

from .._clock import SYSTEM_CLOCK, Clock
from .._device import wait_for_device_login
from .._errors import LoginCancelledError
from .._hosts import Authorized, CopilotDeviceLogin, CopilotSession, LoginIdentity, Pending
from .._model import Inventory
from ._core import HostCore
from ._device_code import build_device_code_request, parse_device_code
from ._exchange import build_exchange_request, parse_exchange, parse_grant
from ._headers import DEFAULT_CLIENT_ID, EditorIdentity
from ._http import Sender
from ._models import build_models_request, parse_models
from ._poll import Granted, build_poll_request, parse_poll
from ._user import build_user_request, parse_user

if TYPE_CHECKING:
    from ..store import CredentialStore

__all__ = ["GitHubCopilotHost"]


class GitHubCopilotHost(HostCore):
    """The :class:`~copilot_host.CopilotHost` for GitHub.com.

    ``transport`` is the only seam for tests (see :mod:`copilot_host.testing`); the URLs
    are fixed. ``sleep`` paces the one retry of a 429/5xx on exchange and discovery.
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
        key_file: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(
            store=store, client_id=client_id, editor=editor, clock=clock, key_file=key_file
        )
        self._sender = Sender(transport=transport, timeout=timeout, clock=clock, sleep=sleep)

    # -- the seam -----------------------------------------------------------------------

    def begin_device_login(self) -> CopilotDeviceLogin:
        # Fail before a code is shown if the login could not be stored afterwards.
        self._store.preflight(key_file=self._key_file)
        request = build_device_code_request(self._client_id, self._editor)
        return parse_device_code(self._sender.send(request))

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        return self._poll(login, None)

    def exchange(self, identity: LoginIdentity) -> CopilotSession:
        stored, token = self._store.load()
        self._same_login(identity, stored)
        self._remember(stored, token)
        response = self._sender.send(build_exchange_request(token, self._editor))
        return parse_exchange(response, stored)

    def inventory(self, session: CopilotSession) -> Inventory:
        response = self._sender.send(build_models_request(session, self._editor))
        return parse_models(response)

    # -- people-facing operations ---------------------------------------------------------

    def login(
        self,
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> LoginIdentity:
        """Run the whole device flow; ``on_code`` shows the user code and page to the person.

        Setting ``cancel`` ends the wait promptly with ``LoginCancelledError``; nothing is
        stored unless the person approved and entitlement was verified.
        """
        login = self.begin_device_login()
        if on_code is not None:
            on_code(login)
        return wait_for_device_login(
            _CancelAware(self, cancel),
            login,
            cancel=cancel,
            sleep=sleep if sleep is not None else time.sleep,
            clock=self._clock,
        )

    def logout(self) -> bool:
        """Delete the stored credential and its key. GitHub's authorization is not revoked."""
        self._forget()
        return self._store.delete()

    # -- internals ------------------------------------------------------------------------

    def _poll(
        self, login: CopilotDeviceLogin, cancel: threading.Event | None
    ) -> Pending | Authorized:
        response = self._sender.send(build_poll_request(self._client_id, login, self._editor))
        outcome = parse_poll(response, login)
        if not isinstance(outcome, Granted):
            return outcome
        token = outcome.token
        # Entitlement first: an account without Copilot must not leave a credential behind.
        parse_grant(self._sender.send(build_exchange_request(token, self._editor)))
        account = parse_user(self._sender.send(build_user_request(token, self._editor)))
        if cancel is not None and cancel.is_set():
            raise LoginCancelledError("the login was cancelled; nothing was stored")
        identity = self._store.save(account, token, key_file=self._key_file).identity
        self._remember(identity, token)
        return Authorized(identity)

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


class _CancelAware:
    """Lets the wait loop's polls see ``cancel`` right up to the persist step."""

    __slots__ = ("_cancel", "_host")

    def __init__(self, host: GitHubCopilotHost, cancel: threading.Event | None) -> None:
        self._host = host
        self._cancel = cancel

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        return self._host._poll(login, self._cancel)
