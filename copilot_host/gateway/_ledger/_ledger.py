"""The ledger as the gateway uses it: open once, ``begin`` and ``end`` per request, close.

:func:`open_ledger` checks and opens the file, brings its schema up to date, takes this
run's lock, settles what dead runs left in flight (``interrupted``), registers the run,
prunes rows older than :data:`KEEP_DAYS` days, and starts the writer thread. It returns a
:class:`Ledger`, or a :class:`LedgerOff` (the same methods, recording nothing) when
recording is off by choice (no path) or cannot work here (no ``sqlite3`` in this Python,
no WAL): then ``reason`` is the one warning to show, and serving goes on. A ledger that is
unsafe, damaged or written by a newer copilot-host is a typed ``StoreError`` instead:
recording the person asked for is not dropped silently.

Per model request the gateway calls :meth:`Ledger.begin_now`, or awaits :meth:`Ledger.begin`
when that cannot keep the start at once, before it sends upstream (the request is kept by
then, in the run's journal or as a committed row; with a daily budget the answer may be
:class:`OverDailyBudget`) and calls :meth:`Ledger.end` when the answer is over (queued;
never waits). An answer the
gateway gives itself is one :meth:`Ledger.answered`. :meth:`Ledger.close` writes what is
queued, marks this run's rows still in flight ``interrupted`` and lets the run's lock go.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from copilot_host import SYSTEM_CLOCK, Clock

from ._book import DAY, Book
from ._file import (
    BUSY_SECONDS,
    Opened,
    WalUnavailable,
    open_database,
    runs_folder_name,
    use_wal,
)
from ._ops import (
    NOT_RECORDED,
    Abandon,
    Answered,
    AsyncWaiter,
    Begin,
    Flush,
    Query,
    Stop,
    ThreadWaiter,
)
from ._records import Admission, Admitted, End, Start, api_word, new_run_id, valid_run_id
from ._runs import RunLock, settle_dead_runs
from ._schema import ledger_error, migrate
from ._writer import WAKE_AT, Writer

__all__ = ["KEEP_DAYS", "Ledger", "LedgerOff", "Recorder", "open_ledger"]

# Rows older than this are removed when a gateway starts.
KEEP_DAYS = 400
_PRUNE_CHUNK = 5_000
_log = logging.getLogger("copilot_host.gateway.ledger")


class Recorder(Protocol):
    """What the gateway holds: a :class:`Ledger` or a :class:`LedgerOff`."""

    def begin_now(self, start: Start) -> Admission | None: ...

    async def begin(self, start: Start) -> Admission: ...

    def end(self, end: End) -> None: ...

    def answered(self, start: Start, end: End) -> None: ...

    def spent_today(self, login: str, now: float | None = None) -> float: ...

    def close(self, timeout: float = 5.0) -> None: ...


@dataclass(frozen=True)
class LedgerOff:
    """Recording off: ``reason`` None when chosen (``--no-ledger``), else the one warning
    to show (why it cannot work here)."""

    reason: str | None = None

    def begin_now(self, start: Start) -> Admission | None:
        return NOT_RECORDED

    async def begin(self, start: Start) -> Admission:
        return NOT_RECORDED

    def begin_wait(self, start: Start, timeout: float | None = None) -> Admission:
        return NOT_RECORDED

    def end(self, end: End) -> None:
        pass

    def answered(self, start: Start, end: End) -> None:
        pass

    def spent_today(self, login: str, now: float | None = None) -> float:
        return 0.0

    def close(self, timeout: float = 5.0) -> None:
        pass


class Ledger:
    """An open ledger (see the module docstring); made by :func:`open_ledger`."""

    def __init__(self, path: Path, run_id: str, writer: Writer, clock: Clock) -> None:
        self.path = path
        self.run_id = run_id
        self._writer = writer
        self._book = writer.book
        self._clock = clock
        self._gate = threading.Lock()
        self._closed = False
        self._pending = self._book.pending
        # Where a start is kept at once: the run's journal, unless a daily budget must be
        # decided for it (then it is a row, under SQLite's write lock).
        self._journaled = (
            self._book.journaled
            if self._book.journal is not None and self._book.limit is None
            else None
        )

    def __repr__(self) -> str:
        return f"Ledger(path={str(self.path)!r}, run_id={self.run_id!r})"

    @property
    def failed(self) -> str | None:
        """Why the ledger stopped recording mid-run (said once as a warning), or None."""
        return self._writer.failed

    def _put(self, op: Begin | Abandon | Query | Flush | Stop) -> bool:
        # Under the gate, so nothing is queued behind the writer's Stop (it would never
        # be answered).
        with self._gate:
            if self._closed:
                return False
            self._writer.queue.put(op)
            return True

    def _now(self, start: Start) -> Admission | None:
        """``start`` written in this thread, if that needs no waiting (else None)."""
        if self._writer.failed is not None or self._closed:
            return NOT_RECORDED
        try:
            return self._book.try_now(start)
        except Exception as exc:  # whatever it was: stop writing, and say so once
            self._writer.fail(exc)
            return NOT_RECORDED

    def begin_now(self, start: Start) -> Admission | None:
        """:meth:`begin` when the start can be kept without waiting for anything (a slot
        of the run's journal: no daily budget, a slot free); else None, and the caller
        awaits :meth:`begin`. Spares the request path a coroutine per request."""
        journaled = self._journaled
        if journaled is None or self._closed or self._writer.failed is not None:
            return None
        api_word(start.api)  # a caller's mistake shows here, as in begin
        try:
            key = journaled(start)
        except Exception as exc:  # whatever it was: stop writing, and say so once
            self._writer.fail(exc)
            return NOT_RECORDED
        return Admitted(-key) if key else None

    async def begin(self, start: Start) -> Admission:
        """Record ``start`` as in flight; returns once it is kept (a slot of the run's
        journal, or with a daily budget a committed row), or refused by the daily
        budget. Await it before the request goes upstream. Written in this thread when
        that needs no waiting, else by the writer thread."""
        api_word(start.api)  # a caller's mistake shows here, not in the writer thread
        done = self._now(start)
        if done is not None:
            return done
        op = Begin(start)
        waiter = op.waiter = AsyncWaiter(asyncio.get_running_loop())
        if not self._put(op):
            return NOT_RECORDED
        try:
            return await waiter.future
        except asyncio.CancelledError:
            # Not sent upstream: its row (once written) is removed, never left in flight.
            self._put(Abandon(op))
            raise

    def begin_wait(self, start: Start, timeout: float | None = None) -> Admission:
        """:meth:`begin` for a caller in a thread (tests, tools)."""
        api_word(start.api)
        done = self._now(start)
        if done is not None:
            return done
        op = Begin(start)
        waiter = ThreadWaiter()
        op.waiter = waiter
        if not self._put(op):
            return NOT_RECORDED
        return waiter.wait(timeout)

    def end(self, end: End) -> None:
        """Record how the request ``end.row`` ended: the writer thread's next batch
        writes it (within ``LINGER`` seconds, sooner when ``WAKE_AT`` ends wait), or with
        a daily budget the next start's transaction if that comes first; returns at
        once."""
        if not self._closed:
            self._pend(end)

    def answered(self, start: Start, end: End) -> None:
        """Record an answer the gateway gave itself (``end.row`` is ignored), as
        :meth:`end` does."""
        api_word(start.api)
        if not self._closed:
            self._pend(Answered(start, end))

    def _pend(self, item: End | Answered) -> None:
        pending = self._pending
        pending.append(item)
        # Exactly at the mark: one wake for each time the waiting ends reach it, not one
        # per end while the writer is busy (a waiting end holds a journal slot).
        if len(pending) == WAKE_AT:
            self._put(Flush())

    def spent_today(self, login: str, now: float | None = None) -> float:
        """The account's credits for the UTC day of ``now`` (default: the clock's now)
        in every process writing this ledger, in-flight reservations included. Asks the
        writer thread (waits for at most one batch): :meth:`begin` already enforces the
        daily budget, so this is for showing, not for the request path."""
        query = Query(login, self._clock.time() if now is None else now)
        if not self._put(query) or not query.done.wait(5.0):
            return 0.0
        done, held, _flying = query.figures
        return done + held

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything recorded so far is written."""
        flush = Flush()
        return self._put(flush) and flush.done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is pending, mark this run's rows still in flight ``interrupted``,
        release the run's lock. Idempotent."""
        if self._put(Stop()):
            with self._gate:
                self._closed = True
        self._writer.join(timeout)


def open_ledger(
    path: Path | None,
    *,
    run_id: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    max_credits_per_day: float | None = None,
    warn: Callable[[str], None] | None = None,
) -> Ledger | LedgerOff:
    """Open the ledger at ``path`` for one run (see the module docstring). ``warn``
    receives the one line said if recording stops mid-run (default: a warning of the
    ``copilot_host.gateway.ledger`` logger)."""
    if path is None:
        return LedgerOff()
    try:
        import sqlite3
    except ImportError:
        return LedgerOff(
            "this Python was built without sqlite3, so the ledger is off (nothing is "
            "recorded; --max-credits-per-day cannot be counted)"
        )
    run_id = run_id or new_run_id()
    if not valid_run_id(run_id):
        raise ValueError(f"run id {run_id!r}: lower-case letters, digits and '-', at most 64")
    opened = open_database(path, create=True)
    assert opened is not None  # create=True
    lock: RunLock | None = None
    try:
        migrate(opened.db, path)
        use_wal(opened.db, path)
        runs = opened.folder.folder(runs_folder_name(path))
        assert runs is not None  # made when missing
        try:
            settle_dead_runs(opened.db, runs)
            lock = RunLock.take(runs, run_id)
        except BaseException:
            runs.close()
            raise
        first_row = _register(opened, run_id, clock.time())
        _prune(opened, clock.time() - KEEP_DAYS * DAY)
    except BaseException as exc:
        if lock is not None:
            lock.release()
        opened.close()
        if isinstance(exc, WalUnavailable):
            return LedgerOff(str(exc))
        if isinstance(exc, sqlite3.Error):
            raise ledger_error(exc, path) from None
        raise
    # From now on the connection never waits inside SQLite (see _book) and never
    # checkpoints on commit (the writer thread does, off the event loop).
    opened.db.execute("PRAGMA busy_timeout = 0")
    opened.db.execute("PRAGMA wal_autocheckpoint = 0")
    book = Book(
        opened.db,
        path,
        run_id=run_id,
        first_row=first_row,
        max_credits_per_day=max_credits_per_day,
        busy_seconds=BUSY_SECONDS,
        journal=lock.journal,
        runs_fd=lock.folder.fd,
    )
    held = lock

    def stopped() -> None:
        with book.lock:
            book.closed = True
        try:
            opened.close()
        finally:
            held.release()

    writer = Writer(book, warn=warn or _log.warning, on_stop=stopped)
    writer.start()
    return Ledger(path, run_id, writer, clock)


def _register(opened: Opened, run_id: str, now: float) -> int:
    db = opened.db
    db.execute("BEGIN IMMEDIATE")
    try:
        first_row = int(db.execute("SELECT coalesce(max(id), 0) FROM requests").fetchone()[0])
        db.execute(
            "INSERT INTO runs (run_id, started, first_row) VALUES (?, ?, ?)",
            (run_id, now, first_row),
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return first_row


def _prune(opened: Opened, cutoff: float) -> None:
    """Remove ended rows older than ``cutoff``, a chunk per transaction (a writer of
    another process waits for one chunk at most)."""
    while True:
        removed = opened.db.execute(
            "DELETE FROM requests WHERE id IN (SELECT id FROM requests WHERE time < ? "
            "AND status IS NOT NULL ORDER BY time LIMIT ?)",
            (cutoff, _PRUNE_CHUNK),
        ).rowcount
        if removed < _PRUNE_CHUNK:
            return
