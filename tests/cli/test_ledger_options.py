"""``--ledger``, ``--no-ledger`` and ``--max-credits-per-day`` of ``serve`` and ``run``:
what is refused before anything starts, and a ledger that cannot work here (no WAL), said
once when recording is only a record and refused when a daily budget must be counted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from copilot_host.gateway._ledger import _file
from tests.cli.conftest import Cli

COMMAND = ["--", sys.executable, "-c", "raise SystemExit(3)"]


@pytest.mark.parametrize("command", ["serve", "run"])
@pytest.mark.parametrize("value", ["0", "-1.5", "nan", "inf"])
def test_a_daily_budget_that_is_not_a_positive_number_is_refused(
    cli: Cli, copilot_home: Path, command: str, value: str
) -> None:
    extra = COMMAND if command == "run" else []
    result = cli(command, "--emulator", f"--max-credits-per-day={value}", *extra)
    assert result.exit_code == 2
    assert "a positive number of AI credits, e.g. 50 or 7.5" in result.stderr
    assert list(copilot_home.iterdir()) == []


@pytest.mark.parametrize("command", ["serve", "run"])
def test_a_ledger_and_no_ledger_together_are_refused(
    cli: Cli, tmp_path: Path, command: str
) -> None:
    named = tmp_path / "spend.sqlite3"
    extra = COMMAND if command == "run" else []
    result = cli(command, "--emulator", "--ledger", str(named), "--no-ledger", *extra)
    assert result.exit_code == 2
    assert "--ledger and --no-ledger: give one of them" in result.stderr
    assert not named.exists()


@pytest.fixture
def no_wal(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's no-locking VFS, which cannot keep a WAL (as on a file system without
    shared memory)."""
    monkeypatch.setattr(_file, "_URI_OPTIONS", "mode=rw&vfs=unix-none")


@pytest.mark.usefixtures("no_wal")
def test_a_ledger_that_cannot_work_here_is_said_once_and_the_command_runs(
    cli: Cli, tmp_path: Path
) -> None:
    named = tmp_path / "spend.sqlite3"
    log = tmp_path / "run.log"
    result = cli("run", "--emulator", "--ledger", str(named), "--log", str(log), *COMMAND)
    assert result.exit_code == 3, result.stderr
    # Under run the terminal is the command's: the line goes to the log file.
    assert result.stderr == ""
    said = [line for line in log.read_text().splitlines() if "WAL" in line]
    assert len(said) == 1
    assert f"SQLite cannot keep the ledger {named} in WAL mode" in said[0]
    assert "the ledger is off" in said[0]


@pytest.mark.usefixtures("no_wal")
def test_a_daily_budget_a_ledger_that_cannot_work_here_cannot_count_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    named = tmp_path / "spend.sqlite3"
    ran = tmp_path / "ran"
    command = ["--", sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    result = cli(
        "run", "--emulator", "--ledger", str(named), "--max-credits-per-day", "5", *command
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: --max-credits-per-day needs the ledger, which is off: SQLite cannot keep "
    )
    assert len(result.stderr.splitlines()) == 1
    assert not ran.exists()  # refused before the command started
