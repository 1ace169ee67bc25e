"""Which file is the ledger, and opening it safely.

The default is ``$COPILOT_HOST_HOME/ledger.sqlite3``; ``--ledger FILE`` or
``COPILOT_HOST_LEDGER=FILE`` names another, ``--no-ledger`` or ``COPILOT_HOST_LEDGER=off``
turns recording off. An emulated gateway never records into the home (emulated credits
never enter a person's real history): only into a file named explicitly.

Opening goes through :func:`copilot_host.store.private_folder`: the folder is checked on
its descriptor, the file is made ``O_CREAT|O_EXCL|O_NOFOLLOW`` 0600 or, when it exists,
checked with ``lstat`` (a regular file of this user's, one name, private) before SQLite
opens it by name; SQLite's companions (``-wal``, ``-shm``) must pass the same checks when
present, and once SQLite has opened the file, the name must still be the file checked.
SQLite is opened with a URI (``mode=rw``: it never creates a file of its own) in WAL mode
with ``synchronous=NORMAL``: a commit survives the process being killed; only a power cut
can take the last ones.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from copilot_host import StoreError, StoreInsecureError
from copilot_host._internal import show_path
from copilot_host.store import PrivateFile, PrivateFolder, default_home, private_folder

from ._schema import ledger_error

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "BUSY_SECONDS",
    "LEDGER_NAME",
    "LEDGER_VARIABLE",
    "Opened",
    "WalUnavailable",
    "begin_immediate",
    "history_path",
    "is_busy",
    "ledger_path",
    "open_database",
    "runs_folder_name",
    "use_wal",
]

LEDGER_NAME = "ledger.sqlite3"
LEDGER_VARIABLE = "COPILOT_HOST_LEDGER"
_OFF = "off"
# SQLite's own files beside the ledger.
_COMPANIONS = ("-wal", "-shm", "-journal")
# How long a write waits for another process's transaction before it fails (a writer
# holds the lock for a batch of rows: well under a millisecond).
BUSY_SECONDS = 10.0
# SQLite's result codes for a lock another connection holds.
_BUSY = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
_NOUN = "ledger"
# SQLite opens only the file checked here, never making one of its own.
_URI_OPTIONS = "mode=rw"
_CODE = "ledger_insecure"


class WalUnavailable(Exception):
    """SQLite would not put the file in WAL mode (a file system without shared memory, a
    build without WAL): the ledger is off, with this message."""


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def ledger_path(
    *,
    option: str | os.PathLike[str] | None,
    no_ledger: bool,
    environ: Mapping[str, str],
    emulator: bool = False,
) -> Path | None:
    """The file ``serve`` and ``run`` record into, or None when they record nothing.
    ``--ledger`` wins over ``COPILOT_HOST_LEDGER``; both with ``--no-ledger`` is for the
    caller to refuse."""
    if no_ledger:
        return None
    if option is not None:
        return _absolute(option)
    configured = environ.get(LEDGER_VARIABLE, "").strip()
    if configured.lower() == _OFF:
        return None
    if configured:
        return _absolute(environ[LEDGER_VARIABLE])
    return None if emulator else default_home() / LEDGER_NAME


def history_path(*, option: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> Path:
    """The file ``usage --history`` reads: as :func:`ledger_path` names it, except that
    ``COPILOT_HOST_LEDGER=off`` (recording off) still reads the default file."""
    found = ledger_path(option=option, no_ledger=False, environ=environ)
    return found if found is not None else default_home() / LEDGER_NAME


def runs_folder_name(ledger: Path) -> str:
    """The folder beside the ledger that holds one lock file per running process."""
    return ledger.name + "-runs"


@dataclass
class Opened:
    """An open ledger: the connection, the file as checked, and its folder's checked
    descriptor (kept: the run locks are made through it)."""

    db: sqlite3.Connection
    file: PrivateFile
    folder: PrivateFolder

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            self.folder.close()


def _is_home(folder: Path) -> bool:
    return folder == default_home()


def open_database(path: Path, *, create: bool) -> Opened | None:
    """Open the ledger at ``path`` (made when missing and ``create``; None when missing
    otherwise); not yet in WAL mode (:func:`use_wal`). Raises ``ImportError`` when this
    Python has no ``sqlite3``, or a ``StoreError`` (codes ``ledger_insecure``,
    ``ledger_io``, ``ledger_corrupt``)."""
    import sqlite3

    folder_path = path.parent
    with private_folder(
        folder_path, home=_is_home(folder_path), create=create, noun=_NOUN, code=_CODE
    ) as folder:
        if folder is None:
            if create:
                raise StoreError(
                    f"The folder of the ledger {show_path(path)} does not exist; create it "
                    "or name a file in another folder",
                    code="ledger_io",
                )
            return None
        checked = folder.file(path.name, create=create)
        if checked is None:
            return None
        for suffix in _COMPANIONS:
            folder.check_companion(path.name + suffix)
        uri = "file:" + urllib.parse.quote(os.fspath(path)) + "?" + _URI_OPTIONS
        try:
            db = sqlite3.connect(
                uri,
                uri=True,
                timeout=BUSY_SECONDS,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise ledger_error(exc, path) from None
        # The folder is the caller's now (os.dup: private_folder closes its own).
        kept = PrivateFolder(folder.path, os.dup(folder.fd), noun=_NOUN, code=_CODE)
    opened = Opened(db, checked, kept)
    try:
        _still_same(checked)
        # A ledger a crafted file could turn into code runs nothing of the file's own.
        db.execute("PRAGMA trusted_schema = OFF")
    except sqlite3.Error as exc:
        opened.close()
        raise ledger_error(exc, path) from None
    except BaseException:
        opened.close()
        raise
    return opened


def _still_same(checked: PrivateFile) -> None:
    """What SQLite opened by name is the file that was checked."""
    if not checked.still_same():
        raise StoreInsecureError(
            f"The ledger {show_path(checked.path)} was replaced while it was opened; try again",
            code=_CODE,
        )


def use_wal(db: sqlite3.Connection, path: Path) -> None:
    """Put the file in WAL mode (once its version is known to be ours) with
    ``synchronous=NORMAL``; :class:`WalUnavailable` when SQLite cannot."""
    mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise WalUnavailable(
            f"SQLite cannot keep the ledger {show_path(path)} in WAL mode (it answered "
            f"{str(mode)[:20]!r}); the ledger is off: name a file on a local disk with "
            "--ledger"
        )
    db.execute("PRAGMA synchronous = NORMAL")


def is_busy(exc: BaseException) -> bool:
    """Whether SQLite raised ``exc`` for a lock another connection holds."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _BUSY


def begin_immediate(cursor: sqlite3.Cursor, path: Path, *, wait: bool, seconds: float) -> bool:
    """Take SQLite's write lock on ``cursor``'s connection (whose ``busy_timeout`` is 0).
    Without ``wait``, False when another connection holds it; with it, retry for up to
    ``seconds``, then a retryable ``StoreError``."""
    import sqlite3

    deadline: float | None = None
    pause = 0.001
    while True:
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if not wait:
                return False
            now = time.monotonic()
            if deadline is None:
                deadline = now + seconds
            elif now >= deadline:
                raise StoreError(
                    f"The ledger {show_path(path)} stayed locked by another process "
                    f"for {seconds:g} s",
                    code="ledger_io",
                    retryable=True,
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        else:
            return True
