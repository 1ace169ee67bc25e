"""``register_models``: the one call an embedding application makes.

availability -> a session from a new resolver (its first exchange) -> the host's inventory
-> (a host that serves Copilot Auto: its bounded probe) -> validation -> every eligible
route added under the host's owner key in one swap. The resolver and one
:class:`CopilotAuth` live on in the routes (and, with Auto's route, a second one that picks
Auto's model per request); nothing else is built.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import cast

from .._api import ApiProtocol
from .._clock import SYSTEM_CLOCK, Clock
from .._errors import NoEligibleModelsError
from .._hosts import AsyncCopilotHost, CopilotHost, CopilotSession
from .._sessions._auth import CopilotAuth
from .._sessions._auto import AutoChooser, AutoProbe, ServesAuto
from .._sessions._pipeline import SwitchesIdentity
from .._sessions._policy import DEFAULT_POLICY, RefreshPolicy
from .._sessions._resolver import AsyncSessionResolver, SessionResolver
from ._auto import auto_only_skipped, auto_spec
from ._catalog import Catalog
from ._specs import Inventory, ModelRoute, ModelSpec, SkippedModel
from ._validate import validate_inventory

__all__ = ["RegistrationResult", "aregister_models", "register_models"]

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


def register_models(
    catalog: Catalog,
    host: CopilotHost,
    *,
    offline: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    policy: RefreshPolicy = DEFAULT_POLICY,
    embeddings: bool = False,
) -> RegistrationResult:
    """Register the account's Copilot models as routes in ``catalog``.

    Every route is added under ``host.provider_id`` in one atomic swap (replacing that
    owner's earlier routes). Any failure raises and leaves ``catalog`` as it was; entries
    that are not usable models are skipped and listed in the result. ``offline=True``
    makes no network call, changes nothing and returns no routes. ``policy`` is the
    refresh policy the routes' sessions follow. ``embeddings=True`` registers the
    embeddings models too (protocol ``ApiProtocol.OPENAI_EMBEDDINGS``); by default they
    are skipped as ``not_chat``, so a model picker built from the catalog stays chat-only.

    A host that serves Copilot Auto (:class:`copilot_host._sessions._auto.ServesAuto`, as
    the GitHub adapter does) is asked once, bounded, whether the account has Auto; if so
    the route ``<provider>/auto`` is added, whose ``route.auth`` sends each request to a
    model Auto picks. On a plan that can use only Auto, that is the one route: the named
    models are skipped with reason ``auto_only``.
    """
    if inspect.iscoroutinefunction(host.exchange):
        raise TypeError("this host is asynchronous: use `await aregister_models(...)`")
    provider_id = _provider_id(host)
    if offline:
        return RegistrationResult((), provider_id, None, offline=True)
    resolver = SessionResolver(host, clock=clock, policy=policy)
    session = resolver.get()
    found = host.inventory(session)
    probe = host.auto_probe(session) if isinstance(host, ServesAuto) else None
    return _swap(
        catalog, resolver, session, found, probe, clock=clock, policy=policy, embeddings=embeddings
    )


async def aregister_models(
    catalog: Catalog,
    host: AsyncCopilotHost,
    *,
    offline: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    policy: RefreshPolicy = DEFAULT_POLICY,
    embeddings: bool = False,
) -> RegistrationResult:
    """The asyncio twin of :func:`register_models`."""
    if not inspect.iscoroutinefunction(host.exchange):
        raise TypeError("this host is synchronous: use `register_models(...)`")
    provider_id = _provider_id(host)
    if offline:
        return RegistrationResult((), provider_id, None, offline=True)
    resolver = AsyncSessionResolver(host, clock=clock, policy=policy)
    session = await resolver.get()
    found = await host.inventory(session)
    probe: AutoProbe | None = None
    if isinstance(host, ServesAuto):
        # An asynchronous host's probe is a coroutine.
        probe = await cast("Awaitable[AutoProbe]", host.auto_probe(session))
    return _swap(
        catalog, resolver, session, found, probe, clock=clock, policy=policy, embeddings=embeddings
    )


def _provider_id(host: CopilotHost | AsyncCopilotHost) -> str:
    provider_id = host.provider_id
    if not isinstance(provider_id, str) or not _PROVIDER_ID.fullmatch(provider_id):
        raise ValueError("a provider id is 1-64 of lower-case letters, digits and . _ -")
    return provider_id


def _swap(
    catalog: Catalog,
    resolver: SessionResolver | AsyncSessionResolver,
    session: CopilotSession,
    found: Inventory | Sequence[ModelSpec],
    probe: AutoProbe | None,
    *,
    clock: Clock,
    policy: RefreshPolicy,
    embeddings: bool,
) -> RegistrationResult:
    """Validate, build the routes and swap them in under the resolver's host's provider id
    (checked already); the catalog changes only at the end."""
    host = resolver.host
    provider = host.provider_id
    inventory = validate_inventory(found, secrets=(session.token,))
    models, skipped = _asked(inventory, embeddings=embeddings)
    if not models:
        raise _no_models(skipped)
    headers = host.request_headers()
    origin = session.endpoint.origin
    urls = {protocol: origin + protocol.path for protocol in ApiProtocol}

    def route(spec: ModelSpec, auth: CopilotAuth) -> ModelRoute:
        return ModelRoute(
            route_id=f"{provider}/{spec.model_id}",
            model_id=spec.model_id,
            protocol=spec.protocol,
            origin=origin,
            url=urls[spec.protocol],
            auth=auth,
            spec=spec,
            owner=provider,
        )

    # Auto picks among the chat models only.
    chat = tuple(spec for spec in models if spec.protocol.chat)
    auto = auto_spec(chat, probe) if probe is not None and probe.offered else None
    named = tuple(models)
    if auto is not None and auto.auto is not None and auto.auto.only:
        named = ()
        skipped += auto_only_skipped(models, provider)
    routes: tuple[ModelRoute, ...] = ()
    if named:
        auth = CopilotAuth(
            resolver,
            session.endpoint,
            headers,
            switcher=host if isinstance(host, SwitchesIdentity) else None,
            listed=[spec.model_id for spec in named],
        )
        routes = tuple(route(spec, auth) for spec in named)
    if auto is not None:
        assert probe is not None
        chooser = AutoChooser(
            host,  # type: ignore[arg-type]  # a ServesAuto: the probe came from it
            chat,
            clock=clock,
            max_wait=policy.max_wait,
            seed=probe.session,
        )
        # After the inventory's models, in whose order the named routes stay.
        routes += (route(auto, CopilotAuth(resolver, session.endpoint, headers, auto=chooser)),)
    catalog.replace_provider(provider, routes)
    return RegistrationResult(routes, provider, origin, skipped=skipped)


def _asked(
    inventory: Inventory, *, embeddings: bool
) -> tuple[Sequence[ModelSpec], tuple[SkippedModel, ...]]:
    """The models to register and the entries skipped: embeddings models only when asked
    for, else skipped as ``not_chat`` (as they were before they could be registered)."""
    models, skipped = inventory.models, tuple(inventory.skipped)
    if embeddings or all(spec.protocol.chat for spec in models):
        return models, skipped
    unasked = tuple(
        SkippedModel(
            spec.model_id,
            "not_chat",
            "an embeddings model, not a chat model (registered with embeddings=True)",
            spec.display_name,
        )
        for spec in models
        if not spec.protocol.chat
    )
    return [spec for spec in models if spec.protocol.chat], (*unasked, *skipped)


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
