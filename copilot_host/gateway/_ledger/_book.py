"""The open ledger's connection and what this run knows of the file, one user at a time.

Every write to the file happens under :attr:`Book.lock`. The connection never waits inside
SQLite (``busy_timeout`` 0): a caller that must not wait (the gateway's event loop, writing
a start row under a daily budget) gives up at once when the lock or the file is busy
(:meth:`Book.try_now` returns None and the start is queued to the writer thread), and the
writer thread waits by retrying (:meth:`Book.transaction` with ``wait``). So the common
case costs one transaction in the caller's thread and no thread switch; the rare one
costs a queue and a wake-up.

Without a daily budget a start is not a row: it is written into the run's journal
(``_journal``, memory shared with the file, no system call, no lock), and the row is
written whole with its end. Ends and local answers wait in :attr:`Book.pending` (no
wake-up) for the writer thread's next batch, one ``BEGIN IMMEDIATE`` transaction every
quarter of a second for as many as came (``_writer.LINGER``; sooner when ``WAKE_AT``
wait); a journal slot is freed once its row commits. With a daily budget, a start is
admitted inside a ``BEGIN IMMEDIATE`` transaction that writes it and what is pending (SQLite's
write lock makes the check and the insert one step for every process); the day's figures
are kept per (login, UTC day) from this connection's own writes and read again when
``PRAGMA data_version`` says another connection committed (by the writer thread: a read
of a day's rows is not for the event loop), plus what other live runs' journals hold.

What this costs per request is measured in instructions by ``bench/instructions.py``
(docs/ARCHITECTURE.md, "The ledger").
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from copilot_host._internal import secrets_generation

from ._file import begin_immediate
from ._journal import Journal, Journals, seq_of
from ._ops import Abandon, Answered, Begin, Op, Query
from ._records import (
    INTERRUPTED,
    Admission,
    Admitted,
    End,
    Named,
    OverDailyBudget,
    Start,
    rewrote_text,
    stored_names,
)
from ._runs import settle_flying
from ._statements import (
    DAY_FIGURES,
    START,
    START_HELD,
    Shape,
    assignments,
    end_values,
    insert_rows,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["DAY", "Book"]

DAY = 86_400

Key = tuple[str, int]


@dataclass(slots=True)
class _Changes:
    """What one transaction changes in the book's memory: the day's figures (a working
    copy), the rows it opened and the rows it closed; kept only once it commits."""

    days: dict[Key, list[float]]
    opened: dict[int, tuple[Key, float]] = field(default_factory=dict)
    closed: list[int] = field(default_factory=list)
    # Journal slots whose rows this transaction writes: freed once it commits.
    freed: list[int] = field(default_factory=list)
    # Rows written whole, by shape: inserted many to a statement (``insert_rows``).
    rows: dict[Shape, list[tuple[object, ...]]] = field(default_factory=dict)


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
        journal: Journal | None = None,
        runs_fd: int | None = None,
    ) -> None:
        self.db = db
        # One cursor for every statement: Connection.execute makes (and tracks) a new one
        # per call, which cost more than the statements themselves.
        self._cursor = db.cursor()
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
        # This run's starts in its journal, by the (negative) row :class:`Admitted` gave.
        self.journal = journal
        # With the names its row stores, and the known secrets' generation they were
        # masked at (made again at the end if that moved).
        self._flying: dict[int, tuple[Start, Named, int]] = {}
        # Other live runs' journals, counted against the daily budget.
        self._runs_fd = runs_fd
        self._journals = Journals()

    # -- transactions ---------------------------------------------------------------------

    def try_now(self, start: Start) -> Admission | None:
        """Write ``start`` at once without waiting for anything; None when that cannot be
        done now (the caller queues it to the writer thread)."""
        if self.limit is None and self.journal is not None:
            key = self.journaled(start)
            if key:
                return Admitted(-key)
        if not self.lock.acquire(blocking=False):
            return None
        try:
            if self.closed:
                return None
            answers = self.transaction([Begin(start)], wait=False)
        finally:
            self.lock.release()
        return None if answers is None else answers[0][1]

    def journaled(self, start: Start) -> int:
        """Write ``start`` into the run's journal (with no daily budget there is nothing to
        read and nothing to decide: see the module docstring), in the caller's thread,
        without the lock; its key, or 0 when the journal cannot keep it (the caller
        writes a row instead)."""
        journal = self.journal
        assert journal is not None
        generation = secrets_generation()
        names = stored_names(start)
        key = journal.take(names, start.time, start.reserved)
        if key:
            self._flying[-key] = (start, names, generation)
        return key

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
                    self._renew_journals()
            days = self._days
            work = _Changes({key: list(figures) for key, figures in days.items()} if days else {})
            self._take_waiting(work)
            if work.rows:
                insert_rows(self._cursor, work.rows)
            answers: list[tuple[Begin, Admission]] = []
            for op in ops:
                if isinstance(op, Begin):
                    answers.append((op, self._begin(op, work)))
                elif isinstance(op, Abandon):
                    self._abandon(op, work)
                elif isinstance(op, Query):
                    self._renew_journals()
                    op.figures = self._figures(work.days, op.login, int(op.time // DAY), own=True)
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
        if work.freed and self.journal is not None:
            self.journal.free(*work.freed)
        return answers

    def _take_waiting(self, work: _Changes) -> None:
        """The ends and local answers waiting, into ``work``: rows to insert, rows to end."""
        pending = self.pending
        flying = self._flying
        generation = secrets_generation()
        while pending:
            item = pending.popleft()
            if not isinstance(item, End):
                self._insert(item.start, item.end, work, stored_names(item.start))
            elif item.row > 0:
                self._end(item, work)
            else:  # the usual end: its start waited in the journal
                flown = flying.pop(item.row, None)
                if flown is not None:
                    start, names, made = flown
                    if made != generation:
                        names = stored_names(start)
                    self._insert(start, item, work, names, seq_of(-item.row))
                    work.freed.append(-item.row)

    def _renew_journals(self) -> None:
        if self._runs_fd is None:
            return
        runs = {row[0] for row in self._cursor.execute("SELECT run_id FROM runs")}
        runs.discard(self.run_id)
        self._journals.renew(self._runs_fd, runs)

    def _begin_immediate(self, *, wait: bool) -> bool:
        return begin_immediate(self._cursor, self.path, wait=wait, seconds=self.busy_seconds)

    def finish(self) -> None:
        """Write what is pending, then this run's rows still in flight become
        ``interrupted`` and the run is forgotten (the caller holds :attr:`lock`)."""
        self.transaction([], wait=True)
        self._begin_immediate(wait=True)
        run = self._cursor.execute
        taken = self.journal.taken() if self.journal is not None else []
        try:
            run(
                "UPDATE requests SET status = ?, credits_estimated = (credits IS NOT NULL) "
                "WHERE id > ? AND run_id = ? AND status IS NULL",
                (INTERRUPTED, self.first_row, self.run_id),
            )
            settle_flying(self.db, self.run_id, self.first_row, [one for _key, one in taken])
            run("DELETE FROM runs WHERE run_id = ?", (self.run_id,))
            run("COMMIT")
        except BaseException:
            run("ROLLBACK")
            raise
        for key, _one in taken:
            self._flying.pop(-key, None)
            if self.journal is not None:
                self.journal.free(key)
        self._journals.close()

    def checkpoint(self) -> None:
        """Copy the WAL back into the file without waiting for readers or writers (the
        caller holds :attr:`lock`; the connections never checkpoint on commit)."""
        self._cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.commits = 0

    # -- the statements -------------------------------------------------------------------

    def _figures(
        self, days: dict[Key, list[float]], login: str, day: int, *, own: bool = False
    ) -> tuple[float, float, int]:
        """The day's credits spent, held and requests in flight for ``login``: the table's
        (kept in ``days``), and other live runs' journals' (read every time: they change
        without a commit); ``own``: this run's journal's too."""
        key = (login, day)
        figures = days.get(key)
        if figures is None:
            row = self._cursor.execute(DAY_FIGURES, (day * DAY, (day + 1) * DAY, login)).fetchone()
            figures = days[key] = [float(row[0]), float(row[1]), float(row[2])]
        held, flying = self._journals.held(login, day * DAY, (day + 1) * DAY)
        if own:
            for start, _names, _made in list(self._flying.values()):
                if stored_names(start)[0] == login and int(start.time // DAY) == day:
                    held += start.reserved or 0.0
                    flying += 1
        return figures[0], figures[1] + held, int(figures[2]) + flying

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

    def _insert(
        self, start: Start, end: End, work: _Changes, names: Named, seq: int | None = None
    ) -> None:
        """The row of a request that has ended, to be written whole with the transaction's
        others: an answer the gateway gave itself, or (``seq``) one whose start waited in
        the journal (``names``: :func:`~._records.stored_names` of ``start``); its credits
        counted in the day's figures."""
        login, agent, api, asked, model, rewrote = names
        time = start.time
        day = int(time // DAY)  # a caller's wrong type fails before the write
        # ``names`` holds the start's changes as stored: the end's, when they are the same
        # (the usual case, no change to the answer), need not be cleaned again.
        if end.rewrote is not None and end.rewrote != start.rewrote:
            rewrote = rewrote_text(end.rewrote)
        nulls, values = end_values(end)
        run_id = self.run_id
        if seq is None:
            row = (time, run_id, login, agent, api, asked, model, *values, rewrote)
        else:
            row = (time, run_id, login, agent, api, asked, model, *values, rewrote, seq)
        shape = (nulls, seq is not None)
        rows = work.rows.get(shape)
        if rows is None:
            rows = work.rows[shape] = []
        rows.append(row)
        if work.days:
            figures = work.days.get((login, day))
            if figures is not None:
                figures[0] += end.credits or 0.0

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
        """The end of a request whose start is a row."""
        nulls, values = end_values(end)
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
