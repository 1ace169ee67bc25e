"""``copilot-host usage --history`` through the real CLI: offline, logged out, UTC days."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from copilot_host_cli._context import CliSeam

from copilot_host.gateway._ledger import LEDGER_NAME, End
from tests.cli.conftest import Cli, Proc

from ._support import DAY, NOON, begun, clock_at, ledger_at, newer_ledger, start

# (days before NOON, agent, api, model asked, model, credits, how it ended)
SEEDED = [
    (40, "codex", "responses", "gpt-5", "gpt-5", 0.5, 200),
    (2, "claude-code", "messages", "sonnet", "claude-sonnet-4.5", 0.25, 200),
    (1, "claude-code", "messages", "sonnet", "claude-sonnet-4.5", 0.125, 200),
    (1, "aider", "chat", "gpt-4.1", "gpt-4.1", None, 429),
    (0, "codex", "responses", "gpt-5", "gpt-5", 0.0625, 200),
    (0, "claude-code", "messages", "haiku", "claude-haiku-4.5", None, None),  # in flight
]


def _seed(path: Path, *, now: float = NOON) -> str:
    """The rows above, recorded by one run that is then closed (so the last one is
    interrupted, holding its reservation of 0.5)."""
    with ledger_at(path, clock=clock_at(now)) as ledger:
        for days, agent, api, asked, model, credits, status in SEEDED:
            row = begun(
                ledger,
                start(
                    time=now - days * DAY,
                    agent=agent,
                    api=api,
                    model_asked=asked,
                    model=model,
                    reserved=0.5,
                    rewrote=("max_tokens",) if api == "chat" else (),
                ),
            )
            if status is not None:
                ledger.end(End(row, status, 100, 20, 0, credits, False, 1500))
        return ledger.run_id


def _at_noon() -> CliSeam:
    return CliSeam(clock=clock_at())


def _json(cli: Cli, *args: str, env: dict[str, str | None] | None = None) -> Any:
    result = cli("usage", "--history", "--json", *args, seam=_at_noon(), env=env)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_json_rows_hold_exactly_the_documented_fields(cli: Cli, copilot_home: Path) -> None:
    run_id = _seed(copilot_home / LEDGER_NAME)
    doc = _json(cli)
    assert set(doc) == {"v", "rows", "total"}
    assert doc["v"] == 1
    # The default is 30 UTC days: the row 40 days old is not in it.
    assert len(doc["rows"]) == len(SEEDED) - 1
    first = doc["rows"][0]
    assert first == {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOON - 2 * DAY)),
        "run_id": run_id,
        "agent": "claude-code",
        "api": "messages",
        "model_asked": "sonnet",
        "model": "claude-sonnet-4.5",
        "status": 200,
        "input_tokens": 100,
        "output_tokens": 20,
        "cached_tokens": 0,
        "credits": 0.25,
        "credits_estimated": False,
        "duration_ms": 1500,
        "rewrote": [],
    }
    assert first["time"].endswith("T12:00:00Z")
    statuses = [row["status"] for row in doc["rows"]]
    assert statuses == [200, 200, 429, 200, "interrupted"]
    aider = doc["rows"][2]
    assert (aider["credits"], aider["rewrote"]) == (None, ["max_tokens"])
    interrupted = doc["rows"][-1]
    assert (interrupted["credits"], interrupted["credits_estimated"]) == (0.5, True)
    assert interrupted["duration_ms"] is None
    assert doc["total"] == {"requests": 5, "credits": 0.25 + 0.125 + 0.0625 + 0.5}


def test_since_takes_days_or_a_utc_date(cli: Cli, copilot_home: Path) -> None:
    _seed(copilot_home / LEDGER_NAME)
    assert _json(cli, "--since", "1d")["total"]["requests"] == 2  # today only
    assert _json(cli, "--since", "2d")["total"]["requests"] == 4
    assert _json(cli, "--since", "41d")["total"]["requests"] == 6
    day = time.strftime("%Y-%m-%d", time.gmtime(NOON - DAY))
    assert _json(cli, "--since", day)["total"]["requests"] == 4
    for bad in ("0d", "yesterday", "2026-02-30", "7"):
        result = cli("usage", "--history", "--since", bad, seam=_at_noon())
        assert result.exit_code == 2, bad
        assert "--since" in result.stderr


@pytest.mark.parametrize(
    ("by", "keys"),
    [
        ("day", [time.strftime("%Y-%m-%d", time.gmtime(NOON - d * DAY)) for d in (2, 1, 0)]),
        ("agent", ["claude-code", "codex", "aider"]),
        ("model", ["claude-haiku-4.5", "claude-sonnet-4.5", "gpt-5", "gpt-4.1"]),
    ],
)
def test_by_groups_totals_per_key(cli: Cli, copilot_home: Path, by: str, keys: list[str]) -> None:
    _seed(copilot_home / LEDGER_NAME)
    doc = _json(cli, "--by", by)
    assert set(doc) == {"v", "groups", "total"}
    assert [group["key"] for group in doc["groups"]] == keys
    assert set(doc["groups"][0]) == {"key", "requests", "credits", "input_tokens", "output_tokens"}
    assert sum(group["requests"] for group in doc["groups"]) == doc["total"]["requests"] == 5
    assert sum(group["credits"] for group in doc["groups"]) == doc["total"]["credits"]


def test_by_run_and_the_tables_for_people(cli: Cli, copilot_home: Path) -> None:
    run_id = _seed(copilot_home / LEDGER_NAME)
    doc = _json(cli, "--by", "run")
    assert doc["groups"] == [
        {"key": run_id, "requests": 5, "credits": 0.9375, "input_tokens": 400, "output_tokens": 80}
    ]
    grouped = cli("usage", "--history", "--by", "day", seam=_at_noon())
    assert grouped.exit_code == 0, grouped.stderr
    lines = grouped.stdout.splitlines()
    assert lines[0].split() == ["DAY", "(UTC)", "REQUESTS", "CREDITS", "INPUT", "OUTPUT"]
    today = time.strftime("%Y-%m-%d", time.gmtime(NOON))
    assert lines[3].split() == [today, "2", "0.5625", "100", "20"]
    assert lines[-1].startswith("5 model requests since ")
    assert lines[-1].endswith("(UTC): 0.9375 (0.5 estimated, marked ~) AI credits")
    rows = cli("usage", "--history", seam=_at_noon())
    assert rows.exit_code == 0
    lines = rows.stdout.splitlines()
    assert lines[0].split()[:3] == ["TIME", "(UTC)", "AGENT"]
    assert "haiku->claude-haiku-4.5" in lines[-2]
    assert "interrupted" in lines[-2] and "~0.5" in lines[-2]


def test_a_missing_ledger_is_an_empty_history_and_says_so(cli: Cli, copilot_home: Path) -> None:
    result = cli("usage", "--history", "--json", seam=_at_noon())
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"v": 1, "rows": [], "total": {"requests": 0, "credits": 0}}
    assert f"No ledger at {copilot_home / LEDGER_NAME} yet" in result.stderr
    people = cli("usage", "--history", seam=_at_noon())
    assert people.stdout.startswith("No model requests recorded since ")
    assert not (copilot_home / LEDGER_NAME).exists()


def test_a_newer_ledger_is_a_typed_error(cli: Cli, copilot_home: Path) -> None:
    newer_ledger(copilot_home / LEDGER_NAME)
    result = cli("usage", "--history", "--json", seam=_at_noon())
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert (error["code"], error["retryable"]) == ("ledger_version", False)
    assert "newer copilot-host" in result.stderr


def test_the_file_comes_from_ledger_then_the_variable(
    cli: Cli, copilot_home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "spend.sqlite3"
    _seed(elsewhere)
    named = _json(cli, "--ledger", str(elsewhere))
    assert named["total"]["requests"] == 5
    assert _json(cli, env={"COPILOT_HOST_LEDGER": str(elsewhere)})["total"]["requests"] == 5
    # Recording off still reads what the default ledger holds, and says so.
    result = cli("usage", "--history", seam=_at_noon(), env={"COPILOT_HOST_LEDGER": "off"})
    assert result.exit_code == 0
    assert "COPILOT_HOST_LEDGER=off: serve and run record nothing now" in result.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    refused = cli("usage", "--history", "--json", "--ledger", str(fifo), seam=_at_noon())
    assert refused.exit_code == 1
    assert json.loads(refused.stdout)["error"]["code"] == "ledger_insecure"


def test_history_options_go_with_history_only(cli: Cli) -> None:
    for args in (("--since", "7d"), ("--by", "day"), ("--ledger", "x.sqlite3")):
        result = cli("usage", *args)
        assert result.exit_code == 2
        assert "only with --history" in result.stderr
    assert cli("usage", "--history", "--by", "week").exit_code == 2


def test_a_real_process_reads_it_offline_and_logged_out(proc: Proc, tmp_path: Path) -> None:
    """No credential, no keyring, and any network attempt would fail (a proxy that does
    not exist): the history still answers."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    _seed(home / LEDGER_NAME, now=time.time())
    env = {
        "COPILOT_HOST_HOME": str(home),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
    }
    done = proc.script("usage", "--history", "--json", "--by", "agent", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["total"]["requests"] == 5
    assert sorted(home.iterdir()) == [home / LEDGER_NAME, home / f"{LEDGER_NAME}-runs"]


def test_logout_keeps_the_ledger_and_says_where_it_is(cli: Cli, copilot_home: Path) -> None:
    path = copilot_home / LEDGER_NAME
    _seed(path)
    before = path.read_bytes()
    result = cli("logout")
    assert result.exit_code == 0
    assert f"The ledger of model requests is kept at {path}" in result.stderr
    assert path.read_bytes() == before
    # Without a ledger, logout says nothing of one.
    path.unlink()
    assert "ledger" not in cli("logout").stderr


def test_the_json_sqlite_makes_is_the_json_python_makes(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row's JSON comes from SQLite when it has JSON functions, else from Python:
    the same document either way, a row in flight of a live process included."""
    from copilot_host.gateway._ledger import _document, history_json

    path = copilot_home / LEDGER_NAME
    _seed(path)
    with ledger_at(path) as live:
        begun(live, start(time=NOON, model_asked='odd "name" \\ é', rewrote=("a.b", "c:d")))
        made, found = history_json(path, since=0)
        monkeypatch.setattr(_document, "_ROW_JSON", "SELECT no_such_function_here()")
        fallback, _found = history_json(path, since=0)
    assert found
    assert json.loads(made) == json.loads(fallback)
    doc = json.loads(made)
    assert [row["status"] for row in doc["rows"]][-2:] == ["interrupted", "in_flight"]
    assert doc["rows"][-1]["model_asked"] == 'odd "name" \\ é'
    assert doc["rows"][-1]["rewrote"] == ["a.b", "c:d"]
    assert doc["total"] == {"requests": 7, "credits": 0.5 + 0.25 + 0.125 + 0.0625 + 0.5 + 0.5}
