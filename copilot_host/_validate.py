"""Where a model inventory is validated before any of it reaches a catalog."""

from __future__ import annotations

import re
from collections.abc import Iterable

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
    compiled alternation, built once per inventory), token shapes and key-like runs."""

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


def _check(index: int, spec: ModelSpec, screen: _Screen) -> None:
    def fail(why: str) -> ModelValidationError:
        return ModelValidationError(f"{_describe(index, spec, screen)}: {why}")

    if not isinstance(spec, ModelSpec):
        raise fail("not a ModelSpec")
    if not isinstance(spec.model_id, str) or not _MODEL_ID.fullmatch(spec.model_id):
        raise fail("id must be 1-128 of letters, digits and . _ : + -")
    if not isinstance(spec.display_name, str) or not _DISPLAY_NAME.fullmatch(spec.display_name):
        raise fail("display name has characters outside the safe set")
    # NUL cannot occur in either (charsets above), so no match can straddle the two.
    if screen(f"{spec.model_id}\0{spec.display_name}"):
        what = "id" if screen(spec.model_id) else "display name"
        raise fail(f"{what} looks like credential material")
    if not isinstance(spec.protocol, ApiProtocol):
        raise fail("protocol must be an explicit ApiProtocol")
    for value, what in (
        (spec.context_window, "context window"),
        (spec.max_output_tokens, "max output tokens"),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_TOKENS
        ):
            raise fail(f"{what} must be a positive integer")
    if not isinstance(spec.input_modalities, tuple) or not 1 <= len(spec.input_modalities) <= 16:
        raise fail("input modalities must be a tuple of 1-16 names")
    for modality in spec.input_modalities:
        if not isinstance(modality, str) or not _MODALITY.fullmatch(modality):
            raise fail("input modality names must be short lower-case")
    for flag, what in ((spec.supports_reasoning, "reasoning"), (spec.picker_enabled, "picker")):
        if not isinstance(flag, bool):
            raise fail(f"the {what} flag must be a bool")


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
        _check(index, spec, screen)
        if spec.model_id in seen:
            raise ModelValidationError(f"model {spec.model_id!r} is listed twice")
        seen.add(spec.model_id)
    return result
