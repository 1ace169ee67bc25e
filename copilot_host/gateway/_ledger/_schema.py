"""The ledger's tables and how a file gets to them: ``PRAGMA user_version`` and migrations.

``user_version`` is the number of migration steps a file has been through. A file with more
than this copilot-host knows was written by a newer one: refused, as the store refuses a
newer record, never read with a guess at what changed. A file with fewer is brought up to
date in one write transaction (SQLite's DDL is transactional): a crash halfway leaves the
file as it was, and two processes starting at once migrate it once.

``requests`` holds one row per model request. ``status`` is the HTTP status its client got,
or ``'interrupted'`` when its process ended first (the reservation kept, estimated), or
NULL while the request is in flight when its start was written as a row (a process with a
daily budget; ``credits`` then holds its reservation, ``credits_estimated`` 1). Other starts
are kept in the run's journal until the row is written whole (``_journal``), whose ``seq``
the row keeps. ``runs`` holds one row per process writing the ledger, with
the highest row id when it began, so that what a dead run left in flight is found from
there on without an index on ``run_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from copilot_host import StoreCorruptError, StoreError, StoreVersionError
from copilot_host._internal import show_path

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "COLUMNS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "WRITTEN",
    "ledger_error",
    "migrate",
    "not_a_ledger",
    "user_version",
]

# sqlite3's result codes for a file that is not a database, or a damaged one.
_NOT_A_DATABASE = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB

Migration = Callable[["sqlite3.Connection"], None]


def _v1(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE requests (
            id INTEGER PRIMARY KEY,
            time REAL NOT NULL,
            run_id TEXT NOT NULL,
            login TEXT NOT NULL,
            agent TEXT NOT NULL,
            api TEXT NOT NULL,
            model_asked TEXT NOT NULL,
            model TEXT NOT NULL,
            status,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cached_tokens INTEGER,
            credits REAL,
            credits_estimated INTEGER NOT NULL DEFAULT 0,
            duration_ms INTEGER,
            rewrote TEXT NOT NULL DEFAULT ''
        )"""
    )
    # The one index: history, pruning and the day's total all ask for a span of time.
    db.execute("CREATE INDEX requests_by_time ON requests (time)")
    db.execute(
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            started REAL NOT NULL,
            first_row INTEGER NOT NULL
        ) WITHOUT ROWID"""
    )


def _v2(db: sqlite3.Connection) -> None:
    # A row written when its answer ended carries the sequence number its start had in
    # the run's journal (``_journal``), so settling a dead run's journal never counts a
    # request twice; NULL for rows written otherwise.
    db.execute("ALTER TABLE requests ADD COLUMN seq INTEGER")


# In order; a file's user_version is how many of them it has been through.
MIGRATIONS: tuple[Migration, ...] = (_v1, _v2)
SCHEMA_VERSION = len(MIGRATIONS)
# What a row is written with, in the order of the table (after its id).
WRITTEN = (
    "time",
    "run_id",
    "login",
    "agent",
    "api",
    "model_asked",
    "model",
    "status",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "credits",
    "credits_estimated",
    "duration_ms",
    "rewrote",
)
# What every version's requests table has (a check that the file is a ledger at all).
COLUMNS = frozenset({"id", *WRITTEN})


def user_version(db: sqlite3.Connection) -> int:
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def _not_newer(db: sqlite3.Connection, path: Path, known: int) -> int:
    """The file's version; refused when a newer copilot-host wrote it."""
    found = user_version(db)
    if found <= known:
        return found
    raise StoreVersionError(
        f"The ledger {show_path(path)} was written by a newer copilot-host (schema "
        f"{found}; this one knows {known}); upgrade copilot-host, or name another file "
        "with --ledger",
        code="ledger_version",
    )


def not_a_ledger(path: Path) -> StoreCorruptError:
    return StoreCorruptError(
        f"The ledger {show_path(path)} is not a copilot-host ledger or is damaged; move it "
        "aside (a new one is made in its place) or name another file with --ledger",
        code="ledger_corrupt",
    )


def migrate(
    db: sqlite3.Connection,
    path: Path,
    *,
    steps: Sequence[Migration] = MIGRATIONS,
    write: bool = True,
) -> int:
    """Bring the file to ``len(steps)`` (unless ``write`` is False: then only check it);
    returns the version it is at. Raises ``StoreVersionError`` (code ``ledger_version``)
    for a newer file and ``StoreCorruptError`` (``ledger_corrupt``) for one that is not
    a ledger."""
    import sqlite3

    known = len(steps)
    try:
        found = _not_newer(db, path, known)
        if found < known and write:
            db.execute("BEGIN IMMEDIATE")
            try:
                # Read again under the write lock: another process may have migrated.
                found = _not_newer(db, path, known)
                for step in steps[found:]:
                    step(db)
                # A pragma takes no parameter; the value is our own integer.
                db.execute(f"PRAGMA user_version = {known:d}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            found = known
        if found > 0:
            names = {row[1] for row in db.execute("PRAGMA table_info(requests)")}
            if not names >= COLUMNS:
                raise not_a_ledger(path)
    except sqlite3.Error as exc:
        raise ledger_error(exc, path) from None
    return found


def ledger_error(exc: Exception, path: Path) -> StoreError:
    """The typed error for what SQLite raised about the ledger at ``path``: damaged, or
    not writable now (busy past the timeout, a full disk: retryable)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _NOT_A_DATABASE:
        return not_a_ledger(path)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return StoreError(
        f"The ledger {show_path(path)} cannot be used now ({name}); try again, or run "
        "with --no-ledger",
        code="ledger_io",
        retryable=True,
    )
