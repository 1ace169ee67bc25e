from __future__ import annotations

import secrets
from dataclasses import replace

import pytest

from copilot_host import ApiProtocol, ModelSpec, ModelValidationError, Secret
from copilot_host._validate import validate_inventory

GOOD = ModelSpec(
    model_id="gpt-4o-2024-11-20",
    display_name="GPT-4o (Preview)",
    protocol=ApiProtocol.OPENAI_CHAT,
    context_window=128_000,
    max_output_tokens=16_384,
    input_modalities=("text", "image"),
    supports_reasoning=False,
    picker_enabled=True,
)


def test_good_inventory_passes_as_a_tuple() -> None:
    other = replace(
        GOOD, model_id="o3-mini", display_name="o3-mini", protocol=ApiProtocol.OPENAI_RESPONSES
    )
    assert validate_inventory([GOOD, other]) == (GOOD, other)
    assert validate_inventory([]) == ()


@pytest.mark.parametrize(
    "changes",
    [
        {"model_id": ""},
        {"model_id": "a/b"},
        {"model_id": "../etc"},
        {"model_id": "x" * 129},
        {"model_id": "gpt\x1b[2J"},
        {"model_id": "gpt 4o"},
        {"model_id": "gpt\u202e"},
        {"display_name": ""},
        {"display_name": "<script>"},
        {"display_name": "n\u200bame"},
        {"display_name": "line\nbreak"},
        {"display_name": "y" * 121},
        {"protocol": "openai-chat"},
        {"context_window": 0},
        {"context_window": -5},
        {"context_window": True},
        {"context_window": 10**12},
        {"max_output_tokens": 1.5},
        {"input_modalities": ()},
        {"input_modalities": ["text"]},
        {"input_modalities": ("Text",)},
        {"supports_reasoning": "yes"},
        {"picker_enabled": 1},
    ],
)
def test_bad_fields_fail_the_whole_inventory(changes: dict[str, object]) -> None:
    bad = replace(GOOD, **changes)  # type: ignore[arg-type]
    with pytest.raises(ModelValidationError):
        validate_inventory([replace(GOOD, model_id="fine"), bad])


def test_duplicates_are_refused() -> None:
    with pytest.raises(ModelValidationError, match="twice"):
        validate_inventory([GOOD, replace(GOOD, display_name="Again")])


def test_credential_material_is_refused_and_never_echoed() -> None:
    session = Secret("sess" + secrets.token_hex(10))
    gho = "gho_" + secrets.token_hex(18)
    cases = [
        replace(GOOD, model_id=gho),
        replace(GOOD, display_name=f"Model {gho}"),
        replace(GOOD, model_id="m-" + session.reveal()),
        replace(GOOD, display_name="x " + session.reveal()),
        replace(GOOD, model_id="k" + secrets.token_hex(20)),  # key-shaped
    ]
    for spec in cases:
        with pytest.raises(ModelValidationError) as info:
            validate_inventory([spec], secrets=[session])
        assert gho not in str(info.value)
        assert session.reveal() not in str(info.value)


def test_too_many_models_are_refused() -> None:
    specs = [replace(GOOD, model_id=f"m{i}") for i in range(10_001)]
    with pytest.raises(ModelValidationError):
        validate_inventory(specs)
