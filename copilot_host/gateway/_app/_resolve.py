"""Stage: resolve. The route that serves a request, from the model name it gives.

The name is read by the rules of :mod:`._names` (model and route ids, aliases, the names
coding agents send, a default model) against the routes the gateway holds for the current
login (:mod:`._registry`): a name over :data:`._names.MAX_MODEL_NAME` characters is 400
before any rule runs, a name no rule finds is 404 (with the closest models), and a model
that does not list the endpoint called is 400.

A name that finds Copilot Auto's route (``auto``, or a name an alias or the default model
sends there) is served by a concrete model: the one of the account's Auto session that
speaks the endpoint called (``route.auth.auto_pick``: the session is obtained first when
none serves, one exchange however many requests wait for it). The request then goes on as
that model's, its body naming it, with the session's ``Copilot-Session-Token``; the access
line reads ``auto->MODEL``.
"""

from __future__ import annotations

from dataclasses import replace

import copilot_host as ch
from copilot_host._internal import clean

from .._protocols import Api, endpoints_of
from ._access import Refusal
from ._flow import Flow
from ._intake import Parsed
from ._names import MAX_MODEL_NAME, NotFound, Served
from ._registry import Registry

__all__ = ["name_too_long", "resolve", "shown", "unknown_model"]


def shown(text: str, limit: int = 120) -> str:
    """A path or model name as the access line shows it: inert for a terminal, bounded."""
    if len(text) <= limit and text.isascii() and text.isprintable() and " " not in text:
        # The usual case, without the character-by-character pass: clean() would return
        # such a text as it is (an empty one as "-", below).
        return text or "-"
    return clean(text, limit=limit) or "-"


def name_too_long() -> Refusal:
    return Refusal(
        400,
        "invalid_request",
        f"copilot-host gateway: the model name is longer than {MAX_MODEL_NAME} characters; "
        "GET /v1/models lists the names this account can use",
    )


def unknown_model(name: str) -> Refusal:
    return Refusal(
        404,
        "model_not_found",
        f"copilot-host gateway: the model {clean(name, limit=100)!r} is not one this "
        "account can use (GET /v1/models lists them)",
    )


def _wrong_endpoint(route: ch.ModelRoute, path: str) -> Refusal:
    served = " and ".join(endpoints_of(route))
    return Refusal(
        400,
        "unsupported_api_for_model",
        f"copilot-host gateway: the model {route.model_id!r} is not served on {path}; "
        f"call it on {served} (the gateway does not translate between APIs)",
    )


async def resolve(
    flow: Flow, registry: Registry, parsed: Parsed, api: Api
) -> tuple[Served, ch.LoginIdentity] | Refusal:
    """What serves the request ``parsed`` on ``api``'s endpoint (Copilot Auto's pick made
    concrete), and the login it was registered for; the refusal otherwise. Fills the
    flow's ``asked``, ``via`` and ``model``."""
    name = parsed.name
    if len(name) > MAX_MODEL_NAME:
        flow.asked = flow.model = shown(name[:65], 64)
        return name_too_long()
    snapshot = await registry.current()
    found = snapshot.names.resolve(name, api.protocol)
    flow.asked = shown(name, 64)
    if isinstance(found, NotFound):
        flow.model = flow.asked
        return Refusal(found.status, found.code, found.message)
    route = found.route
    flow.model = route.model_id
    flow.route = route
    if not isinstance(found, Served):
        return _wrong_endpoint(route, flow.path)
    auth = route.auth
    if isinstance(auth, ch.CopilotAuth) and auth.serves_auto:
        flow.via = route.model_id
        found = await _concrete(found, auth, parsed, api, snapshot.identity)
        flow.route = found.route
        flow.model = found.route.model_id
    return found, snapshot.identity


async def _concrete(
    found: Served, auth: ch.CopilotAuth, parsed: Parsed, api: Api, identity: ch.LoginIdentity
) -> Served:
    """Auto's route as the concrete model it picked for this request: that model's id,
    spec (its price less the session's discount), endpoint and path, and Auto's auth,
    which sends the picked session's header (``route.auth.for_request(..., pick)``)."""
    route = found.route
    pick = await auth.auto_pick(api.protocol, parsed.value, facts=parsed.facts, identity=identity)
    concrete = replace(
        route,
        route_id=f"{route.owner}/{pick.model_id}",
        model_id=pick.model_id,
        protocol=api.protocol,
        url=route.origin + api.protocol.path,
        spec=pick.model,
    )
    return Served(concrete, found.rule, via=route.model_id, pick=pick)
