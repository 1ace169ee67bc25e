"""Reading the ledger back: the rows since a day, or their totals by day, agent, model or run.

Reading never makes the ledger (a missing file is an empty history, ``found`` False) and
changes nothing in it, except bringing an older schema up to date. A request still in
flight (a row without a status, or a start in its run's journal) shows as ``in_flight``
while its process holds its run's lock, and as ``interrupted`` once it does not (what the
next start will record), so the history is right before that start.
Days are UTC days.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._book import DAY
from ._file import open_database, runs_folder_name
from ._journal import Flying
from ._records import IN_FLIGHT, INTERRUPTED
from ._runs import flying_of, live_runs
from ._schema import WRITTEN, ledger_error, migrate, user_version

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "BY",
    "ESTIMATED",
    "KEYS",
    "TOTAL",
    "Group",
    "History",
    "HistoryRow",
    "check_by",
    "empty_history",
    "groups_of",
    "read_history",
    "reading",
    "since_time",
]

BY = ("day", "agent", "model", "run")
# The SQL for each --by key (our own expressions, never the caller's text).
KEYS = {
    # date() is strftime('%Y-%m-%d') at half its cost.
    "day": "date(time, 'unixepoch')",
    "agent": "agent",
    "model": "model",
    "run": "run_id",
}
# The totals of a range: ``--history --json``'s "total", ``usage --report``'s table, and
# the part of the credits that is estimated.
TOTAL = "SELECT count(*), total(credits) FROM requests WHERE time >= ?"
ESTIMATED = "SELECT total(credits) FROM requests WHERE time >= ? AND credits_estimated"
_DAYS = re.compile(r"([0-9]{1,5})d")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True, slots=True)
class HistoryRow:
    time: float
    run_id: str
    agent: str
    api: str
    model_asked: str
    model: str
    # The HTTP status the client got, "interrupted", or "in_flight".
    status: int | str
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    credits: float | None
    credits_estimated: bool
    duration_ms: int | None
    rewrote: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Group:
    key: str
    requests: int
    credits: float
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class History:
    """What :func:`read_history` found: ``rows`` (or, grouped, ``groups``) since
    ``since``, and their totals (``estimated``: the part of ``credits`` that is)."""

    path: Path
    found: bool
    since: float
    by: str | None
    rows: tuple[HistoryRow, ...]
    groups: tuple[Group, ...]
    requests: int
    credits: float
    estimated: float


def since_time(text: str, now: float) -> float:
    """The start (seconds since the epoch) of ``--since``: ``Nd`` is the last N UTC days,
    today included (``1d`` is today); ``YYYY-MM-DD`` that UTC day. ValueError otherwise."""
    days = _DAYS.fullmatch(text)
    if days is not None:
        count = int(days.group(1))
        if count < 1:
            raise ValueError("--since counts days from 1 (1d is today)")
        return float((int(now // DAY) - count + 1) * DAY)
    if _DATE.fullmatch(text):
        try:
            moment = time.strptime(text, "%Y-%m-%d")
        except ValueError:
            raise ValueError(f"{text!r} is not a date") from None
        return float(_utc_midnight(moment))
    raise ValueError(f"{text!r}: give a number of days (30d) or a date (2026-01-31)")


def _utc_midnight(moment: time.struct_time) -> int:
    import calendar

    return calendar.timegm((moment.tm_year, moment.tm_mon, moment.tm_mday, 0, 0, 0))


def empty_history(path: Path, since: float, by: str | None, *, found: bool) -> History:
    return History(path, found, since, by, (), (), 0, 0.0, 0.0)


@contextmanager
def reading(path: Path) -> Iterator[tuple[sqlite3.Connection, set[str]] | bool]:
    """The ledger open for reading and the runs alive, or False when there is no ledger
    file, True when it holds nothing yet (an empty file). Raises ``ImportError`` without
    ``sqlite3``, a ``StoreError`` for an unsafe, damaged or newer ledger."""
    import sqlite3

    opened = open_database(path, create=False)
    if opened is None:
        yield False
        return
    try:
        db = opened.db
        if user_version(db) == 0:
            yield True
            return
        migrate(db, path)
        runs = opened.folder.folder(runs_folder_name(path), create=False)
        try:
            alive = live_runs(db, runs)
            _with_flying(db, flying_of(db, runs))
        finally:
            if runs is not None:
                runs.close()
        yield db, alive
    except sqlite3.Error as exc:
        raise ledger_error(exc, path) from None
    finally:
        opened.close()


def _with_flying(db: sqlite3.Connection, flying: list[tuple[str, Flying]]) -> None:
    """Show live runs' requests in flight kept in their journals as rows in flight: for
    this connection only, a temporary view named ``requests`` (found before the file's
    table) adds them to the table's rows. Nothing is written to the file."""
    if not flying:
        return
    columns = ", ".join(WRITTEN)
    db.execute(f"CREATE TEMP TABLE flying (id INTEGER PRIMARY KEY, {columns})")  # our own names
    db.executemany(
        "INSERT INTO temp.flying (time, run_id, login, agent, api, model_asked, model, "
        "credits, credits_estimated, rewrote) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [one.row(run_id) for run_id, one in flying],
    )
    # After the file's rows in the (time, id) order readers sort by: ids past its own.
    db.execute("UPDATE temp.flying SET id = id + (SELECT coalesce(max(id), 0) FROM main.requests)")
    db.execute(
        f"CREATE TEMP VIEW requests AS SELECT id, {columns} FROM main.requests "  # noqa: S608 - our own names
        f"UNION ALL SELECT id, {columns} FROM temp.flying"
    )


def check_by(by: str | None) -> None:
    if by is not None and by not in KEYS:
        raise ValueError(f"--by {by!r}: one of {', '.join(BY)}")


def read_history(path: Path, *, since: float, by: str | None = None) -> History:
    """The ledger at ``path`` since ``since``; ``by`` one of :data:`BY` for totals
    (errors as :func:`reading`)."""
    check_by(by)
    with reading(path) as found:
        if isinstance(found, bool):
            return empty_history(path, since, by, found=found)
        db, alive = found
        if by is None:
            return _rows(db, path, since, alive)
        return groups_of(db, path, since, by)


def _rows(db: sqlite3.Connection, path: Path, since: float, alive: set[str]) -> History:
    found = []
    credits = estimated = 0.0
    for row in db.execute(
        "SELECT time, run_id, agent, api, model_asked, model, status, input_tokens, "
        "output_tokens, cached_tokens, credits, credits_estimated, duration_ms, rewrote "
        "FROM requests WHERE time >= ? ORDER BY time, id",
        (since,),
    ):
        status = row[6]
        if status is None:
            status = IN_FLIGHT if row[1] in alive else INTERRUPTED
        elif not isinstance(status, str):
            status = int(status)
        cost = row[10]
        if cost is not None:
            credits += cost
            if row[11]:
                estimated += cost
        found.append(
            HistoryRow(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                status,
                row[7],
                row[8],
                row[9],
                cost,
                bool(row[11]),
                row[12],
                tuple(row[13].split(",")) if row[13] else (),
            )
        )
    return History(path, True, since, None, tuple(found), (), len(found), credits, estimated)


def groups_of(
    db: sqlite3.Connection, path: Path, since: float, by: str, estimated: float | None = None
) -> History:
    """The totals per ``by`` key (``estimated``: the range's estimated credits when the
    caller has them already)."""
    key = KEYS[by]
    groups = [
        Group(str(row[0]), int(row[1]), float(row[2]), int(row[3]), int(row[4]))
        for row in db.execute(
            f"SELECT {key}, count(*), total(credits), total(input_tokens), "  # noqa: S608 - our own column names
            f"total(output_tokens) FROM requests WHERE time >= ? GROUP BY {key}",
            (since,),
        )
    ]
    if by == "day":
        groups.sort(key=lambda group: group.key)
    else:
        groups.sort(key=lambda group: (-group.credits, group.key))
    if estimated is None:
        estimated = float(db.execute(ESTIMATED, (since,)).fetchone()[0])
    return History(
        path,
        True,
        since,
        by,
        (),
        tuple(groups),
        sum(group.requests for group in groups),
        sum(group.credits for group in groups),
        estimated,
    )
