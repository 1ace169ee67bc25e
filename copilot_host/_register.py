"""``register_models``: the one call an embedding application makes."""

from __future__ import annotations

import inspect

from ._catalog import Catalog
from ._clock import SYSTEM_CLOCK, Clock
from ._errors import NotLoggedInError
from ._provider import AsyncCopilotProvider, CopilotProvider, RegistrationResult
from ._seam import AsyncCopilotHost, CopilotHost, LoginIdentity

__all__ = ["aregister_models", "register_models"]


def _identity(host: CopilotHost | AsyncCopilotHost) -> LoginIdentity:
    identity = host.availability()
    if identity is None:
        raise NotLoggedInError("not logged in: run `copilot-host login` first")
    return identity


def _offline(host: CopilotHost | AsyncCopilotHost) -> RegistrationResult:
    return RegistrationResult((), host.provider_id, None, offline=True)


def register_models(
    catalog: Catalog,
    host: CopilotHost,
    *,
    offline: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> RegistrationResult:
    """Register the account's Copilot models as routes in ``catalog``.

    The first exchange names the vetted inference origin; a :class:`CopilotProvider` bound
    to it then adds every route under ``host.provider_id`` in one atomic swap (replacing
    that owner's earlier routes). Any failure raises and leaves ``catalog`` as it was.
    ``offline=True`` makes no network call, changes nothing and returns no routes.
    """
    if inspect.iscoroutinefunction(host.exchange):
        raise TypeError("this host is asynchronous: use `await aregister_models(...)`")
    if offline:
        return _offline(host)
    session = host.exchange(_identity(host))
    provider = CopilotProvider(host, session.endpoint, initial_session=session, clock=clock)
    return provider.register_models(catalog)


async def aregister_models(
    catalog: Catalog,
    host: AsyncCopilotHost,
    *,
    offline: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> RegistrationResult:
    """The asyncio twin of :func:`register_models`."""
    if not inspect.iscoroutinefunction(host.exchange):
        raise TypeError("this host is synchronous: use `register_models(...)`")
    if offline:
        return _offline(host)
    session = await host.exchange(_identity(host))
    provider = AsyncCopilotProvider(host, session.endpoint, initial_session=session, clock=clock)
    return await provider.register_models(catalog)
