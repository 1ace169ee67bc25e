from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

import copilot_host as ch
from tests._clock import FakeClock
from tests.core._hosts import AsyncMemoryHost, MemoryHost, spec
from tests.core._routes import make_route


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
    ["logged_out", "exchange", "inventory", "invalid_model", "collision", "origin"],
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
    elif breakage == "origin":
        host.origin = "https://127.0.0.1"  # well-formed, but a provider never re-points
        expected = ch.CopilotHostError
    with pytest.raises(expected):
        if breakage == "origin":
            provider = ch.CopilotProvider(
                host, ch.CopilotEndpoint.parse("https://api.githubcopilot.com"), clock=host.clock
            )
            provider.register_models(catalog)
        else:
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


def test_providers_are_context_managers_that_drop_their_session() -> None:
    host = MemoryHost()
    endpoint = ch.CopilotEndpoint.parse(host.origin)
    catalog = ch.Catalog()
    with ch.CopilotProvider(host, endpoint, clock=host.clock) as provider:
        (route,) = provider.register_models(catalog).routes
        assert provider.resolver.peek() is not None
    assert provider.resolver.peek() is None  # the token left memory with the block
    assert catalog.get(route.route_id) is route  # the routes stay; they exchange again

    async def main() -> None:
        async_host = AsyncMemoryHost(MemoryHost(clock=FakeClock()))
        async with ch.AsyncCopilotProvider(async_host, endpoint, clock=async_host.inner.clock) as p:
            await p.register_models(ch.Catalog())
            assert p.resolver.peek() is not None
        assert p.resolver.peek() is None

    asyncio.run(main())
