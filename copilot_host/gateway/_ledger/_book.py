"""The open ledger's connection and what this run knows of the file, one user at a time.

Every write happens under :attr:`Book.lock`. The connection never waits inside SQLite
(``busy_timeout`` 0): a caller that must not wait (the gateway's event loop, writing its
own start row) gives up at once when the lock or the file is busy (:meth:`Book.try_now`
returns None and the start is queued to the writer thread), and the writer thread waits
by retrying (:meth:`Book.transaction` with ``wait``). So the common case costs one
statement in the caller's thread and no thread switch; the rare one costs a queue and a
wake-up.

Without a daily budget a start row is one ``INSERT`` that SQLite commits by itself: there
is nothing to read first. Ends and local answers wait in :attr:`Book.pending` (no
wake-up) for the writer thread's next batch, one ``BEGIN IMMEDIATE`` transaction every
50 ms for as many as came (``_writer.LINGER``). With a daily budget, a start is admitted
inside a ``BEGIN IMMEDIATE`` transaction that writes it and what is pending (SQLite's
write lock makes the check and the insert one step for every process); the day's figures
are kept per (login, UTC day) from this connection's own writes and read again when
``PRAGMA data_version`` says another connection committed (by the writer thread: a read
of a day's rows is not for the event loop).

What this costs per request is measured in instructions by ``bench/instructions.py``
(docs/ARCHITECTURE.md, "The ledger").
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from copilot_host import StoreError
from copilot_host._internal import show_path

from ._ops import Abandon, Answered, Begin, Op, Query
from ._records import (
    INTERRUPTED,
    Admission,
    Admitted,
    End,
    OverDailyBudget,
    Start,
    rewrote_text,
    stored_names,
)
from ._statements import (
    DAY_FIGURES,
    START,
    START_HELD,
    assignments,
    bound,
    ended,
    insert_ended,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["DAY", "Book"]

DAY = 86_400
# SQLite's result codes for a lock another connection holds.
_BUSY = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED

Key = tuple[str, int]


@dataclass(slots=True)
class _Changes:
    """What one transaction changes in the book's memory: the day's figures (a working
    copy), the rows it opened and the rows it closed; kept only once it commits."""

    days: dict[Key, list[float]]
    opened: dict[int, tuple[Key, float]] = field(default_factory=dict)
    closed: list[int] = field(default_factory=list)


def is_busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _BUSY


class Book:
    """See the module docstring. :attr:`lock` guards everything here."""

    def __init__(
        self,
        db: sqlite3.Connection,
        path: Path,
        *,
        run_id: str,
        first_row: int,
        max_credits_per_day: float | None,
        busy_seconds: float,
    ) -> None:
        import sqlite3

        self.db = db
        # One cursor for every statement: Connection.execute makes (and tracks) a new one
        # per call, which cost more than the statements themselves.
        self._cursor = db.cursor()
        self._refused = sqlite3.OperationalError
        self.path = path
        self.run_id = run_id
        self.first_row = first_row
        self.limit = max_credits_per_day
        self.busy_seconds = busy_seconds
        self.lock = threading.Lock()
        # Set (under the lock) once the connection is closed.
        self.closed = False
        # Ends and local answers for the next transaction (appended from any thread).
        self.pending: deque[End | Answered] = deque()
        self.commits = 0
        # (login, day) -> [done, held, flying]; valid while data_version is unchanged.
        self._days: dict[Key, list[float]] = {}
        self._version = -1
        # This run's rows in flight: row -> ((login, day), reserved).
        self._open: dict[int, tuple[Key, float]] = {}

    # -- transactions ---------------------------------------------------------------------

    def try_now(self, start: Start) -> Admission | None:
        """Write ``start`` at once without waiting for anything; None when that cannot be
        done now (the caller queues it to the writer thread)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            if self.closed:
                return None
            if self.limit is None and not self._days:
                # Nothing to read and nothing to decide: the start row is one statement
                # that SQLite commits by itself (the ends pending stay for the writer
                # thread's next batch).
                try:
                    row, key, own = self._insert_start(start)
                except self._refused as exc:
                    if not is_busy(exc):
                        raise
                    return None
                self.commits += 1
                self._open[row] = (key, own)
                return Admitted(row)
            answers = self.transaction([Begin(start)], wait=False)
        finally:
            self.lock.release()
        return None if answers is None else answers[0][1]

    def transaction(self, ops: list[Op], *, wait: bool) -> list[tuple[Begin, Admission]] | None:
        """Write what is pending and ``ops`` in one transaction (the caller holds
        :attr:`lock`); the starts' outcomes. Without ``wait``, None (nothing written)
        when the file is busy or the day's figures must be read again."""
        run = self._cursor.execute
        if not self._begin_immediate(wait=wait):
            return None
        try:
            if self.limit is not None or self._days:
                version = run("PRAGMA data_version").fetchone()[0]
                if version != self._version:
                    if not wait and self.limit is not None:
                        run("ROLLBACK")
                        return None
                    self._days.clear()  # another connection wrote: read the figures again
                    self._version = version
            days = self._days
            work = _Changes({key: list(figures) for key, figures in days.items()} if days else {})
            pending = self.pending
            while pending:
                item = pending.popleft()
                if isinstance(item, End):
                    self._end(item, work)
                else:
                    self._insert(item.start, item.end)
            answers: list[tuple[Begin, Admission]] = []
            for op in ops:
                if isinstance(op, Begin):
                    answers.append((op, self._begin(op, work)))
                elif isinstance(op, Abandon):
                    self._abandon(op, work)
                elif isinstance(op, Query):
                    op.figures = self._figures(work.days, op.login, int(op.time // DAY))
            run("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                run("ROLLBACK")
            raise
        self.commits += 1
        self._days = work.days
        if work.opened:
            self._open.update(work.opened)
        for row in work.closed:
            self._open.pop(row, None)
        return answers

    def _begin_immediate(self, *, wait: bool) -> bool:
        deadline: float | None = None
        pause = 0.001
        while True:
            try:
                self._cursor.execute("BEGIN IMMEDIATE")
            except self._refused as exc:
                if not is_busy(exc):
                    raise
                if not wait:
                    return False
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.busy_seconds
                elif now >= deadline:
                    raise StoreError(
                        f"The ledger {show_path(self.path)} stayed locked by another process "
                        f"for {self.busy_seconds:g} s",
                        code="ledger_io",
                        retryable=True,
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            else:
                return True

    def finish(self) -> None:
        """Write what is pending, then this run's rows still in flight become
        ``interrupted`` and the run is forgotten (the caller holds :attr:`lock`)."""
        self.transaction([], wait=True)
        self._begin_immediate(wait=True)
        run = self._cursor.execute
        try:
            run(
                "UPDATE requests SET status = ?, credits_estimated = (credits IS NOT NULL) "
                "WHERE id > ? AND run_id = ? AND status IS NULL",
                (INTERRUPTED, self.first_row, self.run_id),
            )
            run("DELETE FROM runs WHERE run_id = ?", (self.run_id,))
            run("COMMIT")
        except BaseException:
            run("ROLLBACK")
            raise

    def checkpoint(self) -> None:
        """Copy the WAL back into the file without waiting for readers or writers (the
        caller holds :attr:`lock`; the connections never checkpoint on commit)."""
        self._cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.commits = 0

    # -- the statements -------------------------------------------------------------------

    def _figures(
        self, days: dict[Key, list[float]], login: str, day: int
    ) -> tuple[float, float, int]:
        key = (login, day)
        figures = days.get(key)
        if figures is None:
            row = self._cursor.execute(DAY_FIGURES, (day * DAY, (day + 1) * DAY, login)).fetchone()
            figures = days[key] = [float(row[0]), float(row[1]), float(row[2])]
        return figures[0], figures[1], int(figures[2])

    def _begin(self, op: Begin, work: _Changes) -> Admission:
        start = op.start
        own = start.reserved or 0.0
        limit = self.limit
        if limit is not None:
            key = (stored_names(start)[0], int(start.time // DAY))
            done, held, flying = self._figures(work.days, *key)
            # As the run's budget: spent is spent; else a request fits when what is spent
            # and held leaves room for its reservation, or when nothing is held at all.
            if done >= limit or (flying and done + held + own > limit):
                return OverDailyBudget(key[0], done, held, limit)
        op.row, key, own = self._insert_start(start)
        figures = work.days.get(key)
        if figures is not None:
            figures[1] += own
            figures[2] += 1
        work.opened[op.row] = (key, own)
        return Admitted(op.row)

    def _insert_start(self, start: Start) -> tuple[int, Key, float]:
        """The row of a request in flight; with its (login, day) and what it holds."""
        login, agent, api, asked, model, rewrote = stored_names(start)
        key = (login, int(start.time // DAY))  # a caller's wrong type fails before the write
        own = start.reserved
        if own is None:
            values: tuple[object, ...] = (
                start.time,
                self.run_id,
                login,
                agent,
                api,
                asked,
                model,
                rewrote,
            )
            row = self._cursor.execute(START, values).lastrowid
        else:
            values = (start.time, self.run_id, login, agent, api, asked, model, own, rewrote)
            row = self._cursor.execute(START_HELD, values).lastrowid
        assert row is not None
        return row, key, own or 0.0

    def _insert(self, start: Start, end: End) -> None:
        """A row that has ended already (an answer the gateway gave itself)."""
        login, agent, api, asked, model, rewrote = stored_names(start)
        nulls, values = bound(ended(end))
        self._cursor.execute(
            insert_ended(nulls),
            (start.time, self.run_id, login, agent, api, asked, model, *values, rewrote),
        )

    def _close_row(self, row: int, work: _Changes, spent: float) -> None:
        found = work.opened.pop(row, None) or self._open.get(row)
        if found is None:
            return
        work.closed.append(row)
        key, held = found
        figures = work.days.get(key)
        if figures is not None:
            figures[0] += spent
            figures[1] = max(figures[1] - held, 0.0)
            figures[2] -= 1

    def _end(self, end: End, work: _Changes) -> None:
        nulls, values = bound(ended(end))
        if end.rewrote is None:
            sql = assignments(nulls, False)
        else:
            sql = assignments(nulls, True)
            values += (rewrote_text(end.rewrote),)
        changed = self._cursor.execute(sql, (*values, end.row, self.run_id)).rowcount
        if changed:
            self._close_row(end.row, work, end.credits or 0.0)

    def _abandon(self, op: Abandon, work: _Changes) -> None:
        row = op.begin.row
        if row is None:
            return
        self._cursor.execute(
            "DELETE FROM requests WHERE id = ? AND run_id = ? AND status IS NULL",
            (row, self.run_id),
        )
        self._close_row(row, work, 0.0)
