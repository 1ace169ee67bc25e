"""The inventory: what ``/models`` lists, which paths serve each model, its limits and
prices, and the ``/models`` handler."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ._accounts import CLI_EDITOR, copilot_gate, failure
from ._answers import (
    Answer,
    json_answer,
)
from ._quota import Quota
from ._record import RecordedRequest
from ._state import EmulatorState, editor_version

__all__ = ["Catalog", "Embedder", "models"]


# What every /models entry carries for a client the service calls stale (late 2026). The
# text is the emulator's; the code is the one clients act on.
_DEPRECATED_NOTICE = {
    "code": "client_version_deprecated",
    "message": "This client version is deprecated and will stop working soon. "
    "Please update to the latest version.",
}


def _served_entries(
    models: tuple[Mapping[str, object], ...],
) -> Iterator[tuple[str, object, Mapping[str, object], Mapping[str, object]]]:
    """(id, ``capabilities.type``, capabilities, entry) of each entry the service serves: the
    first entry of an id, with its policy absent or enabled (a model not enabled is answered
    ``model_not_supported``, as an unknown id is: reports of disabled models in
    docs/WIRE.md)."""
    seen: set[str] = set()
    for item in models:
        model_id = item.get("id")
        if not isinstance(model_id, str) or model_id in seen:
            continue
        seen.add(model_id)
        policy = item.get("policy")
        if (policy.get("state") if isinstance(policy, Mapping) else None) not in (None, "enabled"):
            continue
        found = item.get("capabilities")
        capabilities: Mapping[str, object] = found if isinstance(found, Mapping) else {}
        yield model_id, capabilities.get("type"), capabilities, item


def _served_paths(models: tuple[Mapping[str, object], ...]) -> dict[str, frozenset[str]]:
    """Model id -> the paths the API serves a chat model on: an entry without
    ``supported_endpoints`` is served on ``/chat/completions`` only. Embeddings and
    completion models are served on no model path (``model_not_supported``)."""
    served: dict[str, frozenset[str]] = {}
    for model_id, kind, _capabilities, item in _served_entries(models):
        if kind not in (None, "chat"):
            continue
        endpoints = item.get("supported_endpoints")
        if isinstance(endpoints, list):
            served[model_id] = frozenset(e for e in endpoints if isinstance(e, str))
        else:
            served[model_id] = frozenset({"/chat/completions"})
    return served


@dataclass(frozen=True, slots=True)
class Embedder:
    """An embeddings model as ``/embeddings`` serves it: the most inputs a request may carry
    (``limits.max_inputs``; None: not listed) and whether it takes ``dimensions``."""

    max_inputs: int | None
    dimensions: bool


def _embedders(models: tuple[Mapping[str, object], ...]) -> dict[str, Embedder]:
    """Model id -> the embeddings model ``/embeddings`` serves under it: an entry of type
    ``embeddings``, whatever its ``supported_endpoints`` say (real entries list none)."""
    found: dict[str, Embedder] = {}
    for model_id, kind, capabilities, _item in _served_entries(models):
        if kind != "embeddings":
            continue
        limits, supports = capabilities.get("limits"), capabilities.get("supports")
        most = limits.get("max_inputs") if isinstance(limits, Mapping) else None
        found[model_id] = Embedder(
            most if isinstance(most, int) and not isinstance(most, bool) and most > 0 else None,
            isinstance(supports, Mapping) and supports.get("dimensions") is True,
        )
    return found


_LIMITS = ("max_output_tokens", "max_prompt_tokens", "max_context_window_tokens")


def _listed_limits(models: tuple[Mapping[str, object], ...]) -> dict[str, dict[str, float]]:
    """Model id -> the token limits its first inventory entry lists (numbers only)."""
    listed: dict[str, dict[str, float]] = {}
    for item in models:
        model_id = item.get("id")
        if not isinstance(model_id, str) or model_id in listed:
            continue
        capabilities = item.get("capabilities")
        limits = capabilities.get("limits") if isinstance(capabilities, Mapping) else None
        listed[model_id] = {
            name: float(value)
            for name in _LIMITS
            if isinstance(limits, Mapping)
            and isinstance(value := limits.get(name), (int, float))
            and not isinstance(value, bool)
        }
    return listed


class Catalog:
    """The scripted models as the service serves them (``state.part(Catalog)``): the paths
    and limits of each, its prices, and the ``/models`` failures still to serve."""

    def __init__(self, state: EmulatorState) -> None:
        listed = state.scenario.inventory.models
        self.failures = list(state.scenario.faults.models_failures)
        self.served = _served_paths(listed)
        self.embedders = _embedders(listed)
        self.limits = _listed_limits(listed)
        self.billing: dict[str, object] = {}
        for item in listed:
            model_id = item.get("id")
            if isinstance(model_id, str):
                self.billing.setdefault(model_id, item.get("billing"))


def models(state: EmulatorState, request: RecordedRequest) -> Answer:
    refusal = copilot_gate(state, request)
    if refusal is not None:
        return refusal
    s = state.scenario
    if "models" in s.usage.quota_exceeded_on:
        return state.part(Quota).exceeded()
    catalog = state.part(Catalog)
    with state.lock:
        failed = catalog.failures.pop(0) if catalog.failures else None
    if failed is not None:
        return failure(state, failed)
    listed = [dict(m) for m in s.inventory.models]
    if s.auto_only_plan:
        # Auto-only plans get the whole catalogue, none of it in the picker (opencode
        # pull request #47261, editor-code-assistant/eca #601).
        for model in listed:
            model["model_picker_enabled"] = False
    floor = s.inventory.deprecated_below
    editor = request.headers.get("editor-version", "")
    # A VS Code version floor: the Copilot CLI's own version (copilot/1.0.x) is not on it.
    if (
        floor is not None
        and not editor.startswith(CLI_EDITOR)
        and editor_version(editor) < editor_version(floor)
    ):
        # Every entry, whatever else it says, carries the notice for a stale client.
        for model in listed:
            notes = model.get("warning_messages")
            kept = list(notes) if isinstance(notes, list) else []
            model["warning_messages"] = [*kept, dict(_DEPRECATED_NOTICE)]
    return json_answer(200, {"data": listed, "object": "list"})
