"""``POST /v1/embeddings``: the official OpenAI SDK through the gateway to the strict
emulator, on both server stacks and through ``copilot-host serve`` itself; each change the
gateway makes to the request and the answer, with what reached upstream; its cost."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
import pytest
from copilot_host_cli._gateway import GatewayNames
from copilot_host_cli._run import _facts

import copilot_host as ch
from copilot_host.gateway._app._admit import estimate
from copilot_host.gateway._protocols import CHAT, EMBEDDINGS, converses
from copilot_host.testing import GitHubEmulator
from tests.core._routes import make_route
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks
from tests.gateway.test_serve import BOUND, _listening

MODEL = "text-embedding-3-small"


@pytest.fixture
def gateway(either_stack_gateway: Gateway) -> Gateway:
    return either_stack_gateway


def _sent(gateway: Gateway) -> list[dict[str, Any]]:
    """The bodies that reached the emulator's /embeddings."""
    return [json.loads(record.body) for record in gateway.emulator.requests_to("embeddings")]


def test_the_openai_sdk_gets_one_vector_per_input(gateway: Gateway) -> None:
    client = gateway.openai()
    answer = client.embeddings.create(model=MODEL, input=["first text", "second", "first text"])
    assert [item.index for item in answer.data] == [0, 1, 2]
    vectors = [item.embedding for item in answer.data]
    assert [len(vector) for vector in vectors] == [1536] * 3
    assert vectors[0] == pytest.approx(vectors[2]) and vectors[0] != pytest.approx(vectors[1])
    assert (answer.object, answer.model) == ("list", MODEL)
    assert answer.usage.prompt_tokens == answer.usage.total_tokens > 0
    # The SDK asked for base64 (its default), which the service ignores: the gateway sent no
    # encoding_format and wrote the floats as base64; the SDK decoded them. The same call
    # with floats asked for gets the same numbers (float32 apart).
    floats = client.embeddings.create(model=MODEL, input=["first text"], encoding_format="float")
    assert floats.data[0].embedding == pytest.approx(vectors[0], abs=1e-7)
    (upstream, plain) = _sent(gateway)
    assert upstream == {"model": MODEL, "input": ["first text", "second", "first text"]}
    assert plain == {"model": MODEL, "input": ["first text"]}
    records = gateway.emulator.requests_to("embeddings")
    assert [(r.initiator, r.vision, r.refusal) for r in records] == [(None, False, None)] * 2
    assert all(r.headers["authorization"].startswith("Bearer tid=") for r in records)
    line = gateway.access.lines[0]
    assert line.startswith(f"POST /v1/embeddings model={MODEL} status=200 ")
    assert line.endswith(" rewrote=encoding-format")


def test_base64_is_little_endian_float32_as_openai_writes_it(gateway: Gateway) -> None:
    status, _headers, answer = gateway.post(
        "/v1/embeddings",
        {"model": MODEL, "input": ["x"], "encoding_format": "base64", "dimensions": 4},
    )
    assert status == 200
    (item,) = answer["data"]
    raw = base64.b64decode(item["embedding"])
    assert len(raw) == 16
    floats = gateway.emulator.requests_to("embeddings")
    assert json.loads(floats[0].body) == {"model": MODEL, "input": ["x"], "dimensions": 4}
    decoded = struct.unpack("<4f", raw)
    status, _headers, plain = gateway.post(
        "/v1/embeddings", {"model": MODEL, "input": ["x"], "dimensions": 4}
    )
    assert decoded == pytest.approx(plain["data"][0]["embedding"], abs=1e-7)


def test_a_string_input_goes_as_a_list_and_the_answer_gets_the_envelope(gateway: Gateway) -> None:
    status, headers, answer = gateway.post(
        "/v1/embeddings", {"model": f"github-copilot/{MODEL}", "input": "one text"}
    )
    assert status == 200
    assert headers["x-copilot-host-model"] == MODEL
    assert (answer["object"], answer["model"], len(answer["data"])) == ("list", MODEL, 1)
    assert _sent(gateway) == [{"model": MODEL, "input": ["one text"]}]
    assert gateway.access.lines[-1].endswith(" rewrote=embeddings-input")


def test_dimensions_go_to_a_model_that_takes_them(gateway: Gateway) -> None:
    answer = gateway.openai().embeddings.create(model=MODEL, input=["x"], dimensions=512)
    assert len(answer.data[0].embedding) == 512
    assert _sent(gateway)[0]["dimensions"] == 512


@pytest.mark.parametrize(
    ("document", "rewrite", "words"),
    [
        (
            {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 8},
            "embeddings-dimensions",
            "text-embedding-ada-002 does not take dimensions",
        ),
        ({"model": MODEL, "input": [1, 2, 3]}, "embeddings-tokens", "not token arrays"),
        ({"model": MODEL, "input": [[1, 2], [3]]}, "embeddings-tokens", "LangChain"),
        (
            {"model": MODEL, "input": ["x"] * 513},
            "embeddings-inputs",
            "at most 512 inputs a request, and this one has 513",
        ),
    ],
)
def test_what_copilot_cannot_take_is_answered_400_by_the_gateway(
    gateway: Gateway, document: dict[str, Any], rewrite: str, words: str
) -> None:
    status, headers, answer = gateway.post("/v1/embeddings", document)
    assert status == 400
    error = answer["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_request")
    assert words in error["message"]
    assert headers["x-copilot-host-model"] == document["model"]
    assert gateway.emulator.requests_to("embeddings") == ()
    assert " status=400 " in gateway.access.lines[-1]
    assert gateway.access.lines[-1].endswith(f" rewrote={rewrite}")


def test_the_sdk_raises_the_gateways_refusal_as_a_bad_request(gateway: Gateway) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        gateway.openai().embeddings.create(model="text-embedding-ada-002", input="x", dimensions=8)
    assert "does not take dimensions" in refused.value.message


def test_the_model_lists_show_embeddings_models_to_openai_clients_only(gateway: Gateway) -> None:
    listed = {model.id: model for model in gateway.openai().models.list().data}
    assert {MODEL, "text-embedding-ada-002", "text-embedding-3-small-inference"} <= set(listed)
    entry = listed[MODEL].model_dump()
    assert entry["endpoints"] == ["/v1/embeddings"]
    assert entry["billing"]["prices"]["input_per_million"] == 2.0
    claude = [model.id for model in gateway.anthropic().models.list()]
    assert not any(model_id.startswith("text-embedding") for model_id in claude)
    status, _headers, found = gateway.get(f"/v1/models/{MODEL}")
    assert (status, found["endpoints"]) == (200, ["/v1/embeddings"])


def test_without_the_rewrites_the_emulator_refuses_what_the_service_refuses(
    tmp_path: Path,
) -> None:
    """Each switchable change exists because the service refuses the shape it changes: with
    it off, the request reaches the emulator and is refused by the check it names."""
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", rewrites=frozenset()) as gw,
    ):
        for document, check in (
            ({"input": "one text"}, "embeddings_input"),
            ({"input": [[1, 2]]}, "embeddings_tokens"),
            ({"input": ["x"] * 513, "dimensions": 4}, "embeddings_inputs"),
            (
                {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 8},
                "embeddings_dimensions",
            ),
        ):
            status, _headers, _answer = gw.post("/v1/embeddings", {"model": MODEL, **document})
            assert status == 400
            assert emulator.requests_to("embeddings")[-1].refusal == check
        # encoding_format goes upstream as sent, and floats come back (the SDK takes them).
        answer = gw.openai().embeddings.create(model=MODEL, input=["x"], dimensions=4)
        assert len(answer.data[0].embedding) == 4
        assert json.loads(emulator.requests_to("embeddings")[-1].body)["encoding_format"] == (
            "base64"
        )
        gw.close_clients()
        assert_no_leaks(gw)


def test_the_cost_is_priced_from_the_inventory_and_marked_estimated(tmp_path: Path) -> None:
    """The answer reports no cost: its usage at the model's input price is counted, marked
    estimated, against the budget; a model without prices counts none."""
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, tmp_path / "home", max_credits=5.0) as gw,
    ):
        text = "x" * 4000  # 1000 tokens by the emulator's count: 0.002 credits at 2/million
        gw.openai().embeddings.create(model=MODEL, input=[text, text], dimensions=4)
        gw.openai().embeddings.create(
            model="text-embedding-ada-002", input=["y"], encoding_format="float"
        )
        spend = gw.app.spend

        async def settled() -> None:
            while spend.in_flight:  # the access line goes out before the spend is settled
                await asyncio.sleep(0.01)

        asyncio.run_coroutine_threadsafe(settled(), gw.loop).result(BOUND)
        assert spend.credits == pytest.approx(0.004)
        assert spend.estimated == pytest.approx(0.004)
        assert spend.requests == 2
        assert " credits 0.004 (0.004 estimated) " in spend.totals() + " "
        assert "credits=0.004" in gw.access.lines[0]
        assert "credits=" not in gw.access.lines[1]
        gw.close_clients()


def test_the_budget_estimate_has_no_output_for_embeddings() -> None:
    prices = ch.TokenPrices(batch_size=1_000_000, input=2.0)
    spec = ch.ModelSpec(
        MODEL, "E", ch.ApiProtocol.OPENAI_EMBEDDINGS, billing=ch.ModelBilling(prices=prices)
    )
    route = replace(make_route(f"github-copilot/{MODEL}"), protocol=spec.protocol, spec=spec)
    body = b"x" * 4000
    assert estimate(EMBEDDINGS, route, body, {}) == pytest.approx(0.002)
    # The same prices on a chat API need an output price and count: none is known.
    assert estimate(CHAT, route, body, {"max_tokens": 10}) is None


def test_agents_are_offered_chat_models_only(gateway: Gateway) -> None:
    routes = asyncio.run_coroutine_threadsafe(gateway.app.served_routes(), gateway.loop).result(
        BOUND
    )
    assert any(route.model_id == MODEL for route in routes)
    facts = asyncio.run_coroutine_threadsafe(
        _facts(gateway.app, GatewayNames()), gateway.loop
    ).result(BOUND)
    assert facts.models and all(converses(spec) for spec in facts.models)
    assert not any(spec.model_id.startswith("text-embedding") for spec in facts.models)


@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure-python"])
def test_through_serve_with_the_official_sdk(serve: Any, pure: bool) -> None:
    served = serve("--port", "0", "--json", pure_python=pure)
    _listening(served)
    with openai.OpenAI(base_url=served.base_url, api_key=served.key, max_retries=0) as client:
        answer = client.embeddings.create(model=MODEL, input=["alpha", "beta"], dimensions=64)
    assert [len(item.embedding) for item in answer.data] == [64, 64]
    served.err.wait_for("POST /v1/embeddings")
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    (line,) = [line for line in stderr.splitlines() if "POST /v1/embeddings" in line]
    assert f"model={MODEL} status=200" in line and "rewrote=encoding-format" in line
    assert "1 model requests" in stderr and "estimated" in stderr
    assert served.leaks(stdout, stderr) == []
