"""Copilot Auto through the GitHub adapter and ``github-copilot/auto``'s ``route.auth``,
over real loopback sockets to the emulator: the pool call, the routing call only once the
pool call is refused, the body's model and length rewritten, ``Copilot-Session-Token`` sent,
and what registration makes of each answer."""

from __future__ import annotations

import asyncio
import json
import time

import anthropic
import httpx2
import openai
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    Auto,
    Faults,
    GitHubEmulator,
    Inventory,
    Scenario,
    Usage,
    chat_model,
    minimal_models,
)
from tests._clock import FakeClock

AUTO = "github-copilot/auto"
FREE = Usage(usage_plan="free")
MODEL_REQUESTS = ("chat", "responses", "messages")


def registered(
    emu: GitHubEmulator, store: CredentialStore, clock: FakeClock | None = None
) -> tuple[GitHubCopilotHost, ch.Catalog, ch.RegistrationResult]:
    extra = {} if clock is None else {"clock": clock}
    host = GitHubCopilotHost(store=store, transport=emu.transport(), **extra)  # type: ignore[arg-type]
    host.login(sleep=lambda _s: None)
    catalog = ch.Catalog()
    result = ch.register_models(catalog, host, **extra)  # type: ignore[arg-type]
    return host, catalog, result


def sdk(route: ch.ModelRoute, emu: GitHubEmulator) -> openai.OpenAI:
    http = httpx2.Client(auth=route.auth, transport=emu.transport())
    return openai.OpenAI(base_url=route.origin, api_key="unused", http_client=http)


def hello(client: openai.OpenAI, text: str = "Hello") -> str:
    answer = client.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": text}]
    )
    return answer.model


def test_a_free_plan_registers_auto_alone_and_answers_through_it(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(usage=FREE)) as emu:
        host, catalog, result = registered(emu, store)
        with host:
            assert set(catalog.routes()) == {AUTO}
            skipped = {(s.model_id, s.reason) for s in result.skipped if s.reason == "auto_only"}
            assert ("gpt-4.1", "auto_only") in skipped
            assert "github-copilot/auto" in result.skipped[-1].message
            route = catalog.routes()[AUTO]
            assert route.spec.auto is not None and route.spec.auto.only
            client = sdk(route, emu)
            # The application sees the concrete model in the answer.
            assert hello(client) == "gpt-5-mini"
            reply = client.responses.create(model="auto", input="hi there")
            assert (reply.model, reply.output_text) == ("gpt-5-mini", "echo: hi there")
            claude = anthropic.Anthropic(
                base_url=route.origin,
                auth_token="unused",
                http_client=httpx2.Client(auth=route.auth, transport=emu.transport()),
            )
            message = claude.messages.create(
                model="auto", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
            )
            assert message.model == "claude-opus-4.6"  # the pool's first Messages model
            client.close()
            claude.close()
        sent = [r for r in emu.requests if r.endpoint in MODEL_REQUESTS]
        (pool,) = emu.requests_to("auto_session")
        assert len(emu.auto_session_tokens) == 1
    assert [r.model for r in sent] == ["gpt-5-mini", "gpt-5-mini", "claude-opus-4.6"]
    tokens = {r.headers["copilot-session-token"] for r in sent}
    assert tokens == set(emu.auto_session_tokens)  # the one session registration read
    for record in sent:
        # The body names the pick, and its length is the rewritten body's.
        assert json.loads(record.body)["model"] == record.model
        assert int(record.headers["content-length"]) == len(record.body)
    assert json.loads(pool.body) == {"auto_mode": {"model_hints": ["auto"]}}
    assert emu.refusals == ()


def test_a_paid_plan_registers_auto_beside_its_models(store: CredentialStore) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()),
        auto=Auto(pool=("gpt-4.1", "claude-messages-only"), discounts={"gpt-4.1": 0.2}),
    )
    with GitHubEmulator(scenario) as emu:
        host, catalog, result = registered(emu, store)
        host.close()
    routes = catalog.routes()
    assert AUTO in routes and "github-copilot/gpt-4.1" in routes
    assert result.routes[-1].route_id == AUTO  # after the inventory's, in its order
    auto = routes[AUTO]
    pool = auto.spec.auto
    assert pool is not None
    assert (pool.models, pool.discounts, pool.only, pool.known) == (
        ("gpt-4.1", "claude-messages-only"),
        (("gpt-4.1", 0.2),),
        False,
        True,
    )
    assert pool.discount("gpt-4.1") == 0.2 and pool.discount("claude-messages-only") == 0.0
    # Its protocol is the preferred one its pool speaks; its limits the pool's smallest.
    assert auto.protocol is ch.ApiProtocol.OPENAI_CHAT
    assert auto.spec.protocols == {ch.ApiProtocol.OPENAI_CHAT, ch.ApiProtocol.ANTHROPIC_MESSAGES}
    listed = {m.model_id: m for m in pool.inventory}
    assert auto.spec.max_output_tokens == min(
        listed[m].max_output_tokens or 10**9 for m in pool.models
    )
    assert auto.url == auto.origin + "/chat/completions"


def test_when_the_pool_call_is_refused_the_routing_call_serves_with_the_prompt(
    store: CredentialStore,
) -> None:
    scenario = Scenario(usage=FREE, auto=Auto(gated=frozenset({"pool"})))
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            route = catalog.routes()[AUTO]
            assert route.spec.auto is not None
            # Registration's pool call was refused: the plan needs Auto, its pool is unknown.
            assert (route.spec.auto.known, route.spec.auto.models) == (False, ())
            client = sdk(route, emu)
            assert hello(client, "which model?") == "gpt-5-mini"
            assert hello(client, "again") == "gpt-5-mini"
            client.close()
        routing = emu.requests_to("auto")
        pool_calls = emu.requests_to("auto_session")
        sent = emu.requests_to("chat")
    # The pool call is not asked again once it was refused; one routing call served both
    # requests, carrying the first one's last user text.
    assert [r.status for r in pool_calls] == [404]
    assert len(routing) == 1 and json.loads(routing[0].body) == {"prompt": "which model?"}
    assert {r.headers["copilot-session-token"] for r in sent} == set(emu.auto_session_tokens)


def test_when_both_calls_are_refused_requests_fail_plainly(store: CredentialStore) -> None:
    scenario = Scenario(usage=FREE, auto=Auto(gated=frozenset({"pool", "route"})))
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            client = sdk(catalog.routes()[AUTO], emu)
            with pytest.raises(ch.EntitlementError) as refused:
                hello(client)
            client.close()
        sent = emu.requests_to("chat")
    assert refused.value.code == "auto_unavailable"
    assert "/models/session and /auto both answered HTTP 404" in refused.value.message
    assert sent == ()  # nothing reached a model


def test_a_paid_plan_whose_pool_call_is_refused_registers_no_auto(store: CredentialStore) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()), auto=Auto(gated=frozenset({"pool"}))
    )
    with GitHubEmulator(scenario) as emu:
        host, catalog, result = registered(emu, store)
        host.close()
    assert AUTO not in catalog.routes() and "github-copilot/gpt-4.1" in catalog.routes()
    assert all(s.reason != "auto_only" for s in result.skipped)


@pytest.mark.slow
@pytest.mark.parametrize(("usage", "offered"), [(FREE, True), (Usage(), False)])
def test_registration_waits_for_auto_two_seconds_at_most(
    store: CredentialStore, usage: Usage, offered: bool
) -> None:
    scenario = Scenario(
        usage=usage,
        inventory=Inventory(models=minimal_models()),
        faults=Faults(slow={"auto_session": 5.0}),
    )
    with GitHubEmulator(scenario) as emu:
        host = GitHubCopilotHost(store=store, transport=emu.transport())
        with host:
            host.login(sleep=lambda _s: None)
            catalog = ch.Catalog()
            began = time.monotonic()
            ch.register_models(catalog, host)
            took = time.monotonic() - began
    assert took < 4.0  # the pool call's 2 s, and the rest
    assert (AUTO in catalog.routes()) is offered
    if offered:
        pool = catalog.routes()[AUTO].spec.auto
        assert pool is not None and not pool.known and pool.only


def test_a_session_expiring_mid_run_is_replaced_before_use(
    store: CredentialStore, clock: FakeClock
) -> None:
    scenario = Scenario(usage=FREE, auto=Auto(pool_lifetime=900))
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store, clock)
        with host:
            client = sdk(catalog.routes()[AUTO], emu)
            hello(client, "one")
            clock.advance(900 - 300 - 1)
            hello(client, "two")
            clock.advance(1)  # five minutes from its expiry: replaced before it is used
            hello(client, "three")
            client.close()
        sent = emu.requests_to("chat")
        issued = emu.auto_session_tokens
    assert len(issued) == 2 and len(emu.requests_to("auto_session")) == 2
    assert [r.headers["copilot-session-token"] for r in sent] == [issued[0], issued[0], issued[1]]
    assert all(r.status == 200 for r in sent)


def test_an_async_host_and_a_blocking_hosts_route_in_an_async_client(
    store: CredentialStore,
) -> None:
    async def with_async_host(emu: GitHubEmulator) -> tuple[str, str]:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host)
            route = catalog.routes()[AUTO]
            async with httpx2.AsyncClient(auth=route.auth, transport=emu.async_transport()) as http:
                client = openai.AsyncOpenAI(base_url=route.origin, api_key="x", http_client=http)
                reply = await client.responses.create(model="auto", input="hi")
                message = await http.post(
                    route.origin + "/v1/messages",
                    json={
                        "model": "auto",
                        "max_tokens": 8,
                        "messages": [{"role": "user", "content": "x"}],
                    },
                )
        return reply.model, message.json()["model"]

    async def with_blocking_host(route: ch.ModelRoute, emu: GitHubEmulator) -> str:
        async with httpx2.AsyncClient(auth=route.auth, transport=emu.async_transport()) as http:
            client = openai.AsyncOpenAI(base_url=route.origin, api_key="x", http_client=http)
            answer = await client.chat.completions.create(
                model="auto", messages=[{"role": "user", "content": "hi"}]
            )
        return answer.model

    with GitHubEmulator(Scenario(usage=FREE)) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            assert asyncio.run(with_blocking_host(catalog.routes()[AUTO], emu)) == "gpt-5-mini"
        assert asyncio.run(with_async_host(emu)) == ("gpt-5-mini", "claude-opus-4.6")
        assert emu.refusals == ()


def test_a_session_token_never_leaves_the_process_in_a_repr_or_an_error(
    store: CredentialStore,
) -> None:
    scenario = Scenario(inventory=Inventory(models=(chat_model("gpt-4.1"),)))
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            route = catalog.routes()[AUTO]
            client = sdk(route, emu)
            # A session token the client sets itself is never sent: the session's is.
            client.chat.completions.create(
                model="auto",
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"Copilot-Session-Token": "ast_forged"},
            )
            client.close()
        (token,) = emu.auto_session_tokens
        (sent,) = emu.requests_to("chat")
    assert sent.headers["copilot-session-token"] == token
    assert token not in repr(route) and token not in repr(route.auth)
    assert ch.mask_secrets(f"echo {token}") != f"echo {token}"
