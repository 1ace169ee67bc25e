"""The emulator's ``POST /embeddings``: what it answers, and each refusal docs/EMULATOR.md
cites, over a real socket."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    CHECKS,
    GitHubEmulator,
    Inventory,
    Scenario,
    Usage,
    chat_model,
    embeddings_model,
)
from tests.testing._support import PLAIN, copilot

_EMBEDDINGS = "embeddings_input", "embeddings_tokens", "embeddings_inputs", "embeddings_dimensions"


@pytest.fixture(scope="module")
def emulator() -> Iterator[GitHubEmulator]:
    with GitHubEmulator() as emu:
        yield emu


def _post(emu: GitHubEmulator, document: Any) -> httpx2.Response:
    with httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        return client.post(f"{origin}/embeddings", json=document, headers=headers)


def test_the_checks_are_named() -> None:
    assert set(_EMBEDDINGS) <= CHECKS


def test_one_unit_vector_per_input_in_order_without_the_openai_envelope(
    emulator: GitHubEmulator,
) -> None:
    answer = _post(
        emulator, {"model": "text-embedding-3-small", "input": ["a", "bb", "a"], "user": "x"}
    )
    assert answer.status_code == 200
    value = answer.json()
    assert set(value) == {"data", "usage"}  # no "object", no "model"
    data = value["data"]
    assert [(d["object"], d["index"]) for d in data] == [("embedding", i) for i in range(3)]
    assert [len(d["embedding"]) for d in data] == [1536] * 3
    assert data[0]["embedding"] == data[2]["embedding"] != data[1]["embedding"]
    assert math.isclose(math.fsum(v * v for v in data[1]["embedding"]), 1.0, rel_tol=1e-6)
    assert value["usage"] == {"prompt_tokens": 3, "total_tokens": 3}
    (record,) = emulator.requests_to("embeddings")[-1:]
    assert (record.model, record.refusal, record.initiator) == (
        "text-embedding-3-small",
        None,
        None,
    )


def test_dimensions_size_the_vectors_and_encoding_format_is_ignored(
    emulator: GitHubEmulator,
) -> None:
    answer = _post(
        emulator,
        {
            "model": "text-embedding-3-small-inference",
            "input": ["x"],
            "dimensions": 8,
            "encoding_format": "base64",
        },
    )
    (item,) = answer.json()["data"]
    assert isinstance(item["embedding"], list) and len(item["embedding"]) == 8


def _refusal(answer: httpx2.Response) -> dict[str, Any]:
    assert answer.status_code == 400
    assert answer.headers["content-type"] == PLAIN
    error: dict[str, Any] = json.loads(answer.text)["error"]
    return error


@pytest.mark.parametrize(
    ("document", "check"),
    [
        ({"input": "one string"}, "embeddings_input"),
        ({"input": [1, 2, 3]}, "embeddings_tokens"),
        ({"input": [[1, 2], [3]]}, "embeddings_tokens"),
        ({"input": ["x"] * 513, "dimensions": 4}, "embeddings_inputs"),
        (
            {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 8},
            "embeddings_dimensions",
        ),
    ],
)
def test_each_refused_shape_is_a_400_recorded_under_its_check(
    emulator: GitHubEmulator, document: dict[str, Any], check: str
) -> None:
    error = _refusal(_post(emulator, {"model": "text-embedding-3-small", **document}))
    assert error["type"] == "invalid_request_error"
    assert emulator.requests_to("embeddings")[-1].refusal == check


@pytest.mark.parametrize(
    "document",
    [
        {"input": []},
        {"input": ["x", ""]},
        {"input": {"text": "x"}},
        {"input": ["x" * 40_000]},
        {"input": ["x"], "dimensions": 0},
        {"input": ["x"], "dimensions": 4096},
        {"input": ["x"], "dimensions": "8"},
    ],
)
def test_other_shapes_the_service_refuses(
    emulator: GitHubEmulator, document: dict[str, Any]
) -> None:
    _refusal(_post(emulator, {"model": "text-embedding-3-small", **document}))
    assert emulator.requests_to("embeddings")[-1].refusal is None


@pytest.mark.parametrize("model", ["gpt-4.1", "no-such-model", None, 7])
def test_any_other_model_is_model_not_supported(emulator: GitHubEmulator, model: object) -> None:
    answer = _post(emulator, {"model": model, "input": ["x"]})
    assert answer.status_code == 400
    assert len(answer.content) == 138  # the service's own answer, byte for byte
    assert _refusal(answer)["code"] == "model_not_supported"
    assert emulator.requests_to("embeddings")[-1].refusal == "model"


def test_an_embeddings_model_is_not_served_on_a_chat_path(emulator: GitHubEmulator) -> None:
    with httpx2.Client(transport=emulator.transport()) as client:
        origin, headers = copilot(emulator, client)
        answer = client.post(
            f"{origin}/chat/completions",
            json={
                "model": "text-embedding-3-small",
                "messages": [{"role": "user", "content": "x"}],
            },
            headers=headers,
        )
    assert _refusal(answer)["code"] == "model_not_supported"


def test_lenient_the_shapes_are_served() -> None:
    scenario = Scenario(lenient=frozenset(_EMBEDDINGS))
    with GitHubEmulator(scenario) as emu:
        for document in (
            {"input": "one string"},
            {"input": [[1, 2], [3]]},
            {"input": ["x"] * 600, "dimensions": 4},
            {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 8},
        ):
            answer = _post(emu, {"model": "text-embedding-3-small", **document})
            assert answer.status_code == 200, answer.text
        assert emu.refusals == ()


def test_a_disabled_policy_or_a_chat_entry_serves_no_embeddings() -> None:
    models = (
        embeddings_model("emb-off", policy="disabled"),
        chat_model("emb-chat", endpoints=("/embeddings",)),
    )
    with GitHubEmulator(Scenario(inventory=Inventory(models=models))) as emu:
        for model in ("emb-off", "emb-chat"):
            assert _refusal(_post(emu, {"model": model, "input": ["x"]}))["code"] == (
                "model_not_supported"
            )


def test_priced_answers_use_the_quota_by_their_tokens() -> None:
    scenario = Scenario(
        inventory=Inventory(models=(embeddings_model("emb", input_price=1000),)),
        usage=Usage(cost_model="prices", quota_entitlement=10, quota_used=0),
    )
    with GitHubEmulator(scenario) as emu:
        answer = _post(emu, {"model": "emb", "input": ["x" * 4000]})
        assert answer.json()["usage"]["prompt_tokens"] == 1000
        # 1000 tokens at 1000 credits per million: 1 credit of the 10.
        snapshot = answer.headers["x-quota-snapshot-premium_interactions"]
    assert "rem=90.0&" in snapshot
