"""The changes to ``POST /v1/embeddings``: OpenAI's request shape made what Copilot takes.

OpenAI's embeddings API takes ``input`` as a string, a list of strings or token arrays,
``encoding_format`` (``float`` or ``base64``) and ``dimensions``, and answers with an
``object``/``model`` envelope; Copilot's ``/embeddings`` takes a list of strings only,
``dimensions`` only on the models that list it, ignores ``encoding_format`` (floats always)
and answers without the envelope. docs/WIRE.md, "Embeddings", has the evidence for each;
the emulator refuses each unchanged shape (docs/EMULATOR.md, "Embeddings").

Token arrays cannot be turned into text without the exact tokenizer, and a ``dimensions``
dropped would return vectors of another size than asked: both are answered by the gateway
itself, with a 400 that says what to send instead, and so is a request with more inputs
than the model takes.
"""

from __future__ import annotations

import array
import base64
import sys
from typing import Any

from ._change import AnswerMapper, Change, LocalAnswer, RequestEdit

__all__ = [
    "EmbeddingsDimensions",
    "EmbeddingsEnvelope",
    "EmbeddingsInput",
    "EmbeddingsInputs",
    "EmbeddingsTokens",
    "EncodingFormat",
]

EMBEDDINGS = frozenset({"embeddings"})
# The encodings OpenAI's API names; the gateway answers both itself from Copilot's floats.
_ENCODINGS = frozenset({"float", "base64"})


class _Refusing(Change):
    """A change that answers the request itself, 400 in its API's error shape, when
    :meth:`problem` finds one (the gateway's own words, saying what to send instead)."""

    def problem(self, edit: RequestEdit) -> str | None:
        raise NotImplementedError

    def request(self, edit: RequestEdit) -> None:
        message = self.problem(edit)
        if message is not None:
            edit.did(self.name)
            body = edit.api.errors.body(400, "invalid_request", f"copilot-host gateway: {message}")
            edit.local = LocalAnswer(body, status=400)


def _token_array(value: object) -> bool:
    """Whether an ``input`` is token arrays: a list of integers, or a list holding lists."""
    if not isinstance(value, list) or not value:
        return False
    if any(isinstance(item, list) for item in value):
        return True
    return all(isinstance(item, int) and not isinstance(item, bool) for item in value)


class EmbeddingsTokens(_Refusing):
    name = "embeddings-tokens"
    apis = EMBEDDINGS
    summary = "embeddings input of token arrays is answered by the gateway with 400 (text only)"
    evidence = "embeddings-tokens"
    check = "embeddings_tokens"

    def problem(self, edit: RequestEdit) -> str | None:
        if not _token_array(edit.value.get("input")):
            return None
        return (
            "GitHub Copilot embeds text only: send input as a string or a list of strings, "
            "not token arrays (LangChain's OpenAIEmbeddings sends token arrays unless "
            "check_embedding_ctx_length=False)"
        )


class EmbeddingsInputs(_Refusing):
    name = "embeddings-inputs"
    apis = EMBEDDINGS
    summary = (
        "more embeddings inputs than the model's max_inputs is answered by the gateway "
        "with 400 naming the limit"
    )
    evidence = "embeddings-inputs"
    check = "embeddings_inputs"

    def problem(self, edit: RequestEdit) -> str | None:
        given = edit.value.get("input")
        most = edit.route.spec.max_inputs
        if not isinstance(given, list) or most is None or len(given) <= most:
            return None
        return (
            f"{edit.route.model_id} takes at most {most} inputs a request, and this one "
            f"has {len(given)}: send them in batches of {most}"
        )


class EmbeddingsDimensions(_Refusing):
    name = "embeddings-dimensions"
    apis = EMBEDDINGS
    summary = "dimensions for a model that does not take it is answered by the gateway with 400"
    evidence = "embeddings-dimensions"
    check = "embeddings_dimensions"

    def problem(self, edit: RequestEdit) -> str | None:
        if edit.value.get("dimensions") is None or edit.route.spec.dimensions:
            return None
        return (
            f"{edit.route.model_id} does not take dimensions (its vectors have one size): "
            "leave dimensions out, or use a model that takes it (GET /v1/models lists them)"
        )


class EmbeddingsInput(Change):
    name = "embeddings-input"
    apis = EMBEDDINGS
    summary = "a string embeddings input is sent as a list of one"
    evidence = "embeddings-input"
    check = "embeddings_input"

    def request(self, edit: RequestEdit) -> None:
        given = edit.value.get("input")
        if isinstance(given, str):
            edit.edit()["input"] = [given]
            edit.did(self.name)


class _Base64:
    """Each float vector of the answer as base64 of little-endian float32, as OpenAI's API
    writes it for ``encoding_format: "base64"`` (and as its SDKs decode it)."""

    marker = b'"embedding"'

    def document(self, value: dict[str, Any]) -> dict[str, Any]:
        data = value.get("data")
        if not isinstance(data, list):
            return value
        encoded = [_encoded(item) for item in data]
        if all(new is old for new, old in zip(encoded, data, strict=True)):
            return value
        return {**value, "data": encoded}

    def event(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def _encoded(item: object) -> object:
    if not isinstance(item, dict):
        return item
    vector = item.get("embedding")
    if not isinstance(vector, list) or not all(
        isinstance(number, float | int) and not isinstance(number, bool) for number in vector
    ):
        return item
    try:
        packed = array.array("f", vector)  # a number past float32 becomes inf, as numpy's cast
    except OverflowError:
        return item  # an integer past any float: left as it came
    if sys.byteorder != "little":
        packed.byteswap()
    return {**item, "embedding": base64.b64encode(packed.tobytes()).decode("ascii")}


class EncodingFormat(Change):
    name = "encoding-format"
    apis = EMBEDDINGS
    summary = (
        "encoding_format is not sent upstream (Copilot answers floats whatever it says); "
        "base64 is written by the gateway"
    )
    evidence = "encoding-format"
    check = (
        "none: the service takes encoding_format and ignores it, answering floats (docs/WIRE.md, "
        "Embeddings); the emulator does the same"
    )
    agents = ("openai-sdk",)

    def request(self, edit: RequestEdit) -> None:
        wanted = edit.value.get("encoding_format")
        if isinstance(wanted, str) and wanted in _ENCODINGS:
            del edit.edit()["encoding_format"]
            edit.did(self.name)

    def answer(self, edit: RequestEdit) -> AnswerMapper | None:
        if edit.original.get("encoding_format") == "base64" and self.name in edit.applied:
            return _Base64()
        return None


class _Envelope:
    """OpenAI's ``object: "list"`` and ``model`` on an answer that has ``data`` without them."""

    marker = b'"data"'

    def __init__(self, model: str) -> None:
        self._model = model

    def document(self, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("data"), list) or ("object" in value and "model" in value):
            return value
        return {"object": "list", **value, "model": value.get("model", self._model)}

    def event(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


class EmbeddingsEnvelope(Change):
    name = "embeddings-envelope"
    apis = EMBEDDINGS
    summary = "an embeddings answer gets OpenAI's object and model, which Copilot leaves out"
    evidence = "embeddings-envelope"
    check = (
        "none: the service answers without them (docs/WIRE.md, Embeddings); the emulator "
        "does the same"
    )
    switchable = False

    def answer(self, edit: RequestEdit) -> AnswerMapper | None:
        return _Envelope(edit.route.model_id)
