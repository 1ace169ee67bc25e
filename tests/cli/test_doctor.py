"""``copilot-host doctor`` through the CLI against the emulator: every check passing and
failing, the probes and their question, the JSON document, the exit statuses."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from copilot_host import Secret
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    Inventory,
    Scenario,
    Session,
    Usage,
    minimal_models,
)

from .conftest import Cli, Proc

pytestmark = pytest.mark.usefixtures("copilot_home")

FREE = [
    "store",
    "keyring",
    "login",
    "availability",
    "plan",
    "editor_identity",
    "cli_identity",
    "clock",
    "policy",
]
PROBES = ["probe_chat", "probe_responses", "probe_messages"]
MODELS = Inventory(models=minimal_models())


def _scenario(**groups: Any) -> Scenario:
    groups.setdefault("inventory", MODELS)
    return Scenario(**groups)


def _logged_in(cli: Cli, emulate: Any, scenario: Scenario | None = None, *extra: str) -> Any:
    env = emulate(scenario or _scenario())
    assert cli("login", "--headless", *extra, seam=env.seam).exit_code == 0
    return env


def _doctor(cli: Cli, env: Any, *args: str, input: str | None = None) -> tuple[int, dict[str, Any]]:
    result = cli("doctor", "--json", *args, seam=env.seam, input=input)
    document = json.loads(result.stdout)
    assert set(document) == {"v", "checks"}, document
    checks = {check["code"]: check for check in document["checks"]}
    for check in document["checks"]:
        assert set(check) == {"code", "ok", "message", "fix"}
        # A failed check says what to do; the others do not.
        assert (check["fix"] is not None) == (check["ok"] is False), check
    return result.exit_code, checks


def _failed(checks: dict[str, Any]) -> list[str]:
    return [code for code, check in checks.items() if check["ok"] is False]


# -- all passing --------------------------------------------------------------------------


def test_every_check_passes_in_order_and_the_text_is_one_line_each(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    code, checks = _doctor(cli, env)
    assert code == 0
    assert list(checks) == FREE
    assert all(check["ok"] is True for check in checks.values()), checks
    assert "octocat" in checks["login"]["message"]
    assert "vscode/1.140.0 (vscode-chat) is served" in checks["editor_identity"]["message"]
    assert "copilot/1.0.102 (copilot-developer-cli)" in checks["cli_identity"]["message"]
    text = cli("doctor", seam=env.seam)
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["ok", code] for code in FREE]
    assert "9 passed, 0 failed, 0 not checked" in text.stderr
    # Nothing was billed: no model request went out.
    assert not [r for r in env.emulator.requests if r.endpoint in ("chat", "responses", "messages")]


# -- the store and its key ------------------------------------------------------------------


def test_store_fails_on_a_damaged_record(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    CredentialStore().record_path.write_bytes(b"not a record")
    code, checks = _doctor(cli, env)
    assert code == 1
    assert checks["store"]["ok"] is False
    assert "copilot-host login" in checks["store"]["fix"]
    # What needs a readable store is not checked, and says so.
    assert all(checks[c]["ok"] is None for c in FREE[1:] if c != "login")


def test_store_fails_on_a_folder_others_can_open(
    cli: Cli, emulate: Any, copilot_home: Path
) -> None:
    env = _logged_in(cli, emulate)
    copilot_home.chmod(0o777)
    try:
        code, checks = _doctor(cli, env)
    finally:
        copilot_home.chmod(0o700)
    assert (code, checks["store"]["ok"]) == (1, False)
    assert "chmod 700" in checks["store"]["fix"]


def test_keyring_fails_when_the_keyring_lost_the_key(
    cli: Cli, emulate: Any, memory_keyring: Any
) -> None:
    env = _logged_in(cli, emulate)
    memory_keyring.items.clear()
    code, checks = _doctor(cli, env)
    assert code == 1
    assert _failed(checks) == ["keyring"]
    assert "OS keyring" in checks["keyring"]["message"]
    assert "login" in checks["keyring"]["fix"]
    assert checks["login"]["ok"] is True
    assert checks["availability"]["ok"] is None


def test_keyring_fails_when_the_key_file_is_gone(
    cli: Cli, emulate: Any, copilot_home: Path
) -> None:
    env = _logged_in(cli, emulate, None, "--key-file")
    (key,) = copilot_home.glob("credential-*.key")
    key.unlink()
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["keyring"])
    assert "key file" in checks["keyring"]["message"]


def test_login_fails_when_nobody_is_logged_in(cli: Cli, emulate: Any) -> None:
    env = emulate(_scenario())
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["login"])
    assert checks["store"]["ok"] is True
    assert checks["login"]["fix"] == "run `copilot-host login`"
    assert env.emulator.requests == ()


# -- GitHub ------------------------------------------------------------------------------


def test_availability_fails_for_a_login_github_revoked(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    env.emulator.revoke_login()
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert "no longer accepts the stored login" in checks["availability"]["message"]
    assert "login" in checks["availability"]["fix"]
    # The refusal still carried GitHub's Date: the clock is compared all the same.
    assert all(checks[c]["ok"] is None for c in FREE[4:] if c != "clock")
    assert checks["clock"]["ok"] is True


def test_availability_fails_for_an_account_whose_subscription_ended(cli: Cli, emulate: Any) -> None:
    # Logged in while the subscription ran (the record login writes, with the emulator's
    # token); it has ended since.
    env = emulate(_scenario(session=Session(entitlement="subscription_ended")))
    CredentialStore().save("octocat", Secret(env.emulator.github_token))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert "subscription of this GitHub account has ended" in checks["availability"]["message"]
    assert "github.com/settings/copilot" in checks["availability"]["fix"]


def test_plan_fails_for_a_plan_limited_to_auto(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, _scenario(usage=Usage(usage_plan="free")))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["plan"])
    assert "only Auto model selection" in checks["plan"]["message"]


def test_plan_fails_for_a_used_up_quota_without_overage(cli: Cli, emulate: Any) -> None:
    usage = Usage(quota_entitlement=300, quota_used=300, overage_permitted=False)
    env = _logged_in(cli, emulate, _scenario(usage=usage))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["plan"])
    assert "premium_interactions quota" in checks["plan"]["message"]
    assert "overage" in checks["plan"]["fix"]


def test_editor_identity_fails_below_the_floor_the_service_names(cli: Cli, emulate: Any) -> None:
    floor = Inventory(models=minimal_models(), min_client_version="1.200.0")
    old = _logged_in(cli, emulate, _scenario(inventory=floor))
    code, checks = _doctor(cli, old)
    assert (code, _failed(checks)) == (1, ["editor_identity"])
    assert "GitHub names 1.200.0 as the oldest it serves" in checks["editor_identity"]["message"]
    assert "COPILOT_HOST_EDITOR" in checks["editor_identity"]["fix"]
    # The newer identity a person can present passes, read live again.
    code, checks = _doctor_with_editor(cli, old, "vscode/1.201.0 copilot-chat/0.70.0")
    assert code == 0
    assert "(from COPILOT_HOST_EDITOR)" in checks["editor_identity"]["message"]


def _doctor_with_editor(cli: Cli, env: Any, editor: str) -> tuple[int, dict[str, Any]]:
    result = cli("doctor", "--json", seam=env.seam, env={"COPILOT_HOST_EDITOR": editor})
    checks = {check["code"]: check for check in json.loads(result.stdout)["checks"]}
    return result.exit_code, checks


def test_editor_identity_fails_when_github_calls_it_deprecated(cli: Cli, emulate: Any) -> None:
    env = _logged_in(
        cli,
        emulate,
        _scenario(inventory=Inventory(models=minimal_models(), deprecated_below="1.150.0")),
    )
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["editor_identity"])
    assert "deprecated" in checks["editor_identity"]["message"]


def test_cli_identity_fails_below_its_own_floor(cli: Cli, emulate: Any) -> None:
    env = _logged_in(
        cli,
        emulate,
        _scenario(inventory=Inventory(models=minimal_models(), min_cli_version="1.1.0")),
    )
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["cli_identity"])
    assert "GitHub names 1.1.0" in checks["cli_identity"]["message"]
    assert checks["cli_identity"]["fix"].startswith("upgrade copilot-host")


@pytest.mark.parametrize(("skew", "side"), [(3600.0, "behind"), (-3600.0, "ahead of")])
def test_clock_fails_when_this_clock_is_an_hour_off(
    cli: Cli, emulate: Any, skew: float, side: str
) -> None:
    # The emulator's clock moves: seen from here, this machine's is the one that is off.
    env = _logged_in(cli, emulate, _scenario(session=Session(clock_skew=skew)))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["clock"])
    assert f"is 1.0 h {side} GitHub's" in checks["clock"]["message"]
    assert "network time" in checks["clock"]["fix"]


def test_a_small_skew_passes(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, _scenario(session=Session(clock_skew=120.0)))
    code, checks = _doctor(cli, env)
    assert code == 0
    assert "within 2 min of GitHub's" in checks["clock"]["message"]


def test_policy_fails_when_the_organisation_refuses_both_identities(cli: Cli, emulate: Any) -> None:
    both = frozenset({"vscode-chat", "copilot-developer-cli"})
    env = _logged_in(
        cli,
        emulate,
        _scenario(inventory=Inventory(models=minimal_models(), refused_integration_ids=both)),
    )
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["policy"])
    message = checks["policy"]["message"]
    assert "VS Code's Copilot Chat (vscode-chat)" in message
    assert "the Copilot CLI (copilot-developer-cli)" in message
    assert "administrator" in checks["policy"]["fix"]
    # An identity a policy refuses is not judged for its version.
    assert checks["editor_identity"]["ok"] is None
    assert checks["cli_identity"]["ok"] is None


def test_a_policy_refusing_one_identity_passes_with_the_other(cli: Cli, emulate: Any) -> None:
    env = _logged_in(
        cli,
        emulate,
        _scenario(
            inventory=Inventory(
                models=minimal_models(), refused_integration_ids=frozenset({"vscode-chat"})
            )
        ),
    )
    code, checks = _doctor(cli, env)
    assert code == 0
    assert (
        "presents copilot/1.0.102 (copilot-developer-cli) instead"
        in checks["editor_identity"]["message"]
    )
    assert "refuses vscode/1.140.0 (vscode-chat)" in checks["policy"]["message"]


def test_policy_fails_when_the_token_answer_turns_chat_off(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, _scenario(session=Session(chat_enabled=False)))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["policy"])
    assert "chat_enabled: false" in checks["policy"]["message"]


# -- the probes ------------------------------------------------------------------------------


def _model_requests(env: Any) -> list[Any]:
    return [r for r in env.emulator.requests if r.endpoint in ("chat", "responses", "messages")]


def test_probes_pass_one_request_per_api_on_its_cheapest_model(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    code, checks = _doctor(cli, env, "--probe", "--yes")
    assert code == 0
    assert list(checks) == FREE + PROBES
    assert [checks[p]["ok"] for p in PROBES] == [True, True, True]
    sent = _model_requests(env)
    assert [(r.endpoint, r.model, r.status) for r in sent] == [
        ("chat", "gpt-5-mini", 200),
        ("responses", "gpt-5-mini", 200),
        ("messages", "claude-messages-only", 200),
    ]
    # A person's own small turn.
    assert {r.headers["x-initiator"] for r in sent} == {"user"}


def test_probes_fail_in_plain_words_for_the_integrator_refusal(cli: Cli, emulate: Any) -> None:
    served = frozenset({"gpt-4.1"})
    env = _logged_in(
        cli,
        emulate,
        _scenario(inventory=Inventory(models=minimal_models(), integrator_models=served)),
    )
    code, checks = _doctor(cli, env, "--probe", "--yes")
    assert code == 1
    assert _failed(checks) == PROBES
    message = checks["probe_chat"]["message"]
    assert 'integrator "vscode-chat"' in message
    assert "it serves gpt-4.1" in message
    assert "model the message lists" in checks["probe_chat"]["fix"]


def test_a_probe_names_the_minimum_version_the_refusal_names(cli: Cli, emulate: Any) -> None:
    floor = Inventory(models=minimal_models(), min_editor_version={"gpt-5-mini": "1.300.0"})
    env = _logged_in(cli, emulate, _scenario(inventory=floor))
    code, checks = _doctor(cli, env, "--probe", "--yes")
    assert code == 1
    assert _failed(checks) == ["probe_chat", "probe_responses"]
    assert "1.300.0 or newer" in checks["probe_chat"]["message"]
    assert checks["probe_messages"]["ok"] is True


def test_a_probe_fails_on_a_used_up_quota(cli: Cli, emulate: Any) -> None:
    env = _logged_in(
        cli, emulate, _scenario(usage=Usage(quota_exceeded_on=frozenset({"messages"})))
    )
    code, checks = _doctor(cli, env, "--probe", "--yes")
    assert (code, _failed(checks)) == (1, ["probe_messages"])
    assert "quota" in checks["probe_messages"]["message"]


def test_probes_without_a_session_are_not_checked(cli: Cli, emulate: Any) -> None:
    env = emulate(_scenario())
    code, checks = _doctor(cli, env, "--probe", "--yes")
    assert (code, _failed(checks)) == (1, ["login"])
    assert [checks[p]["ok"] for p in PROBES] == [None, None, None]
    assert "no model list" in checks["probe_chat"]["message"]
    assert env.emulator.requests == ()


def test_probes_are_asked_for_and_a_yes_sends_them(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("doctor", "--probe", seam=env.seam, input="y\n")
    assert result.exit_code == 0, result.stderr
    assert "billed like any model request" in result.stderr
    assert "Chat Completions: gpt-5-mini" in result.stderr
    assert len(_model_requests(env)) == 3


def test_probes_declined_are_not_sent_and_not_checked(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    code, checks = _doctor(cli, env, "--probe", input="n\n")
    assert code == 0
    assert [checks[p]["ok"] for p in PROBES] == [None, None, None]
    assert _model_requests(env) == []


def test_probes_with_nobody_to_ask_send_nothing_and_exit_2(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    result = cli("doctor", "--json", "--probe", seam=env.seam, input="")
    assert result.exit_code == 2
    document = json.loads(result.stdout.splitlines()[-1])
    assert document["error"]["code"] == "no_answer"
    assert "--yes" in document["error"]["message"]
    assert _model_requests(env) == []


# -- doctor's own failure, the emulator, secrets ----------------------------------------------


def test_doctor_itself_failing_exits_2(cli: Cli, emulate: Any) -> None:
    from copilot_host_cli._context import CliSeam

    env = _logged_in(cli, emulate)

    def broken(**_kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    result = cli("doctor", "--json", seam=CliSeam(host_factory=broken))
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert (error["code"], error["message"].startswith("doctor could not run")) == (
        "doctor_failed",
        True,
    )
    assert "a bug" not in result.stdout + result.stderr
    del env


@pytest.mark.slow
def test_doctor_on_the_emulator_in_a_real_process(proc: Proc, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = proc.script(
        "doctor", "--emulator", "--probe", "--json", env={"COPILOT_HOST_HOME": str(home)}
    )
    assert done.returncode == 0, done.stderr
    checks = json.loads(done.stdout)["checks"]
    assert [c["code"] for c in checks] == FREE + PROBES
    assert all(c["ok"] is True for c in checks)
    # Nothing was asked (nothing is billed) and nothing was written where a real login lives.
    assert "Send them?" not in done.stderr
    assert not home.exists() or os.listdir(home) == []
