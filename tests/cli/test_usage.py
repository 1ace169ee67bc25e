"""``copilot-host usage`` and ``COPILOT_HOST_EDITOR`` through CliRunner against the emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copilot_host.github import DEFAULT_EDITOR
from copilot_host.testing import Faults, Inventory, Scenario, Usage, minimal_models

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")

NEWER = "vscode/1.150.2 copilot-chat/0.78.1"


def _logged_in(cli: Cli, emulate: Any, scenario: Scenario | None = None) -> Any:
    env = emulate(scenario or Scenario(inventory=Inventory(models=minimal_models())))
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    return env


def test_usage_shows_each_quota_with_a_bar_and_the_reset_date(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, Scenario(usage=Usage(quota_entitlement=1500, quota_used=375)))
    result = cli("usage", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "octocat: plan individual_pro, billed in AI credits; quotas reset on "
    )
    assert lines[1].split() == ["QUOTA", "USED", "AMOUNT", "LEFT"]
    premium = next(line for line in lines if line.startswith("premium_interactions"))
    assert "[#####...............]" in premium  # a quarter used
    assert "375 used, 1,125 left of 1,500 credits" in premium
    assert premium.endswith("75.0% left")
    assert next(line for line in lines if line.startswith("chat")).endswith("unlimited")


def test_usage_json_document_has_exactly_the_documented_shape(cli: Cli, emulate: Any) -> None:
    env = _logged_in(
        cli,
        emulate,
        Scenario(
            usage=Usage(
                usage_plan="requests",
                quota_entitlement=300,
                quota_used=300,
                overage_permitted=False,
            )
        ),
    )
    result = cli("usage", "--json", seam=env.seam)
    # An exhausted quota is what the person asked to see, not a failure.
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {
        "v",
        "login",
        "plan",
        "sku",
        "auto_only",
        "unit",
        "reset_at",
        "quotas",
        "rate_windows",
        "auto",
    }
    assert doc["rate_windows"] == []
    # What Copilot Auto picks from, and the discount on each.
    pool = ["gpt-5-mini", "claude-opus-4.6", "gpt-5.3-codex"]
    assert doc["auto"] == {"pool": pool, "discounts": dict.fromkeys(pool, 0.1)}
    assert (doc["v"], doc["login"], doc["plan"], doc["unit"]) == (
        1,
        "octocat",
        "individual_pro",
        "requests",
    )
    assert doc["reset_at"].endswith("T00:00:00Z")
    premium = next(q for q in doc["quotas"] if q["id"] == "premium_interactions")
    assert premium == {
        "id": "premium_interactions",
        "entitlement": 300.0,
        "remaining": 0.0,
        "used": 300.0,
        "percent_remaining": 0.0,
        "unlimited": False,
        "overage_permitted": False,
        "overage_count": 0.0,
        "overage_in_use": False,
        "usable": False,
    }


def test_usage_says_overage_in_use_with_its_count(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, Scenario(usage=Usage(quota_entitlement=1500, quota_used=1620)))
    result = cli("usage", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    premium = next(line for line in result.stdout.splitlines() if "premium" in line)
    assert premium.endswith("0.0% left (overage in use 120 credits)")
    assert result.stdout.splitlines()[-2] == (
        "Copilot Auto picks from: gpt-5-mini (10% off), claude-opus-4.6 (10% off), "
        "gpt-5.3-codex (10% off)"
    )
    assert result.stdout.splitlines()[-1].startswith("rate-limit windows: not reported")
    doc = json.loads(cli("usage", "--json", seam=env.seam).stdout)
    quota = next(q for q in doc["quotas"] if q["id"] == "premium_interactions")
    assert (quota["remaining"], quota["overage_count"]) == (-120.0, 120.0)
    assert (quota["overage_in_use"], quota["usable"]) == (True, True)


def test_usage_says_when_a_used_up_quota_no_longer_serves(cli: Cli, emulate: Any) -> None:
    spent = _logged_in(
        cli,
        emulate,
        Scenario(usage=Usage(quota_entitlement=300, quota_used=300, overage_permitted=False)),
    )
    shown = cli("usage", seam=spent.seam).stdout
    line = next(line for line in shown.splitlines() if "premium" in line)
    assert line.endswith("0.0% left (used up; no overage on this plan)")


def test_usage_not_logged_in_exits_1_and_sends_nothing(cli: Cli, emulate: Any) -> None:
    env = emulate()
    result = cli("usage", seam=env.seam)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "error: not logged in: run `copilot-host login` first\n"
    as_json = cli("usage", "--json", seam=env.seam)
    assert json.loads(as_json.stdout)["error"]["code"] == "not_logged_in"
    assert not env.emulator.requests


def test_editor_override_reaches_every_request_but_the_api_version(cli: Cli, emulate: Any) -> None:
    env = emulate(Scenario(inventory=Inventory(models=minimal_models())))
    environ = {"COPILOT_HOST_EDITOR": NEWER}
    assert cli("login", "--headless", seam=env.seam, env=environ).exit_code == 0
    assert cli("models", seam=env.seam, env=environ).exit_code == 0
    assert cli("usage", seam=env.seam, env=environ).exit_code == 0
    seen = [
        r
        for r in env.emulator.requests
        if r.endpoint in ("copilot_token", "models", "copilot_user")
    ]
    assert {r.endpoint for r in seen} == {"copilot_token", "models", "copilot_user"}
    for request in seen:
        assert request.headers["editor-version"] == "vscode/1.150.2"
        assert request.headers["editor-plugin-version"] == "copilot-chat/0.78.1"
        assert request.headers["user-agent"].startswith("GitHubCopilotChat/0.78.1 copilot-host/")
    models = env.emulator.requests_to("models")[-1]
    assert models.headers["x-github-api-version"] == DEFAULT_EDITOR.api_version


@pytest.mark.parametrize(
    "value",
    [
        "vscode/1.150.2",
        "copilot-chat/0.78.1 vscode/1.150.2",
        "vscode/1.150.2 copilot-chat/0.78.1 extra",
        "vscode/latest copilot-chat/0.78.1",
        "vscode/1.150.2\ncopilot-chat/0.78.1",
    ],
)
@pytest.mark.parametrize("command", ["login", "models", "usage", "serve"])
def test_a_malformed_override_is_a_usage_error_naming_the_variable(
    cli: Cli, emulate: Any, value: str, command: str
) -> None:
    env = emulate()
    extra = ("--headless",) if command == "login" else ()
    result = cli(command, *extra, seam=env.seam, env={"COPILOT_HOST_EDITOR": value})
    assert result.exit_code == 2
    assert "COPILOT_HOST_EDITOR" in result.stderr
    assert not env.emulator.requests


def test_status_ignores_the_override(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("status", seam=env.seam, env={"COPILOT_HOST_EDITOR": "nonsense"})
    assert result.exit_code == 0, result.stderr


def test_models_tells_a_deprecated_client_once_what_to_do(cli: Cli, emulate: Any) -> None:
    scenario = Scenario(inventory=Inventory(models=minimal_models(), deprecated_below="1.150.0"))
    env = _logged_in(cli, emulate, scenario)
    result = cli("models", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert len(notes) == 1
    assert "upgrade copilot-host" in notes[0] and "COPILOT_HOST_EDITOR" in notes[0]
    listed = cli("models", "--json", seam=env.seam)
    doc = json.loads(listed.stdout)
    assert "models" in doc, (doc, listed.stderr)
    named = [m for m in doc["models"] if m["model_id"] != "auto"]
    assert all(m["warning_codes"] == ["client_version_deprecated"] for m in named)
    assert all(len(m["warnings"]) == len(m["warning_codes"]) for m in doc["models"])
    # Presenting a current identity is what makes the notice go away.
    current = cli("models", seam=env.seam, env={"COPILOT_HOST_EDITOR": NEWER})
    assert "deprecated" not in current.stderr


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", "lots"])
def test_serve_refuses_a_budget_that_is_not_a_positive_number(
    cli: Cli, emulate: Any, value: str
) -> None:
    env = emulate()
    result = cli("serve", "--port", "0", "--max-credits", value, seam=env.seam)
    assert result.exit_code == 2
    assert "--max-credits" in result.stderr
    assert not env.emulator.requests


AUTO_ONLY = (
    "this plan (free) can use only Auto model selection; requests that name a model are refused: "
    "use the model auto"
)


def test_a_plan_that_can_use_only_auto_is_said_by_login_models_and_usage(
    cli: Cli, emulate: Any
) -> None:
    """Copilot Free (``access_type_sku`` ``free_limited_copilot``, ``copilot_plan``
    ``free``): one line, the same in each command; ``--json`` documents carry it."""
    env = emulate(
        Scenario(inventory=Inventory(models=minimal_models()), usage=Usage(usage_plan="free"))
    )
    login = cli("login", "--headless", seam=env.seam)
    assert login.exit_code == 0
    assert AUTO_ONLY in login.stderr
    usage = cli("usage", seam=env.seam)
    assert usage.stdout.splitlines()[1] == AUTO_ONLY
    doc = json.loads(cli("usage", "--json", seam=env.seam).stdout)
    assert (doc["sku"], doc["auto_only"]) == ("free_limited_copilot", True)
    listed = cli("models", seam=env.seam)
    assert listed.exit_code == 0
    assert f"warning: {AUTO_ONLY}" in listed.stderr
    assert json.loads(cli("models", "--json", seam=env.seam).stdout)["auto_only"] == AUTO_ONLY


def test_other_plans_get_no_auto_only_line(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    assert "Auto model selection" not in cli("usage", seam=env.seam).stdout
    assert json.loads(cli("models", "--json", seam=env.seam).stdout)["auto_only"] is None
    doc = json.loads(cli("usage", "--json", seam=env.seam).stdout)
    assert (doc["sku"], doc["auto_only"]) == ("plus_monthly_subscriber_quota", False)


def test_usage_shows_a_rate_window_its_answer_reported(cli: Cli, emulate: Any) -> None:
    from copilot_host.testing import RawAnswer

    answer = RawAnswer(
        body=json.dumps({"login": "octocat", "copilot_plan": "individual_pro"}).encode(),
        headers=(
            ("Content-Type", "application/json"),
            ("x-usage-ratelimit-weekly", "ent=500&rem=25.0&rst=2026-12-07T00%3A00%3A00Z"),
        ),
    )
    env = _logged_in(
        cli,
        emulate,
        Scenario(
            inventory=Inventory(models=minimal_models()),
            faults=Faults(answers={"copilot_user": answer}),
        ),
    )
    result = cli("usage", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("weekly window")]
    assert "[###############.....]" in row
    assert "entitlement 500; resets 2026-12-07 00:00 UTC" in row
    assert row.endswith("25.0% left")
    assert "not reported" not in result.stdout
    doc = json.loads(cli("usage", "--json", seam=env.seam).stdout)
    assert doc["rate_windows"] == [
        {
            "id": "weekly",
            "entitlement": 500.0,
            "percent_remaining": 25.0,
            "reset_at": "2026-12-07T00:00:00Z",
        }
    ]
