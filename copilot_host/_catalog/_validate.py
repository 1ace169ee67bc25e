"""Where a model inventory is validated before any of it reaches a catalog.

Real inventories drift (new fields, odd limits, models only another client can call), so
one odd entry must never cost the person every model: an entry that is not usable is
*skipped* and reported with a stable reason. Only what makes the whole answer
untrustworthy fails it: an envelope that is not an inventory, or an id or name carrying a
credential of this login (an echoed secret means the answer cannot be shown anywhere).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from .._api import ApiProtocol
from .._errors import ModelValidationError
from .._models import Inventory, ModelBilling, ModelSpec, SkippedModel
from .._safety._redact import REDACTED, TOKEN_SHAPES, known_values
from .._safety._secret import Secret
from .._safety._text import clean, show_visibly

__all__ = ["DISPLAY_NAME_LIMIT", "MAX_MODELS", "validate_inventory"]

MAX_MODELS = 10_000
# Route ids are "<provider>/<model id>": '/' would make them ambiguous, and ids end up in
# URLs, file names and log lines, so they keep to a small, inert set.
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+\-]{0,127}")
DISPLAY_NAME_LIMIT = 120
_MODALITY = re.compile(r"[a-z][a-z0-9_\-]{0,31}")
# A long unbroken run of letters and digits mixing both looks like key material, not a name.
_KEYLIKE = re.compile(r"(?=[A-Za-z0-9_]*[0-9])(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{32,}")
_MAX_TOKENS = 100_000_000
_MAX_WARNINGS = 8
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_WARNING_LIMIT = 300
_CREDENTIAL_LIKE = "the entry's id or name looks like a credential, so it is not shown"


def _views(texts: tuple[object, ...]) -> Iterator[str]:
    """Each text as given and, unless it is plain printable ASCII, as it will be shown:
    cleaning drops invisible characters, which would join a secret split by them."""
    for text in texts:
        if isinstance(text, str):
            yield text
            if not (text.isascii() and text.isprintable()):
                yield clean(text, limit=len(text))


def _token_like(*texts: object) -> bool:
    return any(TOKEN_SHAPES.search(text) or _KEYLIKE.search(text) for text in _views(texts))


class _KnownSecrets:
    """This registration's exact secret values as one alternation, compiled once."""

    __slots__ = ("_pattern",)

    def __init__(self, values: Iterable[str]) -> None:
        ordered = sorted({v for v in values if v}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, *texts: object) -> bool:
        pattern = self._pattern
        return pattern is not None and any(pattern.search(text) for text in _views(texts))

    def mask(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(REDACTED, text)


def _entries(found: object) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    models: object = found
    skipped: object = ()
    if isinstance(found, Inventory):
        models, skipped = found.models, found.skipped
    if not isinstance(models, Sequence) or isinstance(models, str | bytes):
        raise ModelValidationError("the host's inventory is not a sequence of models")
    if not isinstance(skipped, Sequence) or isinstance(skipped, str | bytes):
        raise ModelValidationError("the host's list of skipped models is not a sequence")
    return tuple(models), tuple(skipped)


def _count(value: object) -> int | None:
    # type() rather than isinstance(): bool is an int subclass and is not a count. An odd
    # limit is dropped, not fatal: the model stays usable without it.
    return value if type(value) is int and 0 < value <= _MAX_TOKENS else None


def _warnings(
    value: object, codes: object, secrets: _KnownSecrets
) -> tuple[tuple[str, ...], tuple[str | None, ...]] | None:
    """The notes made inert, and their codes, still aligned (a note that cleans to
    nothing goes with its code); a code that is not a plain identifier becomes None."""
    if type(value) is not tuple or not all(type(w) is str for w in value):
        return None
    if type(codes) is not tuple or len(codes) != len(value):
        return None
    kept: list[str] = []
    kept_codes: list[str | None] = []
    for text, code in zip(value[:_MAX_WARNINGS], codes, strict=False):
        # Inert for a terminal, and no secret in it even if a server echoed one.
        inert = clean(TOKEN_SHAPES.sub(REDACTED, secrets.mask(clean(text))), limit=_WARNING_LIMIT)
        if inert:
            kept.append(inert)
            kept_codes.append(code if type(code) is str and _CODE.fullmatch(code) else None)
    return tuple(kept), tuple(kept_codes)


def _skip(model_id: object, reason: str, message: str, name: object = "") -> SkippedModel:
    return SkippedModel(_display_id(model_id), reason, message, _display_name(name))


def _display_id(model_id: object) -> str:
    if not isinstance(model_id, str) or _token_like(model_id):
        return ""
    # Escaped, not cleaned: an id with an invisible character removed could read as
    # another, real id (``gpt-4.1`` + U+200B is not ``gpt-4.1``).
    return show_visibly(model_id, limit=128)


def _display_name(name: object) -> str:
    if not isinstance(name, str) or _token_like(name):
        return ""
    return clean(name, limit=DISPLAY_NAME_LIMIT)


def _check(entry: object, secrets: _KnownSecrets) -> ModelSpec | SkippedModel:
    """One entry: the spec made display-safe, or why it is skipped.

    A host is outside code, so every field's runtime type is checked whatever the
    dataclass annotations promise.
    """
    if not isinstance(entry, ModelSpec):
        return _skip("", "malformed", "the host listed something that is not a model")
    # Read through Any: the checks below are about what the fields really hold.
    spec: Any = entry
    model_id, name = spec.model_id, spec.display_name
    if type(model_id) is not str or not model_id:
        return _skip("", "malformed", "the entry has no id")
    if _token_like(model_id, name):
        return _skip("", "credential_like", _CREDENTIAL_LIKE)
    if not _MODEL_ID.fullmatch(model_id):
        return _skip(
            model_id,
            "invalid_id",
            "the id has characters a route id cannot carry ('/', spaces or symbols)",
            name,
        )
    protocols = spec.protocols
    if (
        type(spec.protocol) is not ApiProtocol
        or type(protocols) is not frozenset
        or not all(type(p) is ApiProtocol for p in protocols)
        or spec.protocol not in protocols
    ):
        return _skip(model_id, "malformed", "the entry names no explicit protocol", name)
    # A chat model's protocols are chat protocols, an embeddings model's its one: the
    # embeddings path is never among a chat route's preferences, nor the reverse.
    kind = spec.protocol.chat
    if any(p.chat is not kind for p in protocols):
        protocols = frozenset(p for p in protocols if p.chat is kind)
    modalities = spec.input_modalities
    if not (
        type(modalities) is tuple
        and 1 <= len(modalities) <= 16
        and all(type(m) is str and _MODALITY.fullmatch(m) for m in modalities)
    ):
        return _skip(model_id, "malformed", "the entry's input modalities are malformed", name)
    if (
        type(spec.supports_reasoning) is not bool
        or type(spec.picker_enabled) is not bool
        or type(spec.chat_default) is not bool
        or type(spec.dimensions) is not bool
        or type(spec.websocket) is not bool
    ):
        return _skip(model_id, "malformed", "the entry's capability flags are malformed", name)
    notes = _warnings(spec.warnings, spec.warning_codes, secrets)
    if notes is None:
        return _skip(model_id, "malformed", "the entry's warnings are malformed", name)
    warnings, codes = notes
    # Billing is display data: an odd one is dropped, never fatal.
    billing = spec.billing if type(spec.billing) is ModelBilling else None
    display = (clean(name, limit=DISPLAY_NAME_LIMIT) if type(name) is str else "") or model_id
    context, output = _count(spec.context_window), _count(spec.max_output_tokens)
    prompt, inputs = _count(spec.max_prompt_tokens), _count(spec.max_inputs)
    if (
        display == name
        and context == spec.context_window
        and output == spec.max_output_tokens
        and prompt == spec.max_prompt_tokens
        and inputs == spec.max_inputs
        and protocols is spec.protocols
        and warnings == spec.warnings
        and codes == spec.warning_codes
        and billing is spec.billing
    ):
        return entry  # the common case: nothing to change, nothing to copy
    return replace(
        entry,
        display_name=display,
        context_window=context,
        max_output_tokens=output,
        max_prompt_tokens=prompt,
        max_inputs=inputs,
        protocols=protocols,
        warnings=warnings,
        warning_codes=codes,
        billing=billing,
    )


def validate_inventory(
    found: Inventory | Sequence[ModelSpec], *, secrets: Iterable[Secret] = ()
) -> Inventory:
    """The usable models, display-safe, and every skipped entry with its reason.

    Raises :class:`ModelValidationError` only when the answer as a whole cannot be used:
    it is not an inventory, it is too large, or an id or name (of any entry, skipped ones
    included) carries one of ``secrets`` or another registered secret value. The error
    never echoes the entry. An id listed more than once is ambiguous: every entry carrying
    it is skipped (``duplicate_id``).
    """
    models, skipped = _entries(found)
    if len(models) + len(skipped) > MAX_MODELS:
        raise ModelValidationError(
            f"the inventory lists {len(models) + len(skipped)} models; at most {MAX_MODELS}"
        )
    # Every registered secret (session tokens, the GitHub token of a loaded login, device
    # codes) and the ones passed in; compiled once per inventory, not once per string.
    known = _KnownSecrets([*(s.reveal() for s in secrets), *known_values()])
    for index, entry in enumerate((*models, *skipped)):
        texts = (
            (entry.model_id, entry.display_name)
            if isinstance(entry, ModelSpec)
            else (entry.model_id, entry.display_name, entry.message)
            if isinstance(entry, SkippedModel)
            else ()
        )
        if known(*texts):
            raise ModelValidationError(
                f"inventory entry #{index} carries a credential of this login in its id or "
                "name; nothing was registered"
            )
    checked = [_check(spec, known) for spec in models]
    ids = Counter(
        entry.model_id
        for entry in (*models, *skipped)
        if isinstance(entry, ModelSpec | SkippedModel) and isinstance(entry.model_id, str)
    )
    usable: list[ModelSpec] = []
    dropped: list[SkippedModel] = []
    for entry in checked:
        if isinstance(entry, SkippedModel):
            dropped.append(entry)
        elif ids[entry.model_id] > 1:
            dropped.append(
                _skip(
                    entry.model_id,
                    "duplicate_id",
                    "the id is listed more than once, so it is ambiguous",
                    entry.display_name,
                )
            )
        else:
            usable.append(entry)
    for entry in skipped:
        if not isinstance(entry, SkippedModel):
            dropped.append(_skip("", "malformed", "the host listed something that is not a model"))
        elif _token_like(entry.model_id, entry.display_name):
            dropped.append(_skip("", "credential_like", _CREDENTIAL_LIKE))
        else:
            message = clean(TOKEN_SHAPES.sub(REDACTED, clean(entry.message)), limit=_WARNING_LIMIT)
            reason = clean(entry.reason, limit=40) or "malformed"
            dropped.append(_skip(entry.model_id, reason, message, entry.display_name))
    return Inventory(tuple(usable), tuple(dropped))
