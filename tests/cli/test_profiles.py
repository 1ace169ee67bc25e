"""The agent profiles of ``copilot-host run`` (cli/_profiles.py), as pure functions."""

from __future__ import annotations

import pytest
from copilot_host_cli._profiles import PROFILES, codex_model, names_a_model, profile_for

BASE = "http://127.0.0.1:4141/v1"


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "gpt-5.5"],
        ["exec", "--model", "gpt-5.5", "hi"],
        ["exec", "--model=gpt-5.5"],
        ["-p", "work"],
        ["--profile", "work"],
        ["--profile=work"],
        ["-c", "model=gpt-5.5"],
        ["-c", ' model = "gpt-5.5"'],
        ["--config", "model=gpt-5.5"],
        ["--config=model=gpt-5.5"],
        ["-cmodel=gpt-5.5"],
    ],
)
def test_arguments_that_name_a_model(args: list[str]) -> None:
    assert names_a_model(args)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["exec", "--skip-git-repo-check", "hi"],
        ["-c", "model_reasoning_effort=high"],
        ["-c"],
        ["--config=sandbox=read-only"],
        ["exec", "--", "-m", "is the prompt"],
        ["-cmodel_provider=x"],
    ],
)
def test_arguments_that_do_not(args: list[str]) -> None:
    assert not names_a_model(args)


def test_profiles_are_chosen_by_the_commands_file_name() -> None:
    assert profile_for("codex") is PROFILES["codex"]
    assert profile_for("/usr/local/bin/codex") is PROFILES["codex"]
    assert profile_for("codex-wrapper") is None
    assert profile_for("claude") is None


def test_codex_gets_its_provider_first_and_a_model_only_when_none_is_named() -> None:
    asked: list[str] = []

    def model() -> str | None:
        asked.append("asked")
        return "gpt-5.3-codex"

    arguments = PROFILES["codex"].arguments
    added = arguments(["exec", "hi"], BASE, model)
    assert added[-2:] == ["exec", "hi"]
    settings = added[1:-2:2]
    assert added[0:-2:2] == ["-c"] * len(settings)
    assert settings == [
        'model_providers.copilot-host.name="copilot-host"',
        f'model_providers.copilot-host.base_url="{BASE}"',
        'model_providers.copilot-host.wire_api="responses"',
        'model_providers.copilot-host.env_key="COPILOT_HOST_API_KEY"',
        'model_provider="copilot-host"',
        'model="gpt-5.3-codex"',
    ]
    assert asked == ["asked"]
    added = arguments(["exec", "-m", "gpt-5.5", "hi"], BASE, model)
    assert 'model="gpt-5.3-codex"' not in added
    assert asked == ["asked"]  # not even asked
    # No model to be had (no login yet): codex keeps its own choice.
    added = arguments(["exec", "hi"], BASE, lambda: None)
    assert not any(a.startswith("model=") for a in added)


def test_the_model_codex_gets() -> None:
    models = [
        ("gpt-4.1", ["/v1/chat/completions"]),
        ("gpt-5.10", ["/v1/responses"]),
        ("gpt-5.9", ["/v1/responses"]),
        ("gpt-5.3-codex", ["/v1/responses"]),
        ("gpt-5.4-codex-max", ["/v1/responses"]),
        ("gpt-5.6-codex", ["/v1/chat/completions"]),  # does not speak Responses
    ]
    assert codex_model(models, None) == "gpt-5.4-codex-max"
    assert codex_model(models, "gpt-4.1") == "gpt-4.1"
    # No codex model: the newest gpt- one, numbers compared as numbers.
    assert codex_model(models[:3], None) == "gpt-5.10"
    # Equals: the first listed.
    assert codex_model(
        [("gpt-5.1-a", ["/v1/responses"]), ("gpt-5.1-b", ["/v1/responses"])], None
    ) == ("gpt-5.1-a")
    assert codex_model([("claude-opus-5", ["/v1/messages"])], None) is None
    assert codex_model([], None) is None
