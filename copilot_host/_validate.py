"""Where a model inventory is validated before any of it reaches a catalog."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ._errors import ModelValidationError
from ._model import ApiProtocol, ModelSpec
from ._redact import TOKEN_SHAPES, known_values
from ._secret import Secret

__all__ = ["MAX_MODELS", "validate_inventory"]

MAX_MODELS = 10_000
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+\-]{0,127}")
_DISPLAY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:()/+,&\-]{0,119}")
_MODALITY = re.compile(r"[a-z][a-z0-9_\-]{0,31}")
# A long unbroken run of letters and digits mixing both looks like key material, not a name.
_KEYLIKE = re.compile(r"(?=[A-Za-z0-9_]*[0-9])(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{32,}")
_MAX_TOKENS = 100_000_000


class _Screen:
    """Finds credential material in a text: this inventory's known secret values (one
    alternation compiled once per inventory), token shapes and key-like runs.

    Three searches rather than one combined pattern: each keeps its own literal-prefix
    fast path, which a single alternation loses (measured slower)."""

    __slots__ = ("_values",)

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({v for v in secrets if v}, key=len, reverse=True)
        self._values = re.compile("|".join(map(re.escape, values))) if values else None

    def __call__(self, text: str) -> bool:
        return bool(
            (self._values is not None and self._values.search(text))
            or TOKEN_SHAPES.search(text)
            or _KEYLIKE.search(text)
        )


def _describe(index: int, spec: object, screen: _Screen) -> str:
    # Built only when an error is raised; an id that may be secret is never echoed.
    model_id = getattr(spec, "model_id", None)
    if isinstance(model_id, str) and _MODEL_ID.fullmatch(model_id) and not screen(model_id):
        return f"model {model_id!r}"
    return f"model #{index}"


def _count_ok(value: object) -> bool:
    # type() rather than isinstance(): bool is an int subclass and is not a count.
    return value is None or (type(value) is int and 0 < value <= _MAX_TOKENS)


def _modalities_ok(modalities: object) -> bool:
    return (
        type(modalities) is tuple
        and 1 <= len(modalities) <= 16
        and all(type(m) is str and _MODALITY.fullmatch(m) for m in modalities)
    )


def _untrusted(value: object) -> Any:
    # Undo the type checker's narrowing: the fields are checked, not assumed.
    return value


def _problem(spec: Any, screen: _Screen) -> str | None:
    """Why ``spec`` may not enter a catalog, or None. One pass; most specs pass.

    ``Any`` on purpose: a host is outside code, so every field's runtime type is checked
    whatever the dataclass annotations promise.
    """
    if not isinstance(spec, ModelSpec):
        return "not a ModelSpec"
    spec = _untrusted(spec)
    model_id, name = spec.model_id, spec.display_name
    if type(model_id) is not str or not _MODEL_ID.fullmatch(model_id):
        return "id must be 1-128 of letters, digits and . _ : + -"
    if type(name) is not str or not _DISPLAY_NAME.fullmatch(name):
        return "display name has characters outside the safe set"
    # NUL cannot occur in either (charsets above), so no match can straddle the two.
    if screen(f"{model_id}\0{name}"):
        return f"{'id' if screen(model_id) else 'display name'} looks like credential material"
    if type(spec.protocol) is not ApiProtocol:
        return "protocol must be an explicit ApiProtocol"
    if not _count_ok(spec.context_window):
        return "context window must be a positive integer"
    if not _count_ok(spec.max_output_tokens):
        return "max output tokens must be a positive integer"
    if not _modalities_ok(spec.input_modalities):
        return "input modalities must be a tuple of 1-16 short lower-case names"
    if type(spec.supports_reasoning) is not bool or type(spec.picker_enabled) is not bool:
        return "the reasoning and picker flags must be bools"
    return None


def validate_inventory(
    specs: Iterable[ModelSpec], *, secrets: Iterable[Secret] = ()
) -> tuple[ModelSpec, ...]:
    """Return the inventory as a tuple if every model passes, else raise.

    ``secrets`` are the credentials of this registration (session and GitHub tokens); an
    id or label containing one is refused without ever echoing it.
    """
    # Every registered secret (session tokens, the GitHub token of a loaded login) as well
    # as the ones passed in; read once per inventory, not once per string.
    screen = _Screen([*(s.reveal() for s in secrets), *known_values()])
    result = tuple(specs)
    if len(result) > MAX_MODELS:
        raise ModelValidationError(
            f"the inventory lists {len(result)} models; at most {MAX_MODELS}"
        )
    seen: set[str] = set()
    for index, spec in enumerate(result):
        problem = _problem(spec, screen)
        if problem is not None:
            raise ModelValidationError(f"{_describe(index, spec, screen)}: {problem}")
        if spec.model_id in seen:
            raise ModelValidationError(f"model {spec.model_id!r} is listed twice")
        seen.add(spec.model_id)
    return result
