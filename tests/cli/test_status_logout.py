"""status and logout through CliRunner, on a real store in the test's home."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from copilot_host import Secret
from copilot_host.store import CredentialStore

from .conftest import Cli, LeakGuard, canary_token


def _save(guard: LeakGuard, account: str = "octocat", *, key_file: bool = False) -> None:
    token = guard.canary(canary_token())
    CredentialStore().save(account, Secret(token), key_file=key_file)


def test_status_logged_out_exits_1_with_a_hint(cli: Cli, copilot_home: Path) -> None:
    result = cli("status")
    assert result.exit_code == 1
    assert result.stdout == "Not logged in.\n"
    assert "copilot-host login" in result.stderr


def test_status_logged_in_shows_account_time_protection_and_store(
    cli: Cli, leak_guard: LeakGuard, copilot_home: Path
) -> None:
    _save(leak_guard)
    result = cli("status")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Logged in to GitHub as octocat"
    assert "just now" in lines[1]
    assert lines[2] == "  OAuth app   Iv1.b507a08c87ecfe98 (VS Code's, the default)"
    assert "OS keyring (MemoryKeyring)" in lines[3]
    assert str(copilot_home / "credential") in lines[4]
    assert result.stderr == ""


def test_status_json_logged_in(cli: Cli, leak_guard: LeakGuard, copilot_home: Path) -> None:
    _save(leak_guard, key_file=True)
    result = cli("status", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    header = CredentialStore().header()
    assert header is not None
    assert doc == {
        "v": 1,
        "logged_in": True,
        "account": "octocat",
        "login_id": header.login_id,
        "logged_in_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(header.created_at))),
        "protection": {"kind": "key-file", "backend": header.protection.backend},
        "client_id": "Iv1.b507a08c87ecfe98",
        "client_id_default": True,
        "store": str(copilot_home / "credential"),
        "home": str(copilot_home),
        "set_aside": [],
    }
    assert Path(doc["protection"]["backend"]).parent == copilot_home


def test_status_json_logged_out_exits_1(cli: Cli, copilot_home: Path) -> None:
    result = cli("status", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "v": 1,
        "logged_in": False,
        "store": str(copilot_home / "credential"),
        "home": str(copilot_home),
        "set_aside": [],
    }
    assert result.stderr == ""


def test_status_needs_no_keyring(
    cli: Cli, leak_guard: LeakGuard, memory_keyring: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _save(leak_guard)
    import keyring

    class Exploding(type(memory_keyring)):  # type: ignore[misc]
        def get_password(self, service: str, username: str) -> str | None:
            raise AssertionError("status touched the keyring")

    keyring.set_keyring(Exploding())
    result = cli("status")
    assert result.exit_code == 0


def test_status_sanitizes_a_hostile_account_label(cli: Cli, leak_guard: LeakGuard) -> None:
    # The header is read without authentication: whatever is in it must not drive the
    # terminal. The store refuses such labels on save, so plant one by hand.
    _save(leak_guard, "octocat")
    store = CredentialStore()
    raw = store.record_path.read_bytes()
    hostile = raw.replace(b"octocat", b"octo\x1b[2J")
    if hostile == raw:
        pytest.fail("the record layout changed: the label is not stored as plain bytes")
    os.chmod(store.record_path, 0o600)
    store.record_path.write_bytes(hostile)
    result = cli("status")
    assert "\x1b" not in result.stdout + result.stderr


def test_status_insecure_home_is_one_error_line(cli: Cli, copilot_home: Path) -> None:
    copilot_home.chmod(0o755)
    result = cli("status")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ")
    assert "chmod 700" in result.stderr


def test_status_json_error_goes_to_stdout_as_a_document(cli: Cli, copilot_home: Path) -> None:
    copilot_home.chmod(0o755)
    result = cli("status", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["v"] == 1
    assert doc["error"]["code"] == "store_insecure"
    assert doc["error"]["retryable"] is False
    assert "chmod 700" in doc["error"]["message"]


def test_logout_removes_record_and_key_and_points_to_revocation(
    cli: Cli, leak_guard: LeakGuard, memory_keyring: object
) -> None:
    _save(leak_guard)
    assert memory_keyring.items  # type: ignore[attr-defined]
    result = cli("logout")
    assert result.exit_code == 0
    assert result.stdout == "Logged out (octocat): removed the local credential and its key.\n"
    assert "does not revoke" in result.stderr
    assert "https://github.com/settings/applications" in result.stderr
    assert CredentialStore().header() is None
    assert not memory_keyring.items  # type: ignore[attr-defined]
    assert cli("status").exit_code == 1


def test_logout_is_idempotent(cli: Cli) -> None:
    first = cli("logout")
    second = cli("logout")
    for result in (first, second):
        assert result.exit_code == 0
        assert result.stdout == "Already logged out: nothing to remove.\n"
        assert "https://github.com/settings/applications" in result.stderr


def test_logout_key_file_login(cli: Cli, leak_guard: LeakGuard, copilot_home: Path) -> None:
    _save(leak_guard, key_file=True)
    assert list(copilot_home.glob("*.key"))
    result = cli("logout")
    assert result.exit_code == 0
    assert not list(copilot_home.glob("*.key"))


def test_status_and_logout_mention_a_set_aside_record(
    cli: Cli, leak_guard: LeakGuard, memory_keyring: object
) -> None:
    from copilot_host import StoreCorruptError

    _save(leak_guard)
    store = CredentialStore()
    blob = bytearray(store.record_path.read_bytes())
    blob[-1] ^= 0xFF  # break the authentication tag
    store.record_path.write_bytes(bytes(blob))
    with pytest.raises(StoreCorruptError):
        store.load()
    aside = store.set_aside()
    assert aside
    status = cli("status")
    assert status.exit_code == 1
    assert str(aside[0]) in status.stderr
    assert "set aside" in status.stderr
    doc = json.loads(cli("status", "--json").stdout)
    assert doc["set_aside"] == [str(p) for p in aside]
    logout = cli("logout")
    assert logout.exit_code == 0
    assert str(aside[0]) in logout.stderr


def _plant_damaged_record(home: Path) -> Path:
    record = home / "credential"
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"garbage\n")
    finally:
        os.close(fd)
    return record


def test_status_reports_a_damaged_record_as_a_state(cli: Cli, copilot_home: Path) -> None:
    record = _plant_damaged_record(copilot_home)
    result = cli("status")
    assert result.exit_code == 1
    assert result.stdout == "Not logged in: the stored login record is damaged.\n"
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ")
    assert str(record) in result.stderr
    assert "log in again" in result.stderr
    as_json = cli("status", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {
        "v": 1,
        "logged_in": False,
        "damaged": True,
        "store": str(record),
        "home": str(copilot_home),
        "set_aside": [],
    }
    assert record.read_bytes() == b"garbage\n"  # status only looks


def test_logout_sets_a_damaged_record_aside_and_succeeds(cli: Cli, copilot_home: Path) -> None:
    record = _plant_damaged_record(copilot_home)
    result = cli("logout")
    assert result.exit_code == 0, result.stderr
    aside = CredentialStore().set_aside()
    assert [p.read_bytes() for p in aside] == [b"garbage\n"]
    assert result.stdout == f"Logged out: moved the damaged login record aside to {aside[0]}.\n"
    assert not record.exists()
    assert cli("logout").stdout == "Already logged out: nothing to remove.\n"
    status = cli("status", "--json")
    assert json.loads(status.stdout)["set_aside"] == [str(aside[0])]
    assert "damaged" not in json.loads(status.stdout)


def test_logout_with_no_folder_creates_nothing(cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "never-made"
    result = cli("logout", env={"COPILOT_HOST_HOME": str(home)})
    assert result.exit_code == 0
    assert result.stdout == "Already logged out: nothing to remove.\n"
    assert not home.exists()


@pytest.mark.parametrize("below", [False, True], ids=["home-is-a-file", "parent-is-a-file"])
def test_a_file_in_the_way_is_the_same_error_for_every_command(
    cli: Cli, tmp_path: Path, below: bool
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    env = {"COPILOT_HOST_HOME": str(blocker / "home" if below else blocker)}
    lines = set()
    for args in (("status", "--json"), ("models", "--json"), ("logout",)):
        result = cli(*args, env=env)
        assert result.exit_code == 1, args
        last = result.stderr.splitlines()[-1]
        assert last.startswith("error: "), args
        lines.add(last)
        if "--json" in args:
            assert json.loads(result.stdout)["error"]["code"] == "store_insecure"
    assert len(lines) == 1, lines
    (line,) = lines
    assert str(blocker) in line and "COPILOT_HOST_HOME" in line


def test_models_in_a_symlink_loop_is_a_store_error_not_an_internal_one(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "loop").symlink_to("loop")
    env = {"COPILOT_HOST_HOME": str(tmp_path / "loop" / "home")}
    for args in (("models", "--json"), ("status", "--json")):
        result = cli(*args, env=env)
        assert result.exit_code == 1
        assert json.loads(result.stdout)["error"]["code"] == "store_io", args
