"""Whose OAuth app a login authorizes: the line naming it, ``--client-id`` (and
``COPILOT_HOST_CLIENT_ID``) stored in the record and reused, a refused app and an app with
expiring user tokens leaving nothing stored; all against the loopback emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copilot_host.store import CredentialStore
from copilot_host.testing import VSCODE_CLIENT_ID, Faults, RawAnswer, Scenario, Session

from .conftest import Cli, LeakGuard

pytestmark = pytest.mark.usefixtures("copilot_home")

OWN_APP = "Ov23liOwnApp"
# The byte after the record's 24-byte magic is its format version.
VERSION_AT = len(b"copilot-host-credential\n")


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def _device_code_clients(emulator: Any) -> list[str]:
    return [r.form["client_id"] for r in emulator.requests_to("device_code")]


def test_the_login_names_the_default_app_before_the_code(cli: Cli, emulate: Any) -> None:
    env = emulate()
    result = cli("login", "--headless", "--json", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    named = lines.index(f"Authorizing OAuth app {VSCODE_CLIENT_ID} (VS Code's, the default)")
    code = next(i for i, line in enumerate(lines) if "WDJB-MJHT" in line)
    assert named < code
    device_code = _events(result.stdout)[0]
    assert device_code["event"] == "device_code"
    assert device_code["client_id"] == VSCODE_CLIENT_ID
    # The default app is not recorded: the record stays format 1, which 0.3.0 reads.
    store = CredentialStore()
    header = store.header()
    assert header is not None and header.client_id is None
    assert store.record_path.read_bytes()[VERSION_AT] == 1


def test_client_id_is_used_stored_shown_and_reused(cli: Cli, emulate: Any) -> None:
    scenario = Scenario(session=Session(copilot_client_ids=frozenset({VSCODE_CLIENT_ID, OWN_APP})))
    env = emulate(scenario)
    first = cli("login", "--headless", "--client-id", OWN_APP, seam=env.seam)
    assert first.exit_code == 0, first.stderr
    assert f"Authorizing OAuth app {OWN_APP} (given with --client-id)" in first.stderr
    assert _device_code_clients(env.emulator) == [OWN_APP]
    # The poll names the same app: GitHub issues the token to the app that asked.
    assert {r.form["client_id"] for r in env.emulator.requests_to("access_token")} == {OWN_APP}
    store = CredentialStore()
    header = store.header()
    assert header is not None and header.client_id == OWN_APP
    # A record of another app is format 2: an older copilot-host calls it newer and keeps it.
    assert store.record_path.read_bytes()[VERSION_AT] == 2
    identity, _token = store.load()  # and this version decrypts it, header verified
    assert identity.account == "octocat"

    status = cli("status", "--json")
    doc = json.loads(status.stdout)
    assert (doc["client_id"], doc["client_id_default"]) == (OWN_APP, False)
    assert f"OAuth app   {OWN_APP}\n" in cli("status").stdout

    again = cli("login", "--headless", "--force", seam=env.seam)
    assert again.exit_code == 0, again.stderr
    assert f"Authorizing OAuth app {OWN_APP} (the app of the current login)" in again.stderr
    assert _device_code_clients(env.emulator) == [OWN_APP, OWN_APP]
    header = CredentialStore().header()
    assert header is not None and header.client_id == OWN_APP


def test_the_environment_names_the_app_and_is_validated(cli: Cli, emulate: Any) -> None:
    scenario = Scenario(session=Session(copilot_client_ids=frozenset({VSCODE_CLIENT_ID, OWN_APP})))
    env = emulate(scenario)
    result = cli("login", "--headless", seam=env.seam, env={"COPILOT_HOST_CLIENT_ID": OWN_APP})
    assert result.exit_code == 0, result.stderr
    assert f"Authorizing OAuth app {OWN_APP} (given with COPILOT_HOST_CLIENT_ID)" in result.stderr
    header = CredentialStore().header()
    assert header is not None and header.client_id == OWN_APP

    bad = cli(
        "login", "--headless", "--force", seam=env.seam, env={"COPILOT_HOST_CLIENT_ID": "a b"}
    )
    assert bad.exit_code == 2
    assert "COPILOT_HOST_CLIENT_ID" in bad.stderr
    flag = cli("login", "--headless", "--force", "--client-id", "x/y", seam=env.seam)
    assert flag.exit_code == 2
    assert "--client-id" in flag.stderr
    # Neither usage error asked GitHub for anything or touched the login.
    assert len(env.emulator.requests_to("device_code")) == 1
    header = CredentialStore().header()
    assert header is not None and header.client_id == OWN_APP


def test_an_app_the_exchange_refuses_leaves_nothing_stored(cli: Cli, emulate: Any) -> None:
    env = emulate()  # the exchange accepts VS Code's app only
    result = cli("login", "--headless", "--json", "--client-id", OWN_APP, seam=env.seam)
    assert result.exit_code == 1
    error = _events(result.stdout)[-1]
    assert (error["event"], error["code"]) == ("error", "oauth_app_not_enabled")
    assert CredentialStore().header() is None
    assert not CredentialStore().record_path.exists()


def test_an_app_with_expiring_user_tokens_is_refused(
    cli: Cli, emulate: Any, leak_guard: LeakGuard
) -> None:
    access = leak_guard.canary("ghu_canaryAccessToken0123456789abcdef")
    refresh = leak_guard.canary("ghr_canaryRefreshToken0123456789abcdef")
    grant = {
        "access_token": access,
        "token_type": "bearer",
        "scope": "",
        "expires_in": 28800,
        "refresh_token": refresh,
        "refresh_token_expires_in": 15897600,
    }
    scenario = Scenario(
        faults=Faults(answers={"access_token": RawAnswer(body=json.dumps(grant).encode())})
    )
    env = emulate(scenario)
    result = cli("login", "--headless", "--json", seam=env.seam)
    assert result.exit_code == 1
    error = _events(result.stdout)[-1]
    assert error["code"] == "expiring_user_token"
    assert "Expire user authorization tokens" in error["message"]
    assert CredentialStore().header() is None
    # Refused before the token was used for anything.
    assert not env.emulator.requests_to("copilot_token")
