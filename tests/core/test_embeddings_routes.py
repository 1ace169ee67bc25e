"""Embeddings models in the library: registered only when asked, never a chat route's
protocol, and ``route.auth`` reads no turn from their bodies."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

import copilot_host as ch
from copilot_host._sessions._inspect import NOT_A_TURN, facts_of_body, request_facts
from tests.core._hosts import AsyncMemoryHost, MemoryHost, spec

EMBEDDINGS = ch.ApiProtocol.OPENAI_EMBEDDINGS
ORIGIN = "https://api.individual.githubcopilot.com"


def _embeddings(model_id: str = "text-embedding-3-small") -> ch.ModelSpec:
    return ch.ModelSpec(
        model_id=model_id,
        display_name="Embedding V3 small",
        protocol=EMBEDDINGS,
        max_inputs=512,
        dimensions=True,
    )


def _host() -> MemoryHost:
    return MemoryHost(models=[spec("gpt-4.1"), _embeddings()], origin=ORIGIN)


def test_the_embeddings_protocol_is_never_a_chat_preference() -> None:
    assert EMBEDDINGS.path == "/embeddings"
    assert not EMBEDDINGS.chat
    assert all(p.chat for p in ch.ApiProtocol if p is not EMBEDDINGS)
    assert ch.ApiProtocol.preferred(frozenset({EMBEDDINGS})) is None
    assert ch.ApiProtocol.preferred(frozenset(ch.ApiProtocol)) is ch.ApiProtocol.OPENAI_RESPONSES
    assert ch.ApiProtocol.of_path("/embeddings") is EMBEDDINGS


def test_a_default_registration_is_chat_only_and_skips_embeddings_as_before() -> None:
    catalog = ch.Catalog()
    result = ch.register_models(catalog, _host(), clock=_host().clock)
    assert set(catalog.routes()) == {"github-copilot/gpt-4.1"}
    assert [(s.model_id, s.reason) for s in result.skipped] == [
        ("text-embedding-3-small", "not_chat")
    ]
    assert "embeddings=True" in result.skipped[0].message


def test_with_embeddings_the_catalog_holds_their_routes() -> None:
    catalog = ch.Catalog()
    host = _host()
    result = ch.register_models(catalog, host, clock=host.clock, embeddings=True)
    assert result.skipped == ()
    route = catalog.routes()["github-copilot/text-embedding-3-small"]
    assert route.protocol is EMBEDDINGS
    assert route.url == ORIGIN + "/embeddings"
    assert route.spec.protocols == {EMBEDDINGS}
    assert (route.spec.max_inputs, route.spec.dimensions) == (512, True)
    # One auth serves every route of the registration.
    assert route.auth is catalog.routes()["github-copilot/gpt-4.1"].auth


def test_the_async_registration_takes_embeddings_too() -> None:
    host = AsyncMemoryHost(MemoryHost(models=[_embeddings()]))
    clock = host.inner.clock
    catalog = ch.Catalog()
    with pytest.raises(ch.NoEligibleModelsError):
        asyncio.run(ch.aregister_models(catalog, host, clock=clock))
    result = asyncio.run(ch.aregister_models(catalog, host, clock=clock, embeddings=True))
    assert [route.protocol for route in result.routes] == [EMBEDDINGS]


def test_validation_keeps_chat_and_embeddings_protocols_apart() -> None:
    """A host that mixes them gets each spec's own kind only: the embeddings path is never
    among a chat route's protocols, nor a chat path among an embeddings route's."""
    mixed_chat = ch.ModelSpec(
        "gpt-4.1", "GPT", ch.ApiProtocol.OPENAI_CHAT, protocols=frozenset(ch.ApiProtocol)
    )
    mixed_embeddings = ch.ModelSpec(
        "emb", "E", EMBEDDINGS, protocols=frozenset({EMBEDDINGS, ch.ApiProtocol.OPENAI_CHAT})
    )
    host = MemoryHost(models=[mixed_chat, mixed_embeddings])
    result = ch.register_models(ch.Catalog(), host, clock=host.clock, embeddings=True)
    by_id = {route.model_id: route for route in result.routes}
    assert EMBEDDINGS not in by_id["gpt-4.1"].spec.protocols
    assert len(by_id["gpt-4.1"].spec.protocols) == 3
    assert by_id["emb"].spec.protocols == {EMBEDDINGS}


@pytest.mark.parametrize("value", [-1, 0, True, 1.5, "512", 10**12])
def test_an_odd_max_inputs_is_dropped_not_fatal(value: object) -> None:
    odd = ch.ModelSpec("emb", "E", EMBEDDINGS, max_inputs=value)  # type: ignore[arg-type]
    host = MemoryHost(models=[odd])
    (route,) = ch.register_models(ch.Catalog(), host, clock=host.clock, embeddings=True).routes
    assert route.spec.max_inputs is None


def test_an_embeddings_body_is_no_turn() -> None:
    """VS Code sends its CAPI embeddings request without X-Initiator or a vision header:
    the facts carry the model only."""
    body = json.dumps({"model": "emb", "input": ["look at image_url"]}).encode()
    facts = facts_of_body(EMBEDDINGS, body)
    assert (facts.vision, facts.initiator, facts.model) == (False, None, "emb")
    assert request_facts(EMBEDDINGS, json.loads(body)).initiator is None
    for unread in (b"", b"not json", b"[1]"):
        assert facts_of_body(EMBEDDINGS, unread) == NOT_A_TURN


def test_route_auth_sends_no_initiator_on_the_embeddings_path() -> None:
    host = _host()
    result = ch.register_models(ch.Catalog(), host, clock=host.clock, embeddings=True)
    route = next(r for r in result.routes if r.protocol is EMBEDDINGS)
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"data": []})

    with httpx2.Client(auth=route.auth, transport=httpx2.MockTransport(answer)) as client:
        client.post(route.url, json={"model": route.model_id, "input": ["hello"]})
        client.post(
            route.url,
            json={"model": route.model_id, "input": ["x"]},
            headers={"X-Initiator": "agent"},
        )
    assert [r.headers.get("x-initiator") for r in seen] == [None, "agent"]
    assert all(r.headers["authorization"].startswith("Bearer tid=") for r in seen)
    assert all("copilot-vision-request" not in r.headers for r in seen)
