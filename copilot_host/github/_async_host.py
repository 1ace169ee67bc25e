"""``AsyncGitHubCopilotHost``: the asyncio GitHub.com adapter (a thin I/O shell)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING

import httpx2

from .._clock import SYSTEM_CLOCK, Clock
from .._device import await_device_login
from .._hosts import Authorized, CopilotDeviceLogin, CopilotSession, LoginIdentity, Pending
from .._model import Inventory
from ._core import HostCore
from ._device_code import build_device_code_request, parse_device_code
from ._exchange import build_exchange_request, parse_exchange, parse_grant
from ._headers import DEFAULT_CLIENT_ID, EditorIdentity
from ._http import AsyncSender
from ._models import build_models_request, parse_models
from ._poll import Granted, build_poll_request, parse_poll
from ._user import build_user_request, parse_user

if TYPE_CHECKING:
    from ..store import CredentialStore

__all__ = ["AsyncGitHubCopilotHost"]


class AsyncGitHubCopilotHost(HostCore):
    """The :class:`~copilot_host.AsyncCopilotHost` for GitHub.com.

    ``availability`` and ``request_headers`` stay synchronous (cheap, no I/O). Cancelling
    the task that runs :meth:`login` stops the wait; nothing is stored.
    """

    def __init__(
        self,
        *,
        store: CredentialStore | None = None,
        client_id: str = DEFAULT_CLIENT_ID,
        editor: EditorIdentity | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: httpx2.Timeout | None = None,
        clock: Clock = SYSTEM_CLOCK,
        key_file: bool = False,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        super().__init__(
            store=store, client_id=client_id, editor=editor, clock=clock, key_file=key_file
        )
        self._sender = AsyncSender(transport=transport, timeout=timeout, clock=clock, sleep=sleep)

    async def begin_device_login(self) -> CopilotDeviceLogin:
        # Fail before a code is shown if the login could not be stored afterwards; the
        # keyring probe may block (bounded), so it runs off the event loop.
        await asyncio.to_thread(self._store.preflight, key_file=self._key_file)
        request = build_device_code_request(self._client_id, self._editor)
        return parse_device_code(await self._sender.send(request))

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        response = await self._sender.send(build_poll_request(self._client_id, login, self._editor))
        outcome = parse_poll(response, login)
        if not isinstance(outcome, Granted):
            return outcome
        token = outcome.token
        parse_grant(await self._sender.send(build_exchange_request(token, self._editor)))
        account = parse_user(await self._sender.send(build_user_request(token, self._editor)))
        # Persisted without an await: once this starts, a task cancellation cannot split
        # "stored" from "reported", so a cancelled login has stored nothing and a login that
        # stored something returns it. The store bounds its own lock and keyring waits.
        identity = self._store.save(account, token, key_file=self._key_file).identity
        self._remember(identity, token)
        return Authorized(identity)

    async def exchange(self, identity: LoginIdentity) -> CopilotSession:
        # Decrypting may wait on the keyring: keep that off the event loop.
        stored, token = await asyncio.to_thread(self._store.load)
        self._same_login(identity, stored)
        self._remember(stored, token)
        response = await self._sender.send(build_exchange_request(token, self._editor))
        return parse_exchange(response, stored)

    async def inventory(self, session: CopilotSession) -> Inventory:
        response = await self._sender.send(build_models_request(session, self._editor))
        return parse_models(response)

    async def login(
        self,
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> LoginIdentity:
        login = await self.begin_device_login()
        if on_code is not None:
            on_code(login)
        return await await_device_login(
            self,
            login,
            sleep=sleep if sleep is not None else asyncio.sleep,
            clock=self._clock,
        )

    async def logout(self) -> bool:
        self._forget()
        return await asyncio.to_thread(self._store.delete)

    async def aclose(self) -> None:
        await self._sender.aclose()

    async def __aenter__(self) -> AsyncGitHubCopilotHost:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
