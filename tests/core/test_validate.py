"""Inventory validation: odd entries are skipped with a reason; only an answer that cannot be
trusted as a whole (too large, or carrying a credential of this login) fails it."""

from __future__ import annotations

import secrets
from dataclasses import replace

import pytest

from copilot_host import (
    ApiProtocol,
    Inventory,
    ModelSpec,
    ModelValidationError,
    Secret,
    SkippedModel,
)
from copilot_host._catalog._validate import validate_inventory

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


def _reasons(inventory: Inventory) -> list[tuple[str, str]]:
    return [(s.model_id, s.reason) for s in inventory.skipped]


def test_good_inventory_passes_unchanged() -> None:
    other = replace(
        GOOD, model_id="o3-mini", display_name="o3-mini", protocol=ApiProtocol.OPENAI_RESPONSES
    )
    result = validate_inventory([GOOD, other])
    assert tuple(result.models) == (GOOD, other)
    assert result.models[0] is GOOD  # nothing to change: not copied
    assert result.skipped == ()
    assert validate_inventory([]) == Inventory((), ())


def test_protocols_always_hold_the_route_protocol() -> None:
    assert GOOD.protocols == frozenset({ApiProtocol.OPENAI_CHAT})
    both = replace(GOOD, protocol=ApiProtocol.ANTHROPIC_MESSAGES)
    assert both.protocols == {ApiProtocol.OPENAI_CHAT, ApiProtocol.ANTHROPIC_MESSAGES}


@pytest.mark.parametrize(
    ("changes", "reason", "shown_id"),
    [
        ({"model_id": ""}, "malformed", ""),
        ({"model_id": "a/b"}, "invalid_id", "a/b"),
        ({"model_id": "../etc"}, "invalid_id", "../etc"),
        ({"model_id": "x" * 129}, "invalid_id", "x" * 127 + "…"),
        ({"model_id": "gpt\x1b[2J"}, "invalid_id", "gpt\\x1b[2J"),
        ({"model_id": "gpt 4o"}, "invalid_id", "gpt 4o"),
        ({"model_id": "gpt\u202e"}, "invalid_id", "gpt\\u202e"),
        # A look-alike of a real id is shown with its invisible character made visible.
        ({"model_id": "gpt-4o-2024-11-20\u200b"}, "invalid_id", "gpt-4o-2024-11-20\\u200b"),
        ({"model_id": "gpt\\4o"}, "invalid_id", "gpt\\\\4o"),
        ({"model_id": "k" + "0a" * 20}, "credential_like", ""),
        ({"display_name": "Model gho_" + "ab12" * 9}, "credential_like", ""),
        ({"protocol": "openai-chat"}, "malformed", "gpt-4o-2024-11-20"),
        ({"protocols": {ApiProtocol.OPENAI_RESPONSES}}, "malformed", None),
        ({"protocols": frozenset({"openai-chat"})}, "malformed", None),
        ({"input_modalities": ()}, "malformed", None),
        ({"input_modalities": ["text"]}, "malformed", None),
        ({"input_modalities": ("Text",)}, "malformed", None),
        ({"supports_reasoning": "yes"}, "malformed", None),
        ({"picker_enabled": 1}, "malformed", None),
        ({"chat_default": 1}, "malformed", None),
        ({"warnings": ["a list"]}, "malformed", None),
    ],
)
def test_a_bad_entry_is_skipped_and_the_rest_registered(
    changes: dict[str, object], reason: str, shown_id: str | None
) -> None:
    bad = replace(GOOD, **changes)  # type: ignore[arg-type]
    result = validate_inventory([replace(GOOD, model_id="fine"), bad])
    assert [s.model_id for s in result.models] == ["fine"]
    expected_id = GOOD.model_id if shown_id is None else shown_id
    assert _reasons(result) == [(expected_id, reason)]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Claude Sonnet 4.5 – Anthropic's best", "Claude Sonnet 4.5 – Anthropic's best"),
        ("<script>", "<script>"),
        ("n\u200bame", "name"),
        ("line\nbreak", "line break"),
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),
        ("y" * 121, "y" * 119 + "…"),
        ("", GOOD.model_id),
        ("\u200b", GOOD.model_id),
    ],
)
def test_display_names_are_any_text_made_inert_and_bounded(name: str, shown: str) -> None:
    (spec,) = validate_inventory([replace(GOOD, display_name=name)]).models
    assert spec.display_name == shown


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("context_window", 0),
        ("context_window", -5),
        ("context_window", True),
        ("context_window", 10**12),
        ("max_output_tokens", 1.5),
        ("max_prompt_tokens", 0),
        ("max_prompt_tokens", True),
    ],
)
def test_an_odd_limit_is_dropped_and_the_model_kept(field: str, value: object) -> None:
    (spec,) = validate_inventory([replace(GOOD, **{field: value})]).models  # type: ignore[arg-type]
    assert getattr(spec, field) is None


def test_warnings_are_made_inert_and_masked() -> None:
    session = Secret("sess-" + secrets.token_hex(10))
    warning = f"Retires soon\x1b[2J {session.reveal()} ghp_{'x1' * 12}"
    (spec,) = validate_inventory(
        [replace(GOOD, warnings=(warning, "", "second"))], secrets=[session]
    ).models
    assert spec.warnings == ("Retires soon[2J [REDACTED] [REDACTED]", "second")


def test_an_id_listed_twice_is_ambiguous_and_every_copy_skipped() -> None:
    result = validate_inventory(
        [GOOD, replace(GOOD, display_name="Again"), replace(GOOD, model_id="other")]
    )
    assert [s.model_id for s in result.models] == ["other"]
    assert _reasons(result) == [(GOOD.model_id, "duplicate_id")] * 2


def test_a_duplicate_of_a_skipped_entry_counts_too() -> None:
    result = validate_inventory(
        Inventory([GOOD], [SkippedModel(GOOD.model_id, "not_chat", "an embeddings model")])
    )
    assert result.models == ()
    assert sorted(_reasons(result)) == [
        (GOOD.model_id, "duplicate_id"),
        (GOOD.model_id, "not_chat"),
    ]


def test_a_known_secret_anywhere_fails_the_whole_inventory_and_is_never_echoed() -> None:
    session = Secret("sess" + secrets.token_hex(10))
    value = session.reveal()
    cases: list[Inventory] = [
        Inventory([replace(GOOD, model_id="m-" + value)]),
        Inventory([replace(GOOD, display_name="x " + value)]),
        # Even where the entry would only have been skipped: a secret must never reach
        # result.skipped.
        Inventory([replace(GOOD, model_id="a/" + value)]),
        Inventory([GOOD], [SkippedModel(value, "not_chat")]),
        Inventory([GOOD], [SkippedModel("e", "not_chat", display_name=value)]),
        Inventory([GOOD], [SkippedModel("e", "not_chat", message=f"see {value}")]),
    ]
    for inventory in cases:
        with pytest.raises(ModelValidationError) as info:
            validate_inventory(inventory, secrets=[session])
        assert value not in str(info.value)
        assert value not in repr(info.value)


@pytest.mark.parametrize("splitter", ["\u200b", "\u2060", "\u202e", "\x00"])
def test_a_secret_split_by_characters_cleaning_drops_is_caught_as_shown(splitter: str) -> None:
    """Shown text is cleaned, which drops invisible characters: a secret split by them is
    whole again on screen, so the checks look at the text as it will be shown too."""
    session = Secret("sess" + secrets.token_hex(10))
    value = session.reveal()
    split = splitter.join(value[i : i + 6] for i in range(0, len(value), 6))
    for inventory in (
        Inventory([replace(GOOD, model_id="m-" + split)]),
        Inventory([replace(GOOD, display_name=split)]),
        Inventory([GOOD], [SkippedModel(split, "not_chat")]),
    ):
        with pytest.raises(ModelValidationError):
            validate_inventory(inventory, secrets=[session])
    shaped = "gho_" + secrets.token_hex(18)
    result = validate_inventory(
        Inventory([GOOD, replace(GOOD, model_id="a/" + splitter.join(shaped))])
    )
    assert [(s.model_id, s.reason) for s in result.skipped] == [("", "credential_like")]
    assert shaped not in repr(result)


def test_skipped_entries_from_the_host_are_made_display_safe() -> None:
    shaped = "gho_" + secrets.token_hex(18)
    result = validate_inventory(
        Inventory(
            [GOOD],
            [
                SkippedModel("emb\x1b[2J", "not_chat", "an embeddings\nmodel", "Emb\u202e"),
                SkippedModel(shaped, "not_chat"),
                "not a skipped model",  # type: ignore[list-item]
            ],
        )
    )
    assert [(s.model_id, s.reason, s.message, s.display_name) for s in result.skipped] == [
        ("emb\\x1b[2J", "not_chat", "an embeddings model", "Emb"),
        (
            "",
            "credential_like",
            "the entry's id or name looks like a credential, so it is not shown",
            "",
        ),
        ("", "malformed", "the host listed something that is not a model", ""),
    ]


def test_too_many_models_are_refused() -> None:
    specs = [replace(GOOD, model_id=f"m{i}") for i in range(10_001)]
    with pytest.raises(ModelValidationError):
        validate_inventory(specs)


@pytest.mark.parametrize("found", ["gpt-4o", b"x", 5, None])
def test_an_inventory_that_is_not_a_sequence_is_refused(found: object) -> None:
    with pytest.raises(ModelValidationError):
        validate_inventory(found)  # type: ignore[arg-type]
