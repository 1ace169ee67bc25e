"""What the file holds, and for how long: counts, words and names, never a secret; rows
older than 400 days pruned when a gateway starts."""

from __future__ import annotations

import secrets
from pathlib import Path

import copilot_host as ch
from copilot_host.gateway._ledger import KEEP_DAYS, End, Start

from ._support import DAY, NOON, begun, clock_at, end, ledger_at, rows, start


def _file_bytes(folder: Path) -> bytes:
    """Everything the ledger left on disk: the file, its WAL and its shared memory."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_no_secret_reaches_the_file_whatever_a_caller_passes(tmp_path: Path) -> None:
    """A registered secret in a model name is masked; text that is not a rewrite's name
    is left out of ``rewrote``; a raw User-Agent is never an agent word."""
    token = "gho_" + secrets.token_hex(18)
    held = ch.Secret(token)
    ch.register_secret(held)
    prompt = "PROMPT-" + secrets.token_hex(8)
    header = "HEADER-" + secrets.token_hex(8)
    folder = tmp_path / "ledger"
    folder.mkdir(mode=0o700)
    path = folder / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        row = begun(
            ledger,
            Start(
                NOON,
                "octocat",
                f"agent {header}",
                "chat",
                f"model-{token}",
                "gpt-5",
                0.5,
                ("max_tokens", f"prompt: {prompt}", token),
            ),
        )
        ledger.end(end(row))
        ledger.answered(Start(NOON, "octocat", header, "messages", token, token), End(0, 200))
        ledger.flush()
        written = _file_bytes(folder)
        assert b"gpt-5" in written  # the file is read as it is: the check can fail
        for canary in (token, prompt, header):
            assert canary.encode() not in written, canary
    assert token.encode() not in _file_bytes(folder)
    first, second = rows(path)
    assert (first["agent"], first["rewrote"]) == ("other", "max_tokens")
    assert first["model_asked"] == "model-[REDACTED]"
    assert second["model"] == "[REDACTED]"
    del held


def test_a_secret_registered_after_a_name_was_stored_is_masked_in_the_next_row(
    tmp_path: Path,
) -> None:
    """A start's names are cleaned once and remembered; a registration forgets them, so a
    name stored before a secret was known is masked in every row written after, a
    request in flight then included."""
    token = "gho_" + secrets.token_hex(18)
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, Start(NOON, "octocat", "codex", "chat", token, "gpt-5"))))
        assert ledger.flush()
        flying = begun(ledger, Start(NOON + 1, "octocat", "codex", "chat", token, "gpt-5"))
        held = ch.Secret(token)
        ch.register_secret(held)
        after = begun(ledger, Start(NOON + 2, "octocat", "codex", "chat", token, "gpt-5"))
        ledger.end(end(flying))
        ledger.end(end(after))
        ledger.flush()
    first, second, third = rows(path)
    assert first["model_asked"] == token  # not a secret when it was written
    assert second["model_asked"] == third["model_asked"] == "[REDACTED]"
    del held


def test_rows_older_than_400_days_are_pruned_when_a_gateway_starts(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ages = [KEEP_DAYS + 30, KEEP_DAYS + 1, KEEP_DAYS - 1, 10, 0]
    with ledger_at(path, clock=clock_at()) as ledger:
        for age in ages:
            ledger.end(end(begun(ledger, start(time=NOON - age * DAY))))
    assert len(rows(path)) == len(ages)  # a start prunes; recording does not
    # The next start, a day later by its clock: what passed 400 days goes.
    with ledger_at(path, clock=clock_at(NOON + DAY)):
        pass
    kept = sorted(round((NOON - row["time"]) / DAY) for row in rows(path))
    assert kept == [0, 10, KEEP_DAYS - 1]


def test_pruning_leaves_what_is_still_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path, max_credits_per_day=100.0) as live:  # a start written as a row
        live.begin_wait(start(time=NOON - 500 * DAY))
        with ledger_at(path, clock=clock_at()):
            pass
        assert [row["status"] for row in rows(path)] == [None]
