"""The writer thread: what could not be written at once, what waits, and the checkpoints.

It takes what is queued when it wakes (starts that found the file busy, queries, flushes,
the stop), up to :data:`MAX_BATCH` operations, and writes them with whatever is pending in
one transaction of the :class:`~._book.Book`, waiting for the file as long as it must. It
wakes at least every :data:`LINGER` seconds, so an end waits no longer than that for its
transaction, and sooner once :data:`WAKE_AT` ends wait (the ledger queues a flush then), so
the ends waiting never hold more than a quarter of the run's journal. The WAL is copied
back into the file (a passive checkpoint) every :data:`CHECKPOINT_EVERY` commits, here and
never in the gateway's event loop.

Why a quarter of a second: what a transaction costs hardly depends on how many ends it
writes (its commit appends whole pages to the WAL, the thread wakes and takes the GIL),
so its cost per request falls with the batch. At 50 ms, with a few ends a batch at one
client's pace, recording cost ``serve`` over +3.6% of its CPU per request side by side
with the ledger off, and at 250 ms the commits no longer showed: what recording costs
now is the rows' own work (docs/ARCHITECTURE.md, "The ledger" and "Speed, as measured").
What the wait risks is bounded: a process killed in it leaves those requests
``interrupted`` with their reservations, never lost.

A write that fails (a full disk, a lock held past the busy timeout, a damaged file) turns
recording off for the rest of the run with one warning; requests go on unrecorded.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable

from ._book import Book
from ._journal import SLOTS
from ._ops import NOT_RECORDED, Begin, Flush, Op, Query, Stop, answer
from ._records import Admission
from ._schema import ledger_error

__all__ = ["CHECKPOINT_EVERY", "LINGER", "MAX_BATCH", "WAKE_AT", "Writer"]

MAX_BATCH = 512
LINGER = 0.25
WAKE_AT = SLOTS // 4
CHECKPOINT_EVERY = 256


class Writer:
    """The thread that owns waiting (see the module docstring)."""

    def __init__(
        self, book: Book, *, warn: Callable[[str], None], on_stop: Callable[[], None]
    ) -> None:
        self.book = book
        self._warn = warn
        self._on_stop = on_stop
        self.queue: queue.SimpleQueue[Op] = queue.SimpleQueue()
        self.failed: str | None = None
        self._thread = threading.Thread(target=self._run, name="copilot-host-ledger", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def fail(self, exc: BaseException) -> None:
        """Stop recording, and say why once (from whichever thread met the failure)."""
        import sqlite3

        if self.failed is not None:
            return
        if isinstance(exc, sqlite3.Error):
            why = str(ledger_error(exc, self.book.path))
        elif isinstance(exc, OSError | ValueError) or hasattr(exc, "code"):
            why = str(exc)
        else:
            why = f"{type(exc).__name__} writing {self.book.path.name}"
        self.failed = f"the ledger stopped recording: {why}"
        self._warn(self.failed)

    def _run(self) -> None:
        book = self.book
        stopping = False
        try:
            while not stopping:
                batch: list[Op] = []
                with contextlib.suppress(queue.Empty):
                    batch.append(self.queue.get(timeout=LINGER))
                while len(batch) < MAX_BATCH:
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                stopping = any(isinstance(op, Stop) for op in batch)
                if batch or book.pending:
                    self._batch(batch)
                if book.commits >= CHECKPOINT_EVERY and self.failed is None:
                    self._locked(book.checkpoint)
            if self.failed is None:
                self._locked(book.finish)
        finally:
            self._on_stop()

    def _locked(self, work: Callable[[], object]) -> None:
        with self.book.lock:
            try:
                work()
            except Exception as exc:  # whatever it was: stop writing, and say so once
                self.fail(exc)

    def _batch(self, batch: list[Op]) -> None:
        answers: list[tuple[Begin, Admission]] = []
        if self.failed is None:
            with self.book.lock:
                try:
                    answers = self.book.transaction(batch, wait=True) or []
                except Exception as exc:  # whatever it was: stop writing, and say so once
                    self.fail(exc)
        if self.failed is not None:
            self.book.pending.clear()
            answers = [(op, NOT_RECORDED) for op in batch if isinstance(op, Begin)]
        answer(answers)
        for op in batch:
            if isinstance(op, Query | Flush):
                op.done.set()
