"""The two refusals by policy in plain words on every command that can meet them: ``login``
(the exchange), ``models`` (discovery) and ``usage`` (the usage lookup), as one stderr line
and as the ``--json`` error code (``policy_refused``, ``integrator_refused``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copilot_host.testing import Faults, Inventory, Scenario, Session, minimal_models
from tests._refusals import INTEGRATOR, POLICY

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")

REFUSALS = {"policy_refused": POLICY, "integrator_refused": INTEGRATOR}
# What each code's words must say: what is refused, and who can do what about it.
WORDS = {
    "policy_refused": ("Copilot policy does not allow", "an administrator can allow it"),
    "integrator_refused": ('integrator "vscode-chat"', "gpt-4.1, claude-opus-4.7, gpt-5.5"),
}
MODELS = Inventory(models=minimal_models())


def _error(result: Any) -> dict[str, Any]:
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    found = lines[-1]
    return dict(found["error"]) if "error" in found else dict(found)


def _says(code: str, text: str) -> None:
    for words in WORDS[code]:
        assert words in text, (code, text)


@pytest.mark.parametrize("code", sorted(REFUSALS))
def test_login_says_it_plainly(cli: Cli, emulate: Any, code: str) -> None:
    env = emulate(Scenario(faults=Faults(answers={"copilot_token": REFUSALS[code]})))
    result = cli("login", "--headless", "--json", seam=env.seam)
    assert result.exit_code == 1
    error = _error(result)
    assert error["code"] == code
    _says(code, error["message"])
    _says(code, result.stderr)


@pytest.mark.parametrize("command", ["models", "usage"])
@pytest.mark.parametrize("code", sorted(REFUSALS))
def test_models_and_usage_say_it_plainly(cli: Cli, emulate: Any, command: str, code: str) -> None:
    endpoint = {"models": "models", "usage": "copilot_user"}[command]
    refusing = emulate(
        Scenario(inventory=MODELS, faults=Faults(answers={endpoint: REFUSALS[code]}))
    )
    assert cli("login", "--headless", seam=refusing.seam).exit_code == 0
    result = cli(command, "--json", seam=refusing.seam)
    assert result.exit_code == 1
    error = _error(result)
    assert error["code"] == code
    _says(code, error["message"])
    assert "error: " in result.stderr


def test_models_names_the_identity_an_organisation_refuses(cli: Cli, emulate: Any) -> None:
    """The emulator's own rule, not a scripted answer: the policy refuses the chat identity
    on the individual host (no fallback there)."""
    refused = Inventory(models=minimal_models(), refused_integration_ids=frozenset({"vscode-chat"}))
    env = emulate(Scenario(inventory=refused))
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    result = cli("models", seam=env.seam)
    assert result.exit_code == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: Copilot model discovery was refused: ")
    assert "does not allow VS Code's Copilot Chat (vscode-chat)" in line
    assert "HTTP 403" not in line


def test_models_names_both_identities_after_the_fallback(cli: Cli, emulate: Any) -> None:
    both = frozenset({"vscode-chat", "copilot-developer-cli"})
    scenario = Scenario(
        session=Session(api_endpoint="https://api.business.githubcopilot.com"),
        inventory=Inventory(models=minimal_models(), refused_integration_ids=both),
    )
    env = emulate(scenario)
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    result = cli("models", "--json", seam=env.seam)
    error = _error(result)
    assert error["code"] == "policy_refused"
    assert "either client identity copilot-host presents" in error["message"]
    assert "the Copilot CLI (copilot-developer-cli)" in error["message"]
    assert len(env.emulator.requests_to("models")) == 2
