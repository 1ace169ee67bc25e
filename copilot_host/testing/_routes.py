"""The emulator's routing table: (method, host, path) -> the endpoint that answers.

Adding an endpoint is one row here and one handler, the state's ``_<endpoint>`` method (a
model protocol's row names its protocol instead and shares the model-request handler). The
endpoint names are what ``Scenario``'s per-endpoint knobs take (``ENDPOINTS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._origin import default_allowlist
from ._protocols import PROTOCOL_PATHS
from ._rules import UNSERVED_PATHS

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


@dataclass(frozen=True, slots=True)
class Route:
    """One row: a request ``method`` and ``path`` on ``host`` (a host name, or ``COPILOT``),
    answered by ``endpoint``; ``protocol`` names the model protocol a model path speaks."""

    method: str
    host: str
    path: str
    endpoint: str
    protocol: str | None = None


ROUTES: tuple[Route, ...] = (
    Route("POST", GITHUB_HOST, "/login/device/code", "device_code"),
    Route("POST", GITHUB_HOST, "/login/oauth/access_token", "access_token"),
    Route("GET", API_HOST, "/copilot_internal/v2/token", "copilot_token"),
    Route("GET", API_HOST, "/user", "user"),
    Route("GET", API_HOST, "/copilot_internal/user", "copilot_user"),
    Route("GET", COPILOT, "/models", "models"),
    *(Route("POST", COPILOT, path, name, name) for name, path in PROTOCOL_PATHS.items()),
    *(Route(method, COPILOT, path, name) for (method, path), name in UNSERVED_PATHS.items()),
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
