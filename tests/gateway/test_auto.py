"""The model name ``auto`` through the gateway: served on all three APIs by a concrete model
of the account's Copilot Auto session that speaks the API called (never a translation),
with ``Copilot-Session-Token``; listed by ``/v1/models``; one Auto exchange however many
requests need it; the access line says ``auto->MODEL``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import copilot_host as ch
from copilot_host.gateway import GatewayHooks
from copilot_host.testing import (
    Auto,
    GitHubEmulator,
    Inventory,
    Scenario,
    Usage,
    minimal_models,
    realistic_models,
)
from tests._clock import FakeClock
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

ANTHROPIC = {"anthropic-version": "2023-06-01"}
FREE = Usage(usage_plan="free")
# A pool whose first model has no /v1/messages: a Messages request must skip it.
POOL = Auto(pool=("gpt-4.1", "claude-opus-4.6", "gpt-5.5"), discounts={"gpt-4.1": 0.25})


def chat(model: str = "auto", text: str = "hi") -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def messages(model: str = "auto") -> dict[str, object]:
    return {**chat(model), "max_tokens": 64}


@contextmanager
def gateway_of(scenario: Scenario, tmp_path: Path, **options: object) -> Iterator[Gateway]:
    with GitHubEmulator(scenario) as emu, running_gateway(emu, tmp_path / "home", **options) as gw:  # type: ignore[arg-type]
        yield gw
        assert_no_leaks(gw)


def model_requests(gw: Gateway) -> list[tuple[str, str | None, bool]]:
    """(endpoint, model, carried a session token) of each model request upstream."""
    return [
        (r.endpoint, r.model, "copilot-session-token" in r.headers)
        for r in gw.emulator.requests
        if r.endpoint in ("chat", "responses", "messages")
    ]


def test_auto_is_served_on_every_api_by_a_model_that_speaks_it(tmp_path: Path) -> None:
    scenario = Scenario(usage=FREE, inventory=Inventory(models=realistic_models()), auto=POOL)
    with gateway_of(scenario, tmp_path) as gw:
        status, headers, answer = gw.post("/v1/chat/completions", chat())
        assert (status, answer["model"]) == (200, "gpt-4.1")
        assert headers["x-copilot-host-model"] == "gpt-4.1"
        status, _headers, answer = gw.post("/v1/messages", messages(), headers=ANTHROPIC)
        # Never a model without /v1/messages: the pool's first is skipped.
        assert (status, answer["model"]) == (200, "claude-opus-4.6")
        status, _headers, answer = gw.post("/v1/responses", {"model": "auto", "input": "x"})
        assert (status, answer["model"]) == (200, "gpt-5.5")
        # The Anthropic SDK and the OpenAI SDK alike.
        reply = gw.anthropic().messages.create(
            model="auto", max_tokens=32, messages=[{"role": "user", "content": "Hi"}]
        )
        assert reply.model == "claude-opus-4.6"
        sent = model_requests(gw)
        lines = [line.split()[2] for line in gw.access.lines if "POST" in line]
        issued = gw.emulator.auto_session_tokens
    assert sent == [
        ("chat", "gpt-4.1", True),
        ("messages", "claude-opus-4.6", True),
        ("responses", "gpt-5.5", True),
        ("messages", "claude-opus-4.6", True),
    ]
    assert lines == [
        "model=auto->gpt-4.1",
        "model=auto->claude-opus-4.6",
        "model=auto->gpt-5.5",
        "model=auto->claude-opus-4.6",
    ]
    assert len(issued) == 1  # registration's session served every request


def test_the_model_list_shows_auto_with_its_pools_smallest_limits(tmp_path: Path) -> None:
    scenario = Scenario(usage=FREE, inventory=Inventory(models=realistic_models()), auto=POOL)
    with gateway_of(scenario, tmp_path) as gw:
        listed = gw.get("/v1/models")[2]["data"]
        claude = gw.get("/v1/models", headers=ANTHROPIC)[2]["data"]
        one = gw.get("/v1/models/auto")[2]
    (auto,) = listed  # a plan limited to Auto: its named models are not served
    assert auto["id"] == "auto" and auto == one
    assert auto["route_id"] == "github-copilot/auto"
    assert auto["endpoints"] == ["/v1/responses", "/v1/chat/completions", "/v1/messages"]
    # gpt-4.1's output limit and prompt limit are the pool's smallest.
    assert (auto["max_output_tokens"], auto["max_prompt_tokens"]) == (16384, 128000)
    assert auto["auto"] == {
        "pool": ["gpt-4.1", "claude-opus-4.6", "gpt-5.5"],
        "discounts": {"gpt-4.1": 0.25},
        "only": True,
        "known": True,
    }
    assert [(m["id"], m["max_tokens"]) for m in claude] == [("auto", 16384)]


def test_a_named_model_on_a_plan_limited_to_auto_is_told_to_ask_for_auto(tmp_path: Path) -> None:
    with gateway_of(
        Scenario(usage=FREE, inventory=Inventory(models=minimal_models())), tmp_path
    ) as gw:
        status, _headers, openai_shape = gw.post("/v1/chat/completions", chat("gpt-4.1"))
        refused, _headers, anthropic_shape = gw.post(
            "/v1/messages", messages("claude-sonnet-4"), headers=ANTHROPIC
        )
        sent = model_requests(gw)
    assert (status, openai_shape["error"]["code"]) == (400, "model_not_supported")
    assert "ask for the model 'auto'" in openai_shape["error"]["message"]
    assert (refused, anthropic_shape["error"]["type"]) == (400, "invalid_request_error")
    assert "'auto'" in anthropic_shape["error"]["message"]
    assert sent == []  # answered by the gateway: the service would refuse them


def test_a_name_the_default_model_sends_to_auto_reads_asked_auto_served(tmp_path: Path) -> None:
    with gateway_of(
        Scenario(inventory=Inventory(models=minimal_models())), tmp_path, default_model="auto"
    ) as gw:
        assert gw.post("/v1/chat/completions", chat("gpt-4.1"))[0] == 200
        assert gw.post("/v1/chat/completions", chat("nothing-by-that-name"))[2]["model"] == (
            "gpt-4.1"
        )
        lines = [line.split()[2] for line in gw.access.lines if "POST" in line]
    # An exact id is served as it is; an unknown name goes to Auto, which picks.
    assert lines == ["model=gpt-4.1", "model=nothing-by-that-name->auto->gpt-4.1"]


def test_concurrent_requests_share_one_auto_exchange_when_the_session_is_due(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    scenario = Scenario(
        usage=FREE, inventory=Inventory(models=minimal_models()), auto=Auto(pool_lifetime=900)
    )
    with gateway_of(scenario, tmp_path, clock=clock) as gw:
        assert gw.post("/v1/chat/completions", chat())[0] == 200
        clock.advance(900 - 300)  # registration's session is now due for renewal
        statuses: list[int] = []

        def ask() -> None:
            statuses.append(gw.post("/v1/chat/completions", chat())[0])

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        pool_calls = gw.emulator.requests_to("auto_session")
        sent = gw.emulator.requests_to("chat")
        issued = gw.emulator.auto_session_tokens
    assert statuses == [200] * 8
    assert len(pool_calls) == 2 and len(issued) == 2  # registration's, and one renewal
    # The first request went with registration's session, every later one with the new.
    assert [r.headers["copilot-session-token"] for r in sent] == [issued[0]] + [issued[1]] * 8


def test_the_discount_lowers_the_price_the_gateway_estimates_with(tmp_path: Path) -> None:
    seen: list[ch.ModelRoute] = []

    def observe(route: ch.ModelRoute) -> None:
        seen.append(route)

    hooks = GatewayHooks(observe=observe)
    scenario = Scenario(inventory=Inventory(models=realistic_models()), auto=POOL)
    with gateway_of(scenario, tmp_path, hooks=hooks) as gw:
        assert gw.post("/v1/chat/completions", chat())[0] == 200
        assert gw.post("/v1/chat/completions", chat("gpt-4.1"))[0] == 200
    picked, named = seen
    assert (picked.model_id, named.model_id) == ("gpt-4.1", "gpt-4.1")
    assert picked.spec.billing is not None and named.spec.billing is not None
    picked_prices, named_prices = picked.spec.billing.prices, named.spec.billing.prices
    assert picked_prices is not None and named_prices is not None
    assert named_prices.input is not None
    assert picked_prices.input == pytest.approx(named_prices.input * 0.75)


def test_auto_that_offers_no_model_on_the_api_is_refused_plainly(tmp_path: Path) -> None:
    # The routing call (the pool call gated off) chooses a Chat model for a Messages request.
    scenario = Scenario(
        usage=FREE,
        inventory=Inventory(models=minimal_models()),
        auto=Auto(gated=frozenset({"pool"}), selects="gpt-4.1"),
    )
    with gateway_of(scenario, tmp_path) as gw:
        status, headers, answer = gw.post("/v1/messages", messages(), headers=ANTHROPIC)
        routing = gw.emulator.requests_to("auto")
        sent = model_requests(gw)
    assert status == 403  # not the 503 SDKs retry: asking again gets the same
    assert "retry-after" not in headers
    assert answer["error"]["type"] == "permission_error"
    assert "gpt-4.1" in answer["error"]["message"] and "/v1/messages" in answer["error"]["message"]
    assert len(routing) == 1 and sent == []
