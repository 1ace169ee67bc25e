"""Where a model inventory is validated before any of it reaches a catalog."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ._errors import ModelValidationError
from ._model import ApiProtocol, ModelSpec
from ._redact import REDACTED, TOKEN_SHAPES, known_values
from ._secret import Secret

__all__ = ["MAX_MODELS", "validate_inventory"]

MAX_MODELS = 10_000
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+\-]{0,127}")
_DISPLAY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:()/+,&\-]{0,119}")
_MODALITY = re.compile(r"[a-z][a-z0-9_\-]{0,31}")
# A long unbroken run of letters and digits mixing both looks like key material, not a name.
_KEYLIKE = re.compile(r"(?=[A-Za-z0-9_]*[0-9])(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{32,}")
_MAX_TOKENS = 100_000_000


def _looks_secret(text: str, secrets: Sequence[str]) -> bool:
    if any(s and s in text for s in secrets):
        return True
    return bool(TOKEN_SHAPES.search(text)) or REDACTED in text or bool(_KEYLIKE.search(text))


def _describe(index: int, spec: object, secrets: Sequence[str]) -> str:
    model_id = getattr(spec, "model_id", None)
    if (
        isinstance(model_id, str)
        and _MODEL_ID.fullmatch(model_id)
        and not _looks_secret(model_id, secrets)
    ):
        return f"model {model_id!r}"
    return f"model #{index}"


def _check(index: int, spec: ModelSpec, secrets: Sequence[str]) -> None:
    where = _describe(index, spec, secrets)
    if not isinstance(spec, ModelSpec):
        raise ModelValidationError(f"{where}: not a ModelSpec")
    if not isinstance(spec.model_id, str) or not _MODEL_ID.fullmatch(spec.model_id):
        raise ModelValidationError(f"{where}: id must be 1-128 of letters, digits and . _ : + -")
    if not isinstance(spec.display_name, str) or not _DISPLAY_NAME.fullmatch(spec.display_name):
        raise ModelValidationError(f"{where}: display name has characters outside the safe set")
    for text, what in ((spec.model_id, "id"), (spec.display_name, "display name")):
        if _looks_secret(text, secrets):
            raise ModelValidationError(f"{where}: {what} looks like credential material")
    if not isinstance(spec.protocol, ApiProtocol):
        raise ModelValidationError(f"{where}: protocol must be an explicit ApiProtocol")
    for value, what in (
        (spec.context_window, "context window"),
        (spec.max_output_tokens, "max output tokens"),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_TOKENS
        ):
            raise ModelValidationError(f"{where}: {what} must be a positive integer")
    if not isinstance(spec.input_modalities, tuple) or not 1 <= len(spec.input_modalities) <= 16:
        raise ModelValidationError(f"{where}: input modalities must be a tuple of 1-16 names")
    for modality in spec.input_modalities:
        if not isinstance(modality, str) or not _MODALITY.fullmatch(modality):
            raise ModelValidationError(f"{where}: input modality names must be short lower-case")
    for flag, what in ((spec.supports_reasoning, "reasoning"), (spec.picker_enabled, "picker")):
        if not isinstance(flag, bool):
            raise ModelValidationError(f"{where}: the {what} flag must be a bool")


def validate_inventory(
    specs: Iterable[ModelSpec], *, secrets: Iterable[Secret] = ()
) -> tuple[ModelSpec, ...]:
    """Return the inventory as a tuple if every model passes, else raise.

    ``secrets`` are the credentials of this registration (session and GitHub tokens); an
    id or label containing one is refused without ever echoing it.
    """
    # Every registered secret (session tokens, the GitHub token of a loaded login) as well
    # as the ones passed in; read once per inventory, not once per string.
    revealed = [*(s.reveal() for s in secrets), *known_values()]
    result = tuple(specs)
    if len(result) > MAX_MODELS:
        raise ModelValidationError(
            f"the inventory lists {len(result)} models; at most {MAX_MODELS}"
        )
    seen: set[str] = set()
    for index, spec in enumerate(result):
        _check(index, spec, revealed)
        if spec.model_id in seen:
            raise ModelValidationError(f"model {spec.model_id!r} is listed twice")
        seen.add(spec.model_id)
    return result
