"""The open ledger's connection and what this run knows of the file, one user at a time.

Every write is one ``BEGIN IMMEDIATE`` transaction under :attr:`Book.lock`. The connection
never waits inside SQLite (``busy_timeout`` 0): a caller that must not wait (the gateway's
event loop, writing its own start row) gives up at once when the lock or the file is busy
(:meth:`Book.try_now` returns None and the start is queued to the writer thread), and the
writer thread waits by retrying (:meth:`Book.transaction` with ``wait``). So the common
case costs one small transaction in the caller's thread and no thread switch; the rare one
costs a queue and a wake-up.

Ends and local answers wait in :attr:`Book.pending` (no wake-up) and go into the next
transaction, whoever makes it: one commit per request when the gateway is idle, fewer when
it is busy. With a daily budget, a start is admitted inside the transaction that writes it
(SQLite's write lock makes the check and the insert one step for every process); the day's
figures are kept per (login, UTC day) from this connection's own writes and read again when
``PRAGMA data_version`` says another connection committed (by the writer thread: a read of
a day's rows is not for the event loop).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from copilot_host import StoreError, mask_secrets
from copilot_host._internal import show_path

from ._ops import Abandon, Answered, Begin, Op, Query
from ._records import (
    INTERRUPTED,
    Admission,
    Admitted,
    End,
    OverDailyBudget,
    Start,
    agent_word,
    api_word,
    rewrote_text,
    stored_text,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["DAY", "Book"]

DAY = 86_400
# SQLite's result codes for a lock another connection holds.
_BUSY = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED

_INSERT = (
    "INSERT INTO requests (time, run_id, login, agent, api, model_asked, model, status, "
    "input_tokens, output_tokens, cached_tokens, credits, credits_estimated, duration_ms, "
    "rewrote) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_END = (
    "UPDATE requests SET status = ?, input_tokens = ?, output_tokens = ?, cached_tokens = ?, "
    "credits = ?, credits_estimated = ?, duration_ms = ?, rewrote = coalesce(?, rewrote) "
    "WHERE id = ? AND run_id = ? AND status IS NULL"
)
# done: credits of rows that ended; held: reservations of rows in flight; flying: how many.
_DAY_FIGURES = (
    "SELECT total(CASE WHEN status IS NULL THEN 0 ELSE credits END), "
    "total(CASE WHEN status IS NULL THEN credits ELSE 0 END), "
    "count(CASE WHEN status IS NULL THEN 1 END) "
    "FROM requests WHERE time >= ? AND time < ? AND login = ?"
)

Key = tuple[str, int]


@dataclass(slots=True)
class _Changes:
    """What one transaction changes in the book's memory: the day's figures (a working
    copy), the rows it opened and the rows it closed; kept only once it commits."""

    days: dict[Key, list[float]]
    opened: dict[int, tuple[Key, float]] = field(default_factory=dict)
    closed: list[int] = field(default_factory=list)


def _ended(end: End) -> tuple[object, ...]:
    """An end's values, in the order of the ``status`` ... ``duration_ms`` columns."""
    return (
        end.status,
        end.input_tokens,
        end.output_tokens,
        end.cached_tokens,
        end.credits,
        end.credits_estimated,
        end.duration_ms,
    )


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
        self.db = db
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

    def try_now(self, op: Begin) -> Admission | None:
        """Write ``op`` at once without waiting for anything; None when that cannot be
        done now (the caller queues it to the writer thread)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            if self.closed:
                return None
            answers = self.transaction([op], wait=False)
        finally:
            self.lock.release()
        return None if answers is None else answers[0][1]

    def transaction(self, ops: list[Op], *, wait: bool) -> list[tuple[Begin, Admission]] | None:
        """Write what is pending and ``ops`` in one transaction (the caller holds
        :attr:`lock`); the starts' outcomes. Without ``wait``, None (nothing written)
        when the file is busy or the day's figures must be read again."""
        db = self.db
        if not self._begin_immediate(wait=wait):
            return None
        try:
            if self.limit is not None or self._days:
                version = db.execute("PRAGMA data_version").fetchone()[0]
                if version != self._version:
                    if not wait and self.limit is not None:
                        db.execute("ROLLBACK")
                        return None
                    self._days.clear()  # another connection wrote: read the figures again
                    self._version = version
            work = _Changes({key: list(figures) for key, figures in self._days.items()})
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
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self.commits += 1
        self._days = work.days
        self._open.update(work.opened)
        for row in work.closed:
            self._open.pop(row, None)
        return answers

    def _begin_immediate(self, *, wait: bool) -> bool:
        import sqlite3

        deadline = time.monotonic() + self.busy_seconds
        pause = 0.001
        while True:
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if not wait:
                    return False
                if time.monotonic() >= deadline:
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
        db = self.db
        try:
            db.execute(
                "UPDATE requests SET status = ?, credits_estimated = (credits IS NOT NULL) "
                "WHERE id > ? AND run_id = ? AND status IS NULL",
                (INTERRUPTED, self.first_row, self.run_id),
            )
            db.execute("DELETE FROM runs WHERE run_id = ?", (self.run_id,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def checkpoint(self) -> None:
        """Copy the WAL back into the file without waiting for readers or writers (the
        caller holds :attr:`lock`; the connections never checkpoint on commit)."""
        self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.commits = 0

    # -- the statements -------------------------------------------------------------------

    def _figures(
        self, days: dict[Key, list[float]], login: str, day: int
    ) -> tuple[float, float, int]:
        key = (login, day)
        figures = days.get(key)
        if figures is None:
            row = self.db.execute(_DAY_FIGURES, (day * DAY, (day + 1) * DAY, login)).fetchone()
            figures = days[key] = [float(row[0]), float(row[1]), float(row[2])]
        return figures[0], figures[1], int(figures[2])

    def _begin(self, op: Begin, work: _Changes) -> Admission:
        start = op.start
        login = mask_secrets(stored_text(start.login))
        key = (login, int(start.time // DAY))
        own = start.reserved if start.reserved is not None else 0.0
        limit = self.limit
        if limit is not None:
            done, held, flying = self._figures(work.days, *key)
            # As the run's budget: spent is spent; else a request fits when what is spent
            # and held leaves room for its reservation, or when nothing is held at all.
            if done >= limit or (flying and done + held + own > limit):
                return OverDailyBudget(login, done, held, limit)
        op.row = row = self._insert(start, None)
        figures = work.days.get(key)
        if figures is not None:
            figures[1] += own
            figures[2] += 1
        work.opened[row] = (key, own)
        return Admitted(row)

    def _insert(self, start: Start, end: End | None) -> int:
        values: tuple[object, ...] = (
            start.time,
            self.run_id,
            mask_secrets(stored_text(start.login)),
            agent_word(start.agent),
            api_word(start.api),
            mask_secrets(stored_text(start.model_asked)),
            mask_secrets(stored_text(start.model)),
        )
        if end is None:  # in flight: the reservation, estimated
            held = start.reserved
            values += (None, None, None, None, held, held is not None, None)
        else:
            values += _ended(end)
        row = self.db.execute(_INSERT, (*values, rewrote_text(start.rewrote))).lastrowid
        assert row is not None
        return row

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
        rewrote = None if end.rewrote is None else rewrote_text(end.rewrote)
        changed = self.db.execute(_END, (*_ended(end), rewrote, end.row, self.run_id)).rowcount
        if changed:
            self._close_row(end.row, work, end.credits or 0.0)

    def _abandon(self, op: Abandon, work: _Changes) -> None:
        row = op.begin.row
        if row is None:
            return
        self.db.execute(
            "DELETE FROM requests WHERE id = ? AND run_id = ? AND status IS NULL",
            (row, self.run_id),
        )
        self._close_row(row, work, 0.0)
