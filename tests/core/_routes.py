"""Route factories for catalog tests (no credentials, no network)."""

from __future__ import annotations

import httpx2

from copilot_host import ApiProtocol, ModelRoute, ModelSpec

_AUTH = httpx2.Auth()


def make_route(route_id: str, *, origin: str = "https://api.githubcopilot.com") -> ModelRoute:
    model_id = route_id.rsplit("/", 1)[-1]
    spec = ModelSpec(model_id=model_id, display_name=model_id, protocol=ApiProtocol.OPENAI_CHAT)
    return ModelRoute(
        route_id=route_id,
        model_id=model_id,
        protocol=spec.protocol,
        origin=origin,
        url=origin + spec.protocol.path,
        auth=_AUTH,
        spec=spec,
    )


def make_routes(prefix: str, count: int, generation: int = 0) -> list[ModelRoute]:
    return [make_route(f"{prefix}/m{generation}-{i}") for i in range(count)]
