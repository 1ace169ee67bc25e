"""What ``usage --report`` shows of the ledger: every figure from one read of the file.

The totals per day, agent, model and run are :func:`~._history.read_history`'s own
queries (``usage --history --by ...``), so the page and ``--history --json`` agree by
construction; beside them, the credits of each (day, model) and (day, agent) that the
page draws, the first and last request of the runs it lists, and the requests that asked
for Auto. All of it is read in one transaction: a writer adding rows meanwhile changes
none of the figures against another.

Sizes are bounded by days, models, agents and runs, never by rows: a year of half a
million rows is a few thousand cells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._history import BY, KEYS, History, empty_history, groups_of, reading

if TYPE_CHECKING:
    import sqlite3

__all__ = ["AUTO", "Cell", "RunSpan", "Summary", "read_summary"]

# The model name that asks Copilot to choose (the gateway records it as model_asked).
AUTO = "auto"
# In one pass: the count and sum of :data:`~._history.TOTAL` (``--history --json``'s
# "total"; the same sum over the same rows in the same order), the estimated part as
# :data:`~._history.ESTIMATED` sums it, and the requests that asked for Auto.
_TOTALS = (
    "SELECT count(*), total(credits), total(CASE WHEN credits_estimated THEN credits END), "
    "count(CASE WHEN model_asked = ? THEN 1 END), "
    "total(CASE WHEN model_asked = ? THEN credits END) FROM requests WHERE time >= ?"
)


@dataclass(frozen=True, slots=True)
class Cell:
    """The requests and credits of one UTC day and one model (or agent)."""

    day: str
    key: str
    requests: int
    credits: float


@dataclass(frozen=True, slots=True)
class RunSpan:
    """When a run's first and last requests in the range came, and through which agents."""

    first: float
    last: float
    agents: tuple[str, ...]


@dataclass(frozen=True)
class Summary:
    """The ledger at ``path`` since ``since``: ``totals`` (``by`` None: no rows, only the
    totals), ``by`` each of :data:`~._history.BY` as ``read_history(by=...)`` gives it,
    the cells the charts draw, the spans of the runs ``spans`` was asked for, and the
    requests that asked for Auto (``auto``: requests, credits). ``auto_saved`` is what
    Auto's discount saved; None while the ledger records no discount."""

    path: Path
    found: bool
    since: float
    totals: History
    by: Mapping[str, History]
    day_model: tuple[Cell, ...]
    day_agent: tuple[Cell, ...]
    spans: Mapping[str, RunSpan]
    auto: tuple[int, float]
    auto_saved: float | None = None


def _empty(path: Path, since: float, *, found: bool) -> Summary:
    none = empty_history(path, since, None, found=found)
    by = {key: empty_history(path, since, key, found=found) for key in BY}
    return Summary(path, found, since, none, by, (), (), {}, (0, 0.0))


def read_summary(path: Path, *, since: float, runs: int = 20) -> Summary:
    """The ledger at ``path`` since ``since``, with the spans of the ``runs`` costliest
    runs (errors as :func:`~._history.reading`; a missing file is an empty summary)."""
    with reading(path) as found:
        if isinstance(found, bool):
            return _empty(path, since, found=found)
        db, _alive = found
        # One read transaction (WAL): every query below sees the same rows.
        db.execute("BEGIN")
        try:
            requests, credits, estimated, auto, auto_credits = db.execute(
                _TOTALS, (AUTO, AUTO, since)
            ).fetchone()
            by = {key: groups_of(db, path, since, key, float(estimated)) for key in BY}
            costliest = [group.key for group in by["run"].groups[:runs]]
            summary = Summary(
                path,
                True,
                since,
                History(
                    path, True, since, None, (), (), int(requests), float(credits), float(estimated)
                ),
                by,
                _cells(db, since, "model"),
                _cells(db, since, "agent"),
                _spans(db, since, costliest),
                (int(auto), float(auto_credits)),
            )
        finally:
            if db.in_transaction:  # a read: nothing to keep
                db.execute("ROLLBACK")
    return summary


def _cells(db: sqlite3.Connection, since: float, key: str) -> tuple[Cell, ...]:
    day, other = KEYS["day"], KEYS[key]
    return tuple(
        Cell(str(row[0]), str(row[1]), int(row[2]), float(row[3]))
        for row in db.execute(
            f"SELECT {day}, {other}, count(*), total(credits) FROM requests "  # noqa: S608 - our own column names
            "WHERE time >= ? GROUP BY 1, 2 ORDER BY 1, 2",
            (since,),
        )
    )


def _spans(db: sqlite3.Connection, since: float, run_ids: Sequence[str]) -> dict[str, RunSpan]:
    if not run_ids:
        return {}
    marks = ",".join("?" * len(run_ids))
    found: dict[str, RunSpan] = {}
    for run_id, first, last, agents in db.execute(
        "SELECT run_id, min(time), max(time), group_concat(DISTINCT agent) FROM requests "  # noqa: S608 - placeholders only
        f"WHERE time >= ? AND run_id IN ({marks}) GROUP BY run_id",
        (since, *run_ids),
    ):
        found[str(run_id)] = RunSpan(float(first), float(last), tuple(sorted(agents.split(","))))
    return found
