"""The routing table: one row per endpoint, each naming the handler that answers it, the
endpoint names Scenario's settings take derived from it."""

from __future__ import annotations

import httpx2
import pytest

from copilot_host.testing import ENDPOINTS, GitHubEmulator, Scenario
from copilot_host.testing._routes import COPILOT, COPILOT_HOSTS, ROUTES, Route, route_of


def test_the_endpoint_names_are_the_tables() -> None:
    assert {route.endpoint for route in ROUTES} == ENDPOINTS
    assert len({route.endpoint for route in ROUTES}) == len(ROUTES)


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.endpoint)
def test_every_row_names_its_own_handler_and_is_found_on_its_hosts(route: Route) -> None:
    assert callable(route.handler)
    others = [other.handler for other in ROUTES if other is not route]
    assert route.handler not in others
    hosts = COPILOT_HOSTS if route.host == COPILOT else {route.host}
    for host in hosts:
        assert route_of(route.method, host, route.path) == route
    assert route_of("DELETE", next(iter(hosts)), route.path) is None


def test_each_endpoint_is_routed_to_its_own_answer() -> None:
    # The record of each request names the row it reached, in the order they were sent.
    scenario = Scenario(lenient=True)
    with GitHubEmulator(scenario) as emu, httpx2.Client(transport=emu.transport()) as client:
        for route in ROUTES:
            host = "api.individual.githubcopilot.com" if route.host == COPILOT else route.host
            client.request(route.method, f"https://{host}{route.path}")
        seen = [record.endpoint for record in emu.requests]
    assert seen == [route.endpoint for route in ROUTES]
