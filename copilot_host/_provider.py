"""A provider binds one host to one vetted endpoint and owns its resolver and auth.

Route building is shared (sans-IO); the sync and async providers differ only in how they
wait for the host.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from ._catalog import Catalog
from ._clock import SYSTEM_CLOCK, Clock
from ._errors import NoEligibleModelsError, OriginError
from ._model import ApiProtocol, Inventory, ModelRoute, ModelSpec, SkippedModel
from ._origin import CopilotEndpoint
from ._seam import AsyncCopilotHost, CopilotHost, CopilotSession
from ._validate import validate_inventory

if TYPE_CHECKING:
    from ._auth import CopilotAuth
    from ._resolver import AsyncSessionResolver, SessionResolver

__all__ = ["AsyncCopilotProvider", "CopilotProvider", "RegistrationResult"]

_PROVIDER_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class RegistrationResult:
    """What one registration did: the routes now in the catalog under ``provider_id``,
    and the inventory entries that were skipped (never fatal), each with its reason."""

    routes: tuple[ModelRoute, ...]
    provider_id: str
    origin: str | None
    offline: bool = False
    skipped: tuple[SkippedModel, ...] = ()


def _check_provider_id(provider_id: object) -> str:
    if not isinstance(provider_id, str) or not _PROVIDER_ID.fullmatch(provider_id):
        raise ValueError("a provider id is 1-64 of lower-case letters, digits and . _ -")
    return provider_id


def _check_session(session: CopilotSession, endpoint: CopilotEndpoint) -> None:
    if session.endpoint != endpoint:
        raise OriginError(
            f"the session names {session.endpoint.origin}, but these routes were registered "
            f"for {endpoint.origin}; register the models again",
            code="origin_mismatch",
        )


def _no_models(skipped: tuple[SkippedModel, ...]) -> NoEligibleModelsError:
    if skipped:
        reasons = Counter(entry.reason for entry in skipped)
        summary = ", ".join(f"{count} {reason}" for reason, count in reasons.most_common())
        text = f"none of the {len(skipped)} models listed can be registered ({summary})"
    else:
        text = "the account's inventory lists no models"
    error = NoEligibleModelsError(f"{text}; nothing was registered")
    error.skipped = skipped
    return error


def _build_routes(
    provider_id: str,
    endpoint: CopilotEndpoint,
    auth: CopilotAuth,
    session: CopilotSession,
    found: Inventory | Sequence[ModelSpec],
) -> tuple[tuple[ModelRoute, ...], tuple[SkippedModel, ...]]:
    _check_session(session, endpoint)
    inventory = validate_inventory(found, secrets=(session.token,))
    skipped = tuple(inventory.skipped)
    if not inventory.models:
        raise _no_models(skipped)
    origin = endpoint.origin
    urls = {protocol: origin + protocol.path for protocol in ApiProtocol}
    routes = tuple(
        ModelRoute(
            route_id=f"{provider_id}/{spec.model_id}",
            model_id=spec.model_id,
            protocol=spec.protocol,
            origin=origin,
            url=urls[spec.protocol],
            auth=auth,
            spec=spec,
        )
        for spec in inventory.models
    )
    return routes, skipped


class _ProviderBase:
    """What both providers share: identity, endpoint, and the validate-and-swap step."""

    provider_id: str
    endpoint: CopilotEndpoint
    auth: CopilotAuth
    resolver: SessionResolver | AsyncSessionResolver

    def _bind(self, provider_id: str, endpoint: CopilotEndpoint) -> None:
        self.provider_id = _check_provider_id(provider_id)
        self.endpoint = endpoint

    def _swap(
        self, catalog: Catalog, session: CopilotSession, found: Inventory | Sequence[ModelSpec]
    ) -> RegistrationResult:
        routes, skipped = _build_routes(self.provider_id, self.endpoint, self.auth, session, found)
        catalog.replace_provider(self.provider_id, routes)
        return RegistrationResult(routes, self.provider_id, self.endpoint.origin, skipped=skipped)

    def close(self) -> None:
        """Drop the session this provider holds, so its token leaves memory now.

        The provider owns no connection (the host does). Its routes stay valid: a later
        request through ``route.auth`` exchanges again, as after any invalidation.
        """
        self.resolver.invalidate()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider_id!r}, {self.endpoint.origin!r})"


class CopilotProvider(_ProviderBase):
    """One :class:`CopilotHost` bound to one explicit endpoint."""

    def __init__(
        self,
        host: CopilotHost,
        endpoint: CopilotEndpoint,
        *,
        initial_session: CopilotSession | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        from ._auth import CopilotAuth
        from ._resolver import SessionResolver

        self._bind(host.provider_id, endpoint)
        self.host = host
        self.resolver: SessionResolver = SessionResolver(
            host, endpoint, clock=clock, initial=initial_session
        )
        self.auth = CopilotAuth(self.resolver, endpoint, host.request_headers())

    def register_models(self, catalog: Catalog) -> RegistrationResult:
        """availability -> session -> inventory -> validate -> one atomic swap."""
        session = self.resolver.get()
        return self._swap(catalog, session, self.host.inventory(session))


class AsyncCopilotProvider(_ProviderBase):
    """One :class:`AsyncCopilotHost` bound to one explicit endpoint."""

    def __init__(
        self,
        host: AsyncCopilotHost,
        endpoint: CopilotEndpoint,
        *,
        initial_session: CopilotSession | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        from ._auth import CopilotAuth
        from ._resolver import AsyncSessionResolver

        self._bind(host.provider_id, endpoint)
        self.host = host
        self.resolver: AsyncSessionResolver = AsyncSessionResolver(
            host, endpoint, clock=clock, initial=initial_session
        )
        self.auth = CopilotAuth(self.resolver, endpoint, host.request_headers())

    async def register_models(self, catalog: Catalog) -> RegistrationResult:
        """The asyncio twin of :meth:`CopilotProvider.register_models`."""
        session = await self.resolver.get()
        return self._swap(catalog, session, await self.host.inventory(session))
