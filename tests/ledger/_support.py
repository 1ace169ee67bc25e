"""What the ledger tests share: records as the gateway makes them, a fixed clock, and the
file read back with plain SQLite (not through the code under test)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from copilot_host.gateway._ledger import Admitted, End, Ledger, LedgerOff, Start, open_ledger
from tests._clock import FakeClock

# 2026-12-06 12:00:00 UTC: the middle of a UTC day, so a few hours either way stay in it.
NOON = 1_796_558_400.0
DAY = 86_400.0


def clock_at(wall: float = NOON) -> FakeClock:
    return FakeClock(wall=wall)


def start(
    *,
    time: float = NOON,
    login: str = "octocat",
    agent: str = "claude-code",
    api: str = "messages",
    model_asked: str = "sonnet",
    model: str = "claude-sonnet-4.5",
    reserved: float | None = 0.5,
    rewrote: tuple[str, ...] = ("billing-header",),
) -> Start:
    return Start(time, login, agent, api, model_asked, model, reserved, rewrote)


def end(row: int | None, *, credits: float | None = 0.25, status: int = 200) -> End:
    assert row is not None, "the start was not recorded"
    return End(row, status, 1200, 310, 100, credits, False, 2310)


def begun(ledger: Ledger, what: Start) -> int:
    """The row of a start that must be admitted and recorded."""
    found = ledger.begin_wait(what, timeout=30)
    assert isinstance(found, Admitted) and found.row is not None, found
    return found.row


def opened(path: Path, **kwargs: Any) -> Ledger:
    found = open_ledger(path, **kwargs)
    assert not isinstance(found, LedgerOff), found.reason
    return found


@contextmanager
def ledger_at(path: Path, **kwargs: Any) -> Iterator[Ledger]:
    found = opened(path, **kwargs)
    try:
        yield found
    finally:
        found.close()


def rows(path: Path) -> list[dict[str, Any]]:
    """Every row of the file, read with a plain connection."""
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute("SELECT * FROM requests ORDER BY time, id")]
    finally:
        db.close()


def runs(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[0] for row in db.execute("SELECT run_id FROM runs ORDER BY run_id")]
    finally:
        db.close()


def newer_ledger(path: Path) -> None:
    """A file at ``path`` that a newer copilot-host wrote (a schema version from the future)."""
    path.touch(mode=0o600)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
