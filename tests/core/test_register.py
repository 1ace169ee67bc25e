from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import httpx2
import pytest

import copilot_host as ch
from tests._clock import FakeClock
from tests.core._hosts import AsyncMemoryHost, MemoryHost, spec
from tests.core._routes import make_route


def _answering_200(seen: list[httpx2.Request]) -> Callable[[httpx2.Request], httpx2.Response]:
    """A MockTransport handler that records each request and answers 200."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200)

    return handle


def test_register_adds_routes_with_explicit_protocols() -> None:
    catalog = ch.Catalog()
    host = MemoryHost(
        models=[spec("gpt-4o"), spec("o3-mini", ch.ApiProtocol.OPENAI_RESPONSES)],
        origin="https://api.individual.githubcopilot.com",
    )
    result = ch.register_models(catalog, host, clock=host.clock)
    assert isinstance(result.routes, tuple)
    assert result.provider_id == "github-copilot"
    assert result.origin == "https://api.individual.githubcopilot.com"
    by_id = {r.route_id: r for r in result.routes}
    chat = by_id["github-copilot/gpt-4o"]
    resp = by_id["github-copilot/o3-mini"]
    assert chat.model_id == "gpt-4o"
    assert chat.protocol is ch.ApiProtocol.OPENAI_CHAT
    assert chat.url == "https://api.individual.githubcopilot.com/chat/completions"
    assert resp.url == "https://api.individual.githubcopilot.com/responses"
    assert chat.origin == resp.origin == "https://api.individual.githubcopilot.com"
    assert chat.spec.model_id == "gpt-4o"
    assert dict(catalog.routes()) == by_id
    assert all(catalog.owner_of(rid) == "github-copilot" for rid in by_id)
    assert host.exchanges == 1  # the first exchange's session is reused for discovery


def test_re_registration_replaces_the_provider_routes_in_one_swap() -> None:
    catalog = ch.Catalog()
    catalog.add_routes([make_route("mine/x")])
    host = MemoryHost(models=[spec("a"), spec("b")])
    ch.register_models(catalog, host, clock=host.clock)
    host.models = [spec("b"), spec("c")]
    ch.register_models(catalog, host, clock=host.clock)
    assert set(catalog.routes()) == {"mine/x", "github-copilot/b", "github-copilot/c"}


@pytest.mark.parametrize(
    "breakage",
    ["logged_out", "exchange", "inventory", "invalid_model", "collision", "secret"],
)
def test_a_failed_registration_leaves_the_catalog_exactly_as_it_was(breakage: str) -> None:
    catalog = ch.Catalog()
    host = MemoryHost(models=[spec("a")])
    ch.register_models(catalog, host, clock=host.clock)
    catalog.add_routes([make_route("github-copilot/taken")])  # by hand: no owner
    before = catalog.routes()
    host.models = [spec("a"), spec("fresh")]
    expected: type[ch.CopilotHostError] = ch.CopilotHostError
    if breakage == "logged_out":
        host.identity = None
        expected = ch.NotLoggedInError
    elif breakage == "exchange":
        host.fail_exchange = ch.LoginRevokedError("log in again")
        expected = ch.LoginRevokedError
    elif breakage == "inventory":
        host.fail_inventory = ch.ResponseError("bad inventory")
        expected = ch.ResponseError
    elif breakage == "invalid_model":
        # Every entry is skipped, so nothing is eligible: that fails the registration whole.
        host.models = [spec("a/b"), replace(spec("x"), input_modalities=())]
        expected = ch.NoEligibleModelsError
    elif breakage == "collision":
        host.models = [spec("fresh"), spec("taken")]
        expected = ch.RouteCollisionError
    elif breakage == "secret":
        # The inventory echoes this registration's own session token in a name.
        host.echo_token_in_name = True
        expected = ch.ModelValidationError
    with pytest.raises(expected):
        ch.register_models(catalog, host, clock=host.clock)
    assert catalog.routes() is before


def test_offline_registration_touches_nothing() -> None:
    catalog = ch.Catalog()
    host = MemoryHost()
    before = catalog.routes()
    result = ch.register_models(catalog, host, offline=True)
    assert result.routes == ()
    assert result.offline is True
    assert host.exchanges == 0
    assert catalog.routes() is before


def test_route_auth_is_an_httpx2_auth_without_the_token() -> None:
    import httpx2

    catalog = ch.Catalog()
    host = MemoryHost()
    (route,) = ch.register_models(catalog, host, clock=host.clock).routes
    assert isinstance(route.auth, httpx2.Auth)
    token = host.issued[0].reveal()
    assert token not in repr(route)
    assert token not in repr(catalog.routes())
    assert token not in repr(vars(route.auth) if hasattr(route.auth, "__dict__") else route.auth)


def test_async_registration_matches_sync() -> None:
    async def main() -> ch.RegistrationResult:
        catalog = ch.Catalog()
        host = AsyncMemoryHost(MemoryHost(models=[spec("a"), spec("b")], clock=FakeClock()))
        result = await ch.aregister_models(catalog, host, clock=host.inner.clock)
        assert set(catalog.routes()) == {"github-copilot/a", "github-copilot/b"}
        offline = await ch.aregister_models(catalog, host, offline=True)
        assert offline.routes == ()
        return result

    result = asyncio.run(main())
    assert len(result.routes) == 2


def test_sync_and_async_entry_points_refuse_the_wrong_kind_of_host() -> None:
    with pytest.raises(TypeError):
        ch.register_models(ch.Catalog(), AsyncMemoryHost())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        asyncio.run(ch.aregister_models(ch.Catalog(), MemoryHost()))  # type: ignore[arg-type]


def test_a_registration_builds_one_auth_for_its_routes_and_the_skipped_are_reported() -> None:
    host = MemoryHost(models=[spec("a"), spec("b", ch.ApiProtocol.ANTHROPIC_MESSAGES), spec("c/d")])
    result = ch.register_models(ch.Catalog(), host, clock=host.clock)
    assert len({id(route.auth) for route in result.routes}) == 1
    assert [r.url for r in result.routes] == [
        "https://api.githubcopilot.com/chat/completions",
        "https://api.githubcopilot.com/v1/messages",
    ]
    assert [(s.model_id, s.reason) for s in result.skipped] == [("c/d", "invalid_id")]


def test_routes_refuse_a_session_that_moved_to_another_origin() -> None:
    """The account's inference host changed after registration: the routes say to register
    again instead of sending the new session to the old host (or the old URL to the new)."""
    import httpx2

    host = MemoryHost()
    (route,) = ch.register_models(ch.Catalog(), host, clock=host.clock).routes
    host.origin = "https://api.business.githubcopilot.com"
    route.auth._resolver.invalidate()  # type: ignore[attr-defined]
    sent: list[httpx2.Request] = []
    transport = httpx2.MockTransport(_answering_200(sent))
    with (
        httpx2.Client(auth=route.auth, transport=transport) as client,
        pytest.raises(ch.OriginError) as caught,
    ):
        client.post(route.url, json={})
    assert caught.value.code == "origin_mismatch"
    assert sent == []
