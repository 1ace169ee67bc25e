"""Which processes are writing the ledger, told by a lock each holds (never by a pid).

A process writing the ledger holds an exclusive ``flock`` on ``<ledger>-runs/<run id>.lock``
from before its row in ``runs`` exists until after it is gone. The kernel drops a
``flock`` when the descriptor's last holder dies, however it dies (SIGKILL included), so a
run whose lock another process can take is dead, and a pid reused since means nothing.

What a dead run left in flight is settled under SQLite's write lock: its rows become
``interrupted`` (their reservation kept, marked estimated) and its ``runs`` row goes, in one
transaction, so two processes starting at once settle it once; the lock file is removed
only after that commits. A process can be taken for dead while it starts only if it has no
``runs`` row yet, and then it has no rows to settle either.

The lock file is also the run's journal (``_journal``): its requests in flight whose start
was not written as a row. Settling a dead run records each as ``interrupted`` too; a run
whose journal still holds requests when it lets its lock go (its writer failed) leaves the
file for the next start to settle.

A lock file with no ``runs`` row (a process killed between the two, or after removing its
row) is removed by the next start once its lock can be taken. A process that made its file
checks, once it holds the lock, that the name is still its file: if a sweep removed it in
between, it makes a new one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from copilot_host import StoreError
from copilot_host.store import PrivateFolder

from ._journal import SUFFIX, Flying, Journal, open_journal, read_journal
from ._records import INTERRUPTED, valid_run_id
from ._statements import INSERT_INTERRUPTED

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RunLock", "flying_of", "live_runs", "settle_dead_runs", "settle_flying"]

_OPEN = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class RunLock:
    """This process's hold on its run (see the module docstring)."""

    def __init__(self, folder: PrivateFolder, run_id: str, fd: int) -> None:
        self.folder = folder
        self.run_id = run_id
        self._fd = fd
        self.journal = Journal(fd)

    @classmethod
    def take(cls, folder: PrivateFolder, run_id: str) -> RunLock:
        """Make and lock the run's file in ``folder`` (the runs folder, which the lock
        owns from now on)."""
        name = run_id + SUFFIX
        for attempt in range(8):
            try:
                fd = os.open(name, _OPEN | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=folder.fd)
            except FileExistsError:
                if attempt == 0:
                    raise StoreError(
                        f"another process records into the ledger as run {run_id}; start again",
                        code="ledger_io",
                        retryable=True,
                    ) from None
                # Our own earlier file, which a sweep holds while it removes it.
                time.sleep(0.001 * attempt)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                # A sweep took it for an orphan and holds it while removing it.
                os.close(fd)
                continue
            if _names(folder, name, fd):
                return cls(folder, run_id, fd)
            os.close(fd)  # removed by a sweep before we held it: make another
        raise StoreError(
            "the ledger's run locks are being removed as fast as they are made; start again",
            code="ledger_io",
            retryable=True,
        )

    def release(self) -> None:
        """Remove the lock file, then let the lock go (after the run's row is gone); a
        journal still holding requests stays for the next start to settle."""
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            kept = bool(self.journal.taken())
            self.journal.close()
            if not kept and _names(self.folder, self.run_id + SUFFIX, fd):
                os.unlink(self.run_id + SUFFIX, dir_fd=self.folder.fd)
        finally:
            os.close(fd)
            self.folder.close()


def _names(folder: PrivateFolder, name: str, fd: int) -> bool:
    """Whether ``name`` in ``folder`` is the file open as ``fd``."""
    try:
        found = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)


@dataclass
class _Taken:
    """A dead run's lock, held by us until its rows are settled (None: no file left)."""

    run_id: str
    fd: int | None


def _take_if_dead(folder: PrivateFolder | None, run_id: str) -> _Taken | None:
    """The run's lock when it can be taken (its holder is gone); None while it is held."""
    if folder is None or not valid_run_id(run_id):
        return _Taken(run_id, None)
    try:
        fd = os.open(run_id + SUFFIX, _OPEN, dir_fd=folder.fd)
    except FileNotFoundError:
        return _Taken(run_id, None)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
            # A link, a socket, a folder: not a lock file of ours, so no one holds it.
            return _Taken(run_id, None)
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        # A FIFO (opened without blocking) or a device: not a lock file of ours either.
        os.close(fd)
        return _Taken(run_id, None)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return _Taken(run_id, fd)


def _let_go(folder: PrivateFolder | None, taken: Iterable[_Taken], *, remove: bool) -> None:
    for one in taken:
        if one.fd is None:
            continue
        try:
            name = one.run_id + SUFFIX
            if remove and folder is not None and _names(folder, name, one.fd):
                os.unlink(name, dir_fd=folder.fd)
        finally:
            os.close(one.fd)


def live_runs(db: sqlite3.Connection, folder: PrivateFolder | None) -> set[str]:
    """The runs whose process still holds its lock (a reader's view; changes nothing)."""
    alive = set()
    for (run_id,) in db.execute("SELECT run_id FROM runs").fetchall():
        taken = _take_if_dead(folder, run_id)
        if taken is None:
            alive.add(run_id)
        else:
            _let_go(folder, [taken], remove=False)
    return alive


def settle_dead_runs(db: sqlite3.Connection, folder: PrivateFolder) -> int:
    """Settle every dead run's rows and forget the run, in one write transaction of its
    own; then remove their lock files and any orphan lock file. Returns how many rows
    became ``interrupted``. A start calls it before it makes its own lock file, so a run
    id whose process died (a library caller names its runs) is settled like any dead run
    and can be taken again, where a live one's is refused by :meth:`RunLock.take`."""
    taken: list[_Taken] = []
    settled = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        runs = db.execute("SELECT run_id, first_row FROM runs").fetchall()
        for run_id, first_row in runs:
            dead = _take_if_dead(folder, run_id)
            if dead is None:
                continue
            taken.append(dead)
            settled += db.execute(
                "UPDATE requests SET status = ?, credits_estimated = (credits IS NOT NULL) "
                "WHERE id > ? AND run_id = ? AND status IS NULL",
                (INTERRUPTED, first_row, run_id),
            ).rowcount
            if dead.fd is not None:
                settled += settle_flying(db, run_id, first_row, read_journal(dead.fd))
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        known = {run_id for run_id, _first in runs}
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        _let_go(folder, taken, remove=False)
        raise
    _let_go(folder, taken, remove=True)
    _sweep(folder, known)
    return settled


def settle_flying(db: sqlite3.Connection, run_id: str, first_row: int, flying: list[Flying]) -> int:
    """Record the run's requests left in its journal as ``interrupted`` (inside the
    caller's write transaction), but for those whose row is written already; how many."""
    if not flying:
        return 0
    written = written_seqs(db, run_id, first_row, flying)
    for one in flying:
        if one.seq in written:
            continue
        db.execute(INSERT_INTERRUPTED, (*one.row(run_id), one.seq))
    return len(flying) - len(written)


def written_seqs(
    db: sqlite3.Connection, run_id: str, first_row: int, flying: list[Flying]
) -> set[int]:
    """The ``seq`` of those of ``flying`` whose row is in the table already (their process
    had committed it and not yet freed the slot)."""
    marks = ", ".join("?" * len(flying))
    found = db.execute(
        f"SELECT seq FROM requests WHERE id > ? AND run_id = ? AND seq IN ({marks})",  # noqa: S608 - placeholders only
        (first_row, run_id, *(one.seq for one in flying)),
    )
    return {int(row[0]) for row in found}


def flying_of(db: sqlite3.Connection, folder: PrivateFolder | None) -> list[tuple[str, Flying]]:
    """The requests in the journals of the runs the ledger knows whose row is not written
    yet (a reader's view: in flight while their run lives, else what the next start
    records as ``interrupted``)."""
    if folder is None:
        return []
    found: list[tuple[str, Flying]] = []
    for run_id, first_row in db.execute("SELECT run_id, first_row FROM runs").fetchall():
        fd = open_journal(folder.fd, run_id)
        if fd is None:
            continue  # nothing kept there
        try:
            flying = read_journal(fd)
        finally:
            os.close(fd)
        if flying:
            written = written_seqs(db, run_id, first_row, flying)
            found.extend((run_id, one) for one in flying if one.seq not in written)
    return found


def _sweep(folder: PrivateFolder, known: set[str]) -> None:
    """Remove lock files of runs the ledger does not know, once their lock is free."""
    for name in os.listdir(folder.fd):
        run_id = name.removesuffix(SUFFIX)
        if name == run_id or run_id in known or not valid_run_id(run_id):
            continue
        orphan = _take_if_dead(folder, run_id)
        if orphan is not None:
            _let_go(folder, [orphan], remove=True)
