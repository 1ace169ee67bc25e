"""``AsyncGitHubCopilotHost``: the asyncio GitHub.com adapter (a thin I/O shell)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import httpx2

from .._catalog._specs import Inventory
from .._clock import SYSTEM_CLOCK, Clock
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
from ._core import HostCore
from ._discovery import build_models_request, parse_models
from ._exchange import build_exchange_request, parse_exchange
from ._headers import DEFAULT_CLIENT_ID, EditorIdentity
from ._http import AsyncSender
from ._usage import build_usage_request, parse_usage

if TYPE_CHECKING:
    from collections.abc import Generator

    from .._usage import CopilotUsage
    from ..store import CredentialStore, Deleted

__all__ = ["AsyncGitHubCopilotHost"]

_T = TypeVar("_T")


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
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        super().__init__(store=store, client_id=client_id, editor=editor, clock=clock)
        self._sender = AsyncSender(transport=transport, timeout=timeout, clock=clock, sleep=sleep)

    async def begin_device_login(self) -> CopilotDeviceLogin:
        return await self._drive(_login.begin(self._client_id, self._editor))

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized:
        return await self._drive(_login.poll(self._client_id, self._editor, login))

    async def exchange(self, identity: LoginIdentity) -> CopilotSession:
        # Decrypting may wait on the keyring: keep that off the event loop.
        stored, token = await asyncio.to_thread(self._load, identity)
        response = await self._sender.send(build_exchange_request(token, self._editor))
        return parse_exchange(response, stored)

    async def inventory(self, session: CopilotSession) -> Inventory:
        headers = self._discovery_headers(session)
        response = await self._sender.send(build_models_request(session, headers))
        other = self._discovery_fallback(session, headers, response)
        if other is not None:
            # Once, with the other identity: the one that works is kept for this login.
            response = await self._sender.send(build_models_request(session, other))
            if response.status == 200:
                headers = other
        found = parse_models(response, self._tried(headers, other))
        self._kept(session, headers)
        return found

    # -- Copilot Auto (docs/WIRE.md, "Copilot Auto") ---------------------------------------

    async def auto_probe(self, session: CopilotSession) -> AutoProbe:
        """Registration's one look at Auto: the pool call, bounded to
        :data:`~copilot_host.github._auto.PROBE_BUDGET` seconds; never raises."""
        request = build_pool_request(session, self.request_headers(), budget=PROBE_BUDGET)
        try:
            found: AutoSession | CopilotHostError | None = parse_pool(
                await self._sender.send(request), session
            )
        except CopilotHostError as exc:
            found = exc
        return self._probed(session, found)

    async def auto_session(
        self, session: CopilotSession, *, prompt: str, vision: bool = False, tier: str | None = None
    ) -> AutoSession:
        """An Auto session for a request: the pool call (no prompt); only once that was
        answered 404 for this login, the routing call, with ``prompt``."""
        headers = self.request_headers()
        if self._asks_pool(session):
            found = parse_pool(
                await self._sender.send(build_pool_request(session, headers)), session
            )
            if found is not None:
                return found
            self._pool_gated(session)
        request = build_route_request(session, headers, prompt, vision=vision, tier=tier)
        found = parse_route(await self._sender.send(request), session)
        if found is None:
            raise both_refused()
        return found

    async def usage(self) -> CopilotUsage:
        """The stored login's plan and quotas; see ``GitHubCopilotHost.usage``."""
        # Decrypting may wait on the keyring: keep that off the event loop.
        stored, token = await asyncio.to_thread(self._load_current)
        response = await self._sender.send(build_usage_request(token, self._editor))
        return parse_usage(response, stored.account)

    async def login(
        self,
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> LoginIdentity:
        """Run the whole device flow; cancel the task to stop it (nothing is stored)."""
        steps = _login.login(self._client_id, self._editor, self._clock)
        return await self._drive(steps, on_code=on_code, sleep=sleep)

    async def logout(self) -> Deleted:
        self._forget()
        return await asyncio.to_thread(self._store.delete)

    async def _drive(
        self,
        steps: Generator[_login.Step, object, _T],
        *,
        on_code: Callable[[CopilotDeviceLogin], None] | None = None,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> _T:
        """Run the login steps on the event loop."""
        answer: object = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            answer = None
            if isinstance(step, _login.Send):
                answer = await self._sender.send(step.request)
            elif isinstance(step, _login.Wait):
                await (sleep or asyncio.sleep)(step.seconds)
            elif isinstance(step, _login.Show):
                if on_code is not None:
                    on_code(step.login)
            elif isinstance(step, _login.Check):
                # The keyring probe may block (bounded): off the event loop.
                await asyncio.to_thread(self._check)
            else:
                # Kept without an await: once this starts, a task cancellation cannot split
                # "stored" from "reported", so a cancelled login has stored nothing and a
                # login that stored something returns it. The store bounds its own lock
                # and keyring waits.
                answer = self._keep(step)

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
