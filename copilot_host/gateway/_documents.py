"""The documents the gateway writes in each protocol's shape: model lists, and its own answers.

Each :class:`~._protocols.Api` descriptor names the builders it uses; nothing else calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import copilot_host as ch

from ._json import dumps

# Frames one event as the protocol's stream does (an Api's ``event``).
Framer = Callable[[dict[str, Any] | bytes], bytes]

__all__ = [
    "Framer",
    "Tokens",
    "messages_tokens",
    "openai_chat_tokens",
    "responses_tokens",
    "anthropic_entry",
    "anthropic_list",
    "chat_text",
    "messages_text",
    "openai_entry",
    "openai_list",
    "responses_text",
]


def openai_entry(route: ch.ModelRoute, endpoints: list[str]) -> dict[str, Any]:
    spec = route.spec
    return {
        "id": route.model_id,
        "object": "model",
        # The inventory does not say when a model was released.
        "created": 0,
        "owned_by": route.owner,
        "route_id": route.route_id,
        "display_name": spec.display_name,
        "endpoints": endpoints,
        "context_window": spec.context_window,
        "max_output_tokens": spec.max_output_tokens,
        "max_prompt_tokens": spec.max_prompt_tokens,
        "chat_default": spec.chat_default,
        "input_modalities": list(spec.input_modalities),
        "supports_reasoning": spec.supports_reasoning,
        # An embeddings model's batch limit and whether it takes `dimensions`.
        "max_inputs": spec.max_inputs,
        "dimensions": spec.dimensions,
        "picker_enabled": spec.picker_enabled,
        # What the model costs, as `copilot-host models --json` shows it.
        "billing": None if spec.billing is None else spec.billing.document(),
        # Copilot Auto's route: the models it picks from and their discounts.
        "auto": None if spec.auto is None else spec.auto.document(),
    }


def openai_list(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "data": entries}


def anthropic_entry(route: ch.ModelRoute, _endpoints: list[str]) -> dict[str, Any]:
    spec = route.spec
    return {
        "type": "model",
        "id": route.model_id,
        "display_name": spec.display_name,
        # Anthropic's documented value when the release date is unknown.
        "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": spec.context_window,
        "max_tokens": spec.max_output_tokens,
    }


def anthropic_list(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "data": entries,
        "has_more": False,
        "first_id": entries[0]["id"] if entries else None,
        "last_id": entries[-1]["id"] if entries else None,
    }


def _events(frame: Framer, events: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(frame(data) for data in events)


def messages_text(frame: Framer, model: str, text: str, ident: str, stream: bool) -> bytes:
    head = {"id": ident, "type": "message", "role": "assistant", "model": model}
    usage = {"input_tokens": 0, "output_tokens": 0}
    end = {"stop_reason": "end_turn", "stop_sequence": None}
    if not stream:
        return dumps({**head, "content": [{"type": "text", "text": text}], **end, "usage": usage})
    start: dict[str, Any] = {**head, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = usage
    return _events(
        frame,
        (
            {"type": "message_start", "message": start},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {"type": "ping"},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": end, "usage": {"output_tokens": 0}},
            {"type": "message_stop"},
        ),
    )


def chat_text(frame: Framer, model: str, text: str, ident: str, stream: bool) -> bytes:
    head = {"id": ident, "created": 0, "model": model}
    if not stream:
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return dumps({**head, "object": "chat.completion", "choices": [choice], "usage": usage})
    chunk = {**head, "object": "chat.completion.chunk"}
    deltas = (
        {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "stop"},
    )
    return _events(frame, ({**chunk, "choices": [delta]} for delta in deltas)) + frame(b"[DONE]")


def responses_text(frame: Framer, model: str, text: str, ident: str, stream: bool) -> bytes:
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {
        "type": "message",
        "id": f"{ident}_0",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    response = {
        "id": ident,
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": [item] if text else [],
        "usage": usage,
    }
    if not stream:
        return dumps(response)
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    if text:
        at = {"output_index": 0, "item_id": item["id"], "content_index": 0}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **at, "delta": text},
            {"type": "response.output_text.done", **at, "text": text},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
    events.append({"type": "response.completed", "response": response})
    return _events(frame, ({**event, "sequence_number": n} for n, event in enumerate(events)))


# The largest token count read: far past any answer's, and exact in a float and in a
# 64-bit integer (SQLite's), as a JSON integer need not be; a larger one is no count.
_MOST_TOKENS = 2**53


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MOST_TOKENS:
        return value
    return None


def _usage_of(value: object, holders: tuple[str, ...]) -> dict[str, Any] | None:
    """The ``usage`` object of an answer or event: at its top level or under a holder."""
    if not isinstance(value, dict):
        return None
    usage = value.get("usage")
    if isinstance(usage, dict):
        return usage
    for holder in holders:
        inner = value.get(holder)
        if isinstance(inner, dict) and isinstance(inner.get("usage"), dict):
            found: dict[str, Any] = inner["usage"]
            return found
    return None


# (input, output, cached) tokens an answer reports: the whole prompt, the answer, and the
# part of the prompt read from the cache; None where it reports none.
Tokens = tuple[int | None, int | None, int | None]


def openai_chat_tokens(value: object) -> Tokens | None:
    usage = _usage_of(value, ())
    if usage is None:
        return None
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached


def responses_tokens(value: object) -> Tokens | None:
    usage = _usage_of(value, ("response",))
    if usage is None:
        return None
    details = usage.get("input_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    return _count(usage.get("input_tokens")), _count(usage.get("output_tokens")), cached


def messages_tokens(value: object) -> Tokens | None:
    """Anthropic counts cache reads and writes apart from ``input_tokens``: the prompt is
    their sum."""
    usage = _usage_of(value, ("message",))
    if usage is None:
        return None
    fresh = _count(usage.get("input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    written = _count(usage.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    return prompt, _count(usage.get("output_tokens")), read
