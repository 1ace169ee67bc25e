"""The embeddings entries of the change table, in-process: what each does to a document,
and that no JSON value in any field they read makes one raise (request side, answer side,
the body encoded again)."""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host.gateway._changes import TABLE, Changes, RequestEdit
from copilot_host.gateway._protocols import EMBEDDINGS
from tests._json_strategies import json_values
from tests.core._routes import make_route

MODEL = "text-embedding-3-small"
NAMES = {
    "embeddings-tokens",
    "embeddings-inputs",
    "embeddings-dimensions",
    "embeddings-input",
    "encoding-format",
    "embeddings-envelope",
}


def _route(*, dimensions: bool = True, max_inputs: int | None = 4) -> ch.ModelRoute:
    spec = ch.ModelSpec(
        MODEL,
        "E",
        ch.ApiProtocol.OPENAI_EMBEDDINGS,
        max_inputs=max_inputs,
        dimensions=dimensions,
    )
    return replace(make_route(f"github-copilot/{MODEL}"), protocol=spec.protocol, spec=spec)


def _through(
    document: dict[str, Any], route: ch.ModelRoute | None = None
) -> tuple[RequestEdit, bytes | None]:
    changes = Changes().of(EMBEDDINGS)
    edit = RequestEdit(EMBEDDINGS, document, route or _route())
    changes.request(edit)
    body = json.dumps(document).encode()
    return edit, None if edit.local is not None else changes.body(edit, body)


def test_the_table_holds_them_for_embeddings_only() -> None:
    mine = [change for change in TABLE if change.name in NAMES]
    assert len(mine) == len(NAMES)
    assert all(change.apis == {"embeddings"} for change in mine)
    # The model id and the served betas act on embeddings too; no chat change does.
    acting = {change.name for change in TABLE if change.acts_on(EMBEDDINGS)}
    assert acting == NAMES | {"model", "betas", "rate-limit"}


def test_a_body_no_change_touches_goes_as_sent_with_the_model_spliced() -> None:
    edit, body = _through({"model": f"github-copilot/{MODEL}", "input": ["a"], "user": "u"})
    assert edit.applied == []
    assert body is not None
    assert json.loads(body) == {"model": MODEL, "input": ["a"], "user": "u"}


def test_base64_round_trips_through_the_answer() -> None:
    edit, body = _through({"model": MODEL, "input": "a", "encoding_format": "base64"})
    assert edit.applied == ["embeddings-input", "encoding-format"]
    assert body is not None and json.loads(body) == {"model": MODEL, "input": ["a"]}
    answers = Changes().of(EMBEDDINGS).answers(edit)
    assert answers is not None
    upstream = {"data": [{"object": "embedding", "index": 0, "embedding": [0.5, -1, 1e39]}]}
    out = json.loads(answers.whole(json.dumps(upstream).encode()))
    assert (out["object"], out["model"]) == ("list", MODEL)
    raw = base64.b64decode(out["data"][0]["embedding"])
    assert struct.unpack("<3f", raw) == (0.5, -1.0, float("inf"))


def test_an_answer_that_is_not_floats_is_left_as_it_came() -> None:
    edit, _body = _through({"model": MODEL, "input": ["a"], "encoding_format": "base64"})
    answers = Changes().of(EMBEDDINGS).answers(edit)
    assert answers is not None
    for upstream in (
        b'{"error": {"message": "x"}}',
        b'{"object": "list", "model": "m", "data": [{"embedding": "AAAA"}]}',
        b"not json",
    ):
        assert answers.whole(upstream) == upstream


@pytest.mark.parametrize(
    ("document", "route", "name"),
    [
        ({"input": [[1]]}, None, "embeddings-tokens"),
        ({"input": [1, 2]}, None, "embeddings-tokens"),
        ({"input": ["a"] * 5}, None, "embeddings-inputs"),
        ({"input": ["a"], "dimensions": 3}, _route(dimensions=False), "embeddings-dimensions"),
    ],
)
def test_the_refusals_answer_locally_in_openais_shape(
    document: dict[str, Any], route: ch.ModelRoute | None, name: str
) -> None:
    edit, body = _through({"model": MODEL, **document}, route)
    assert body is None and edit.applied == [name]
    assert edit.local is not None and edit.local.status == 400
    error = json.loads(edit.local.body)["error"]
    assert error["code"] == "invalid_request" and error["message"].startswith("copilot-host")


@pytest.mark.parametrize(
    "document",
    [
        {"input": ["a"] * 4},
        {"input": [1, "a"]},
        {"input": []},
        {"input": ["a"], "dimensions": None},
        {"input": ["a"], "encoding_format": "int8"},
    ],
)
def test_what_copilot_decides_goes_to_copilot(document: dict[str, Any]) -> None:
    edit, body = _through({"model": MODEL, **document})
    assert edit.local is None and "encoding-format" not in edit.applied
    assert body is not None


_FIELDS = st.fixed_dictionaries(
    {"model": st.just(MODEL)},
    optional={
        "input": json_values(),
        "dimensions": json_values(),
        "encoding_format": st.sampled_from(["base64", "float"]) | json_values(),
        "user": json_values(),
    },
)


@settings(max_examples=200, deadline=None)
@example({"model": MODEL, "encoding_format": "base64"}, True, None, [10**400, 1.5])
@example({"model": MODEL, "encoding_format": []}, False, None, None)
@given(
    _FIELDS,
    st.booleans(),
    st.none() | st.integers(min_value=1, max_value=8),
    json_values(keys=st.sampled_from(["data", "embedding", "object", "model", "usage"])),
)
def test_no_json_value_makes_a_change_raise(
    document: dict[str, Any], dimensions: bool, max_inputs: int | None, answer: Any
) -> None:
    edit, body = _through(document, _route(dimensions=dimensions, max_inputs=max_inputs))
    assert (body is None) == (edit.local is not None)
    answers = Changes().of(EMBEDDINGS).answers(edit)
    assert answers is not None  # the envelope, at least
    for upstream in (answer, {"data": answer}, {"data": [{"embedding": answer}]}):
        try:
            raw = json.dumps(upstream).encode()
        except ValueError:
            continue
        json.loads(answers.whole(raw))
