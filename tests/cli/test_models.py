"""models through CliRunner against the loopback emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copilot_host.store import CredentialStore
from copilot_host.testing import Inventory, Scenario, chat_model, minimal_models, realistic_models
from tests.github._support import REALISTIC_MODELS, REALISTIC_ROUTES

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")


def _logged_in(cli: Cli, emulate: Any, scenario: Scenario | None = None) -> Any:
    # The tidy inventory unless a test says otherwise: these tests are about the output.
    env = emulate(scenario or Scenario(inventory=Inventory(models=minimal_models())))
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    return env


def test_models_table_is_aligned_and_sorted(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("models", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "ROUTE",
        "NAME",
        "PROTOCOL",
        "CONTEXT",
        "PICKER",
        "MULT",
        "IN/1M",
        "OUT/1M",
        "CACHE/1M",
    ]
    rows = lines[1:]
    assert [r.split()[0] for r in rows] == [
        "github-copilot/auto",
        "github-copilot/claude-messages-only",
        "github-copilot/claude-sonnet-4",
        "github-copilot/gpt-4.1",
        "github-copilot/gpt-5-mini",
    ]
    # Every column starts at the same offset on every line.
    for title in ("NAME", "PROTOCOL", "CONTEXT", "PICKER", "MULT", "IN/1M", "OUT/1M", "CACHE/1M"):
        column = lines[0].index(title)
        for row in rows:
            assert row[column - 2 : column] == "  " and row[column] != " ", (title, row)
    by_route = {r.split()[0]: r for r in rows}
    assert "Claude Sonnet 4" in by_route["github-copilot/claude-sonnet-4"]
    assert by_route["github-copilot/claude-sonnet-4"].split()[-5:] == [
        "hidden",
        "-",
        "-",
        "-",
        "-",
    ]
    # The multiplier, and AI credits per million input, output and cached input tokens.
    assert by_route["github-copilot/gpt-5-mini"].split()[-4:] == ["0x", "25", "200", "2.5"]
    assert "openai-responses" in by_route["github-copilot/gpt-5-mini"]
    assert "openai-chat" in by_route["github-copilot/gpt-4.1"]
    assert "128,000" in by_route["github-copilot/gpt-4.1"]
    assert "anthropic-messages" in by_route["github-copilot/claude-messages-only"]
    # Copilot Auto's route: its pool's smallest limits, and what it picks from.
    assert by_route["github-copilot/auto"].split()[1:3] == ["Copilot", "Auto"]
    assert result.stderr == (
        "Copilot Auto (github-copilot/auto) picks from: gpt-4.1 (10% off), "
        "gpt-5-mini (10% off), claude-messages-only (10% off)\n"
        "5 models at https://api.individual.githubcopilot.com; 2 skipped (--all)\n"
    )


def test_models_all_lists_skipped_entries_with_their_reason(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("models", "--all", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("SKIPPED")))
    assert lines[start].split()[:3] == ["SKIPPED", "REASON", "WHY"]
    skipped = {line.split()[0]: line.split()[1] for line in lines[start + 1 :]}
    # The embeddings model is served (by the gateway), so it is a route, not skipped.
    assert skipped == {"o3-disabled": "policy_not_enabled"}
    assert "administrator" in lines[-1]
    (embeddings,) = [line for line in lines[1:start] if "text-embedding-3-small" in line]
    assert embeddings.split()[:2] == ["github-copilot/text-embedding-3-small", "Embedding"]
    assert "openai-embeddings" in embeddings
    assert embeddings.split()[-5:] == ["hidden", "1x", "2", "-", "-"]
    assert result.stderr == (
        "1 embeddings model (protocol openai-embeddings): `copilot-host serve` serves them "
        "on /v1/embeddings; register_models(..., embeddings=True) in Python\n"
        "Copilot Auto (github-copilot/auto) picks from: gpt-4.1 (10% off), "
        "gpt-5-mini (10% off), claude-messages-only (10% off)\n"
        "6 models at https://api.individual.githubcopilot.com\n"
    )
    # Without --all the list is the chat models, as an application's default catalog is.
    doc = json.loads(cli("models", "--json", seam=env.seam).stdout)
    assert all(m["protocol"] != "openai-embeddings" for m in doc["models"])
    doc = json.loads(cli("models", "--json", "--all", seam=env.seam).stdout)
    (entry,) = [m for m in doc["models"] if m["protocol"] == "openai-embeddings"]
    assert (entry["max_inputs"], entry["dimensions"]) == (512, True)
    assert entry["url"].endswith("/embeddings")


def test_models_shows_the_services_notes_once_per_text(cli: Cli, emulate: Any) -> None:
    note = "Your billing plan has changed to usage-based billing."
    inventory = []
    for model_id in ("a", "b", "c"):
        item = chat_model(model_id)
        item["warning_message"] = note
        inventory.append(item)
    inventory[0]["warning_messages"] = ["Retiring on 2026-12-31."]
    env = _logged_in(cli, emulate, Scenario(inventory=Inventory(models=tuple(inventory))))
    result = cli("models", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[:2] == [
        f"note from GitHub (3 models): {note}",
        "note from GitHub (a): Retiring on 2026-12-31.",
    ]
    doc = json.loads(cli("models", "--json", seam=env.seam).stdout)
    assert [m["warnings"] for m in doc["models"] if m["model_id"] != "auto"] == [
        [note, "Retiring on 2026-12-31."],
        [note],
        [note],
    ]


def test_models_json_document(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("models", "--json", seam=env.seam)
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["v"] == 1
    assert doc["provider"] == "github-copilot"
    assert doc["origin"] == "https://api.individual.githubcopilot.com"
    gpt5 = next(m for m in doc["models"] if m["model_id"] == "gpt-5-mini")
    assert gpt5 == {
        "route_id": "github-copilot/gpt-5-mini",
        "model_id": "gpt-5-mini",
        "display_name": "GPT-5 mini",
        "protocol": "openai-responses",
        "protocols": ["openai-chat", "openai-responses"],
        "url": "https://api.individual.githubcopilot.com/responses",
        "context_window": 128000,
        "max_output_tokens": 16384,
        "max_prompt_tokens": None,
        "chat_default": False,
        "input_modalities": ["text"],
        "supports_reasoning": True,
        "max_inputs": None,
        "dimensions": False,
        "picker_enabled": True,
        "warnings": [],
        "warning_codes": [],
        "billing": {
            "premium": False,
            "multiplier": 0.0,
            "prices": {
                "batch_size": 1_000_000,
                "input": 25.0,
                "output": 200.0,
                "cache": 2.5,
                "context_max": None,
                "cache_read": None,
                "cache_write": None,
                "cache_write_1h": None,
                "max_prompt_tokens": None,
                "unit": None,
                "input_per_million": 25.0,
                "output_per_million": 200.0,
                "cache_per_million": 2.5,
                "cache_read_per_million": None,
                "cache_write_per_million": None,
                "cache_write_1h_per_million": None,
                "long_context": None,
            },
            "promo": None,
        },
        "auto": None,
    }
    assert sorted((s["model_id"], s["reason"]) for s in doc["skipped"]) == [
        ("o3-disabled", "policy_not_enabled"),
        ("text-embedding-3-small", "not_chat"),
    ]
    # Copilot Auto: what it picks from and the discount on each, at the top and on its route.
    pool = ["gpt-4.1", "gpt-5-mini", "claude-messages-only"]
    assert doc["auto"] == {
        "pool": pool,
        "discounts": dict.fromkeys(pool, 0.1),
        "only": False,
        "known": True,
    }
    auto = next(m for m in doc["models"] if m["model_id"] == "auto")
    assert auto["auto"] == doc["auto"]
    assert (auto["route_id"], auto["billing"]) == ("github-copilot/auto", None)
    assert auto["protocols"] == ["anthropic-messages", "openai-chat", "openai-responses"]
    assert (auto["max_output_tokens"], auto["context_window"]) == (16384, 128000)
    assert result.stderr == ""


def test_models_not_logged_in(cli: Cli, emulate: Any) -> None:
    env = emulate()
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: not logged in: run `copilot-host login` first\n"
    as_json = cli("models", "--json", seam=env.seam)
    assert json.loads(as_json.stdout)["error"]["code"] == "not_logged_in"
    assert not env.emulator.requests  # nothing went over the wire


def test_models_with_a_damaged_record_says_to_log_in_again(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    record = CredentialStore().record_path
    record.write_bytes(b"garbage\n")
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: The credential record {record} is damaged")
    assert "log in again" in result.stderr
    as_json = cli("models", "--json", seam=env.seam)
    assert json.loads(as_json.stdout)["error"]["code"] == "store_corrupt"


def test_models_with_a_revoked_login_is_one_line(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    env.emulator.revoke_login()
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ")


def test_models_refuses_a_hostile_inventory_without_echoing_it(cli: Cli, emulate: Any) -> None:
    hostile = (chat_model("gpt-4.1", name="GPT\x1b]0;pwned\x07 4.1"),)
    env = _logged_in(cli, emulate, Scenario(inventory=Inventory(models=hostile)))
    result = cli("models", seam=env.seam)
    assert "\x1b" not in result.stdout + result.stderr
    assert "\x07" not in result.stdout + result.stderr


def test_models_with_an_empty_inventory(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, Scenario(inventory=Inventory(models=())))
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: the account's inventory lists no models; nothing was registered\n"
    )


def test_models_with_nothing_usable_still_shows_what_was_skipped(cli: Cli, emulate: Any) -> None:
    inventory = (
        chat_model("emb", kind="embeddings"),
        chat_model("ws", endpoints=["ws:/responses"]),
    )
    env = _logged_in(cli, emulate, Scenario(inventory=Inventory(models=inventory)))
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    assert [line.split()[:2] for line in result.stdout.splitlines()[1:]] == [
        ["SKIPPED", "REASON"],
        ["ws", "no_supported_protocol"],
        ["emb", "not_chat"],
    ]
    assert result.stderr.startswith("error: none of the 2 models listed can be registered")
    doc = json.loads(cli("models", "--json", seam=env.seam).stdout)
    assert doc["error"]["code"] == "no_models"
    assert {s["model_id"] for s in doc["skipped"]} == {"emb", "ws"}


def test_models_on_a_real_inventory(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, Scenario(inventory=Inventory(models=realistic_models())))
    result = cli("models", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 + REALISTIC_ROUTES
    # The billing note every entry carries is shown once, with its count.
    notes = [line for line in result.stderr.splitlines() if line.startswith("note from GitHub")]
    assert f"note from GitHub ({REALISTIC_MODELS} models): Your billing plan" in notes[0]
    assert notes[1:] == ["note from GitHub (gpt-5.6-terra): This model is in public preview."]
    assert result.stderr.splitlines()[-1].endswith("; 10 skipped (--all)")


def test_a_look_alike_id_is_shown_with_its_invisible_character_never_as_the_real_one(
    cli: Cli, emulate: Any
) -> None:
    """``gpt-4.1`` followed by U+200B is skipped (``invalid_id``) while the real
    ``gpt-4.1`` is a route: wherever the skipped one is shown, it cannot pass for it."""
    look_alike = "gpt-4.1\u200b"
    env = _logged_in(
        cli,
        emulate,
        Scenario(inventory=Inventory(models=(chat_model("gpt-4.1"), chat_model(look_alike)))),
    )
    shown = "gpt-4.1\\u200b"
    result = cli("models", "--all", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("SKIPPED")))
    assert [line.split()[:2] for line in lines[start + 1 :]] == [[shown, "invalid_id"]]
    assert look_alike not in result.stdout
    doc = json.loads(cli("models", "--json", seam=env.seam).stdout)
    assert [m["model_id"] for m in doc["models"]] == ["auto", "gpt-4.1"]
    assert [(s["model_id"], s["reason"]) for s in doc["skipped"]] == [(shown, "invalid_id")]
