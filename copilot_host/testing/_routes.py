"""The emulator's routing table: (method, host, path) -> the endpoint and its handler.

Adding an endpoint is one row here and its handler, a function ``(state, request) ->
Answer`` in the module of its concern (docs/EMULATOR.md, "Adding an endpoint", walks through
one). The endpoint names are what ``Scenario``'s per-endpoint settings take (``ENDPOINTS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._origin import default_allowlist
from ._accounts import access_token, copilot_token, copilot_user, device_code, user
from ._auto import auto_pool, auto_route
from ._catalog import models
from ._embeddings import embeddings
from ._inference import answer_model, count_tokens
from ._protocols import PROTOCOL_PATHS
from ._state import Handler

__all__ = [
    "API_HOST",
    "COPILOT",
    "COPILOT_HOSTS",
    "ENDPOINTS",
    "GITHUB_HOST",
    "ROUTED_HOSTS",
    "ROUTES",
    "Route",
    "route_of",
]

GITHUB_HOST = "github.com"
API_HOST = "api.github.com"
# Every Copilot API host the library's allowlist names answers the same paths.
COPILOT_HOSTS = frozenset(origin.partition("://")[2] for origin in default_allowlist().origins)
ROUTED_HOSTS = frozenset({GITHUB_HOST, API_HOST, *COPILOT_HOSTS})
# The host column's value for "any Copilot API host".
COPILOT = "copilot"

# What an ``oversized`` fault sends: past the 64 KiB a client may read of a GitHub answer,
# and past the 8 MiB it may read of ``/models`` (the adapter's caps, plus 4 KiB).
_OVER = 64 * 1024 + 4096
_OVER_LARGE = 8 * 1024 * 1024 + 4096


@dataclass(frozen=True, slots=True)
class Route:
    """One row: a request ``method`` and ``path`` on ``host`` (a host name, or ``COPILOT``)
    is the endpoint named ``endpoint``, answered by ``handler``; an ``oversized`` fault on
    it sends ``oversize`` bytes."""

    method: str
    host: str
    path: str
    endpoint: str
    handler: Handler
    oversize: int = _OVER


ROUTES: tuple[Route, ...] = (
    Route("POST", GITHUB_HOST, "/login/device/code", "device_code", device_code),
    Route("POST", GITHUB_HOST, "/login/oauth/access_token", "access_token", access_token),
    Route("GET", API_HOST, "/copilot_internal/v2/token", "copilot_token", copilot_token),
    Route("GET", API_HOST, "/user", "user", user),
    Route("GET", API_HOST, "/copilot_internal/user", "copilot_user", copilot_user),
    Route("GET", COPILOT, "/models", "models", models, oversize=_OVER_LARGE),
    # Copilot Auto's session calls: the pool a client picks from, the model chosen for it.
    Route("POST", COPILOT, "/models/session", "auto_session", auto_pool),
    Route("POST", COPILOT, "/auto", "auto", auto_route),
    *(
        Route("POST", COPILOT, path, protocol, answer_model(protocol))
        for protocol, path in PROTOCOL_PATHS.items()
    ),
    Route("POST", COPILOT, "/embeddings", "embeddings", embeddings),
    # Not served by Copilot (a 404 from its router) though Anthropic's clients call it.
    Route("POST", COPILOT, "/v1/messages/count_tokens", "count_tokens", count_tokens),
)

ENDPOINTS = frozenset(route.endpoint for route in ROUTES)

_TABLE = {
    (route.method, host, route.path): route
    for route in ROUTES
    for host in (COPILOT_HOSTS if route.host == COPILOT else (route.host,))
}


def route_of(method: str, host: str, path: str) -> Route | None:
    """The row that answers this request, or None (a 404 in the host's own words)."""
    return _TABLE.get((method, host, path))
