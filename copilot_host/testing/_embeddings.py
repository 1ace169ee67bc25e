"""``POST /embeddings``: the Copilot API's embeddings endpoint, and what it refuses.

What the service does here is known from VS Code's own requests and from peers' reports
(docs/EMULATOR.md, "Embeddings", cites each): it takes ``{"model", "input": [...],
"dimensions"?}`` for an entry whose ``capabilities.type`` is ``embeddings``, answers
``{"data": [{"object": "embedding", "index", "embedding": [floats]}], "usage"}`` without
OpenAI's top-level ``object`` and ``model``, ignores ``encoding_format`` (floats always),
and refuses a bare string ``input``, token arrays, an empty string, ``dimensions`` on a
model that does not list them, and any other model. The vectors are the emulator's own:
unit length, the same for the same text, so a client can check it got one per input in
order. Written apart from the gateway, as every rule of this package is.
"""

from __future__ import annotations

import array
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from ._answers import Answer, copilot_error, json_answer, model_not_supported, refused
from ._catalog import Catalog, Embedder
from ._costs import price_cost
from ._inference import gated_body, noting_model
from ._quota import Quota
from ._record import RecordedRequest
from ._state import EmulatorState

__all__ = ["NATIVE_DIMENSIONS", "embeddings"]

# What text-embedding-3-small and ada-002 answer without ``dimensions`` (the sufficit
# n8n-nodes-copilot guide; fenghaitao/copilot-api's test report: 1536 for all three).
NATIVE_DIMENSIONS = 1536
# VS Code drops any input over this (remoteEmbeddingsComputer.ts: "Open AI seems to allow 1
# less than max tokens", of the 8192 its embeddings endpoint lists).
_MAX_INPUT_TOKENS = 8191


def _format_refused() -> Answer:
    """The 400 the service gives a body whose ``input`` is not a list of strings (the
    sufficit guide's documented body; its wording is the guide's)."""
    return copilot_error(
        400, "Invalid request format", "invalid_request", type="invalid_request_error"
    )


def _tokens(text: str) -> int:
    """The emulator's token count of one input: a quarter of its UTF-8 bytes, at least 1."""
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4))


def _vector(text: str, size: int) -> list[float]:
    """A unit vector of ``size`` numbers drawn from the text's hash: the same text, the same
    vector (nothing like a model's, and not meant to be)."""
    drawn = array.array(
        "H", hashlib.shake_256(text.encode("utf-8", "surrogatepass")).digest(2 * size)
    )
    values = [value - 32767.5 for value in drawn]
    norm = math.sqrt(math.fsum(v * v for v in values)) or 1.0
    return [round(v / norm, 8) for v in values]


def _input_refusal(
    given: object, embedder: Embedder, strict: Callable[[str], bool]
) -> Answer | None:
    """The refusal of an ``input`` the service does not take, None when it takes it."""
    if isinstance(given, str):
        if strict("embeddings_input"):
            return refused("embeddings_input", "input is a string", _format_refused())
        given = [given]
    if not isinstance(given, list) or not given:
        return _format_refused()
    if all(isinstance(item, int) and not isinstance(item, bool) for item in given) or any(
        isinstance(item, list) for item in given
    ):
        if strict("embeddings_tokens"):
            return refused("embeddings_tokens", "input is token arrays", _format_refused())
        return None  # lenient: token arrays are read as they are
    if not all(isinstance(item, str) and item for item in given):
        # fenghaitao/copilot-api's test report: an empty string is a 400.
        return _format_refused()
    most = embedder.max_inputs
    if most is not None and len(given) > most and strict("embeddings_inputs"):
        return refused(
            "embeddings_inputs",
            f"{len(given)} inputs, at most {most}",
            copilot_error(
                400,
                f"Too many inputs. The max number of inputs is {most}.",
                "invalid_request",
                type="invalid_request_error",
            ),
        )
    longest = max(_tokens(item) for item in given)
    if longest > _MAX_INPUT_TOKENS:
        return copilot_error(
            400,
            f"This model's maximum context length is {_MAX_INPUT_TOKENS + 1} tokens, however "
            f"you requested {longest} tokens ({longest} in your prompt; 0 for the completion). "
            "Please reduce your prompt; or completion length.",
            "context_length_exceeded",
            type="invalid_request_error",
        )
    return None


def _dimensions(
    payload: Mapping[str, Any], embedder: Embedder, strict: Callable[[str], bool]
) -> int | Answer:
    """The vectors' size: ``dimensions`` when the model takes it, else its native size."""
    asked = payload.get("dimensions")
    if asked is None:
        return NATIVE_DIMENSIONS
    if not embedder.dimensions:
        if not strict("embeddings_dimensions"):
            return NATIVE_DIMENSIONS
        return refused(
            "embeddings_dimensions",
            "dimensions on a model without them",
            copilot_error(
                400,
                "This model does not support specifying dimensions.",
                "invalid_request",
                type="invalid_request_error",
            ),
        )
    if isinstance(asked, bool) or not isinstance(asked, int) or not 1 <= asked <= NATIVE_DIMENSIONS:
        return copilot_error(
            400,
            f"Invalid value for 'dimensions': it must be between 1 and {NATIVE_DIMENSIONS}.",
            "invalid_request",
            type="invalid_request_error",
        )
    return asked


def _answer(state: EmulatorState, request: RecordedRequest) -> Answer:
    s = state.scenario
    payload = gated_body(state, request)
    if isinstance(payload, Answer):
        return payload
    catalog, quota = state.part(Catalog), state.part(Quota)
    model = payload.get("model")
    embedder = catalog.embedders.get(model) if isinstance(model, str) else None
    if embedder is None or not isinstance(model, str):
        # A chat model, an unknown one, one whose policy is not enabled (the sufficit
        # guide's "Test 4": metis-I16-Binary answered this).
        return refused("model", f"{model!r} is no embeddings model", model_not_supported())
    if "embeddings" in s.usage.quota_exceeded_on or quota.exhausted():
        return quota.exceeded()
    limited = quota.rate_limited()
    if limited is not None:
        return limited
    given = payload.get("input")
    refusal = _input_refusal(given, embedder, s.strict)
    if refusal is not None:
        return refusal
    size = _dimensions(payload, embedder, s.strict)
    if isinstance(size, Answer):
        return size
    texts = [
        item if isinstance(item, str) else json.dumps(item)
        for item in (given if isinstance(given, list) else [given])
    ]
    tokens = sum(_tokens(text) for text in texts)
    priced = (
        price_cost(catalog.billing.get(model), tokens, 0, state.now())
        if s.usage.cost_model == "prices"
        else None
    )
    quota.charge(s.usage.request_cost if priced is None else priced)
    data = [
        {"object": "embedding", "index": index, "embedding": _vector(text, size)}
        for index, text in enumerate(texts)
    ]
    # No top-level "object" or "model": the service leaves OpenAI's envelope out.
    body = {"data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return json_answer(200, body, *quota.headers())


# ``POST /embeddings`` (see the module docstring); the record names the model asked.
embeddings = noting_model(_answer, "embeddings")
