"""The cross-process lock: ``flock`` on a lock file that is never deleted.

The kernel drops an ``flock`` when its holder's descriptor closes, which includes the holder
being killed, so a crash never leaves a stale lock, and since the file is never deleted two
processes can never lock two different inodes under the same name. Waits are bounded: after
``timeout`` seconds a typed, retryable error names the holder's pid when it is known (the
holder writes it into the file). Within one process the lock is re-entrant for the thread
that holds it and other threads queue on an in-process lock first.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .._clock import Clock
from .._errors import StoreLockedError
from .._safety._text import show_path
from ._paths import LOCK_NAME, check_owned_private, file_symlink_error, open_home

__all__ = ["StoreLock"]

_log = logging.getLogger("copilot_host.store")
_LOCK_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.05


class StoreLock:
    """Use as ``with lock:``; the same object serves every thread of the process."""

    def __init__(
        self,
        home: Path,
        *,
        timeout: float,
        clock: Clock,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._home = home
        self._timeout = timeout
        self._clock = clock
        self._sleep = sleep
        self._threads = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> None:
        deadline = self._clock.monotonic() + self._timeout
        if not self._threads.acquire(timeout=max(self._timeout, 0.0)):
            raise self._locked_error(os.getpid())
        try:
            if self._depth == 0:
                self._fd = self._acquire(deadline)
            self._depth += 1
        except BaseException:
            self._threads.release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    # Forget our pid first so a waiter never names a process that left.
                    _forget_holder(fd)
                finally:
                    os.close(fd)  # closing releases the flock
        finally:
            self._threads.release()

    def _open(self) -> int:
        with open_home(self._home, create=True) as dir_fd:
            assert dir_fd is not None  # create=True
            try:
                return _open_lock_file(dir_fd, self._home / LOCK_NAME)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise file_symlink_error(self._home / LOCK_NAME) from None
                raise

    def _acquire(self, deadline: float) -> int:
        fd = self._open()
        try:
            pause = _FIRST_PAUSE
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if self._clock.monotonic() >= deadline:
                        raise self._locked_error(_holder(fd)) from None
                    self._sleep(pause)
                    pause = min(pause * 2, _LONGEST_PAUSE)
            _record_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _locked_error(self, holder: int | None) -> StoreLockedError:
        who = f"process {holder}" if holder is not None else "another process"
        return StoreLockedError(
            f"The credential store {show_path(self._home)} is busy: {who} has held its lock "
            f"for more than {self._timeout:g} s; try again when it finishes"
        )


def _open_lock_file(dir_fd: int, path: Path) -> int:
    """Open the lock file for reading and writing, creating it 0600 when it is missing."""
    try:
        fd = os.open(LOCK_NAME, _LOCK_FLAGS | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
        created = True
    except FileExistsError:
        try:
            fd = os.open(LOCK_NAME, _LOCK_FLAGS, dir_fd=dir_fd)
        except PermissionError:
            _repair_mode(dir_fd, path)
            fd = os.open(LOCK_NAME, _LOCK_FLAGS, dir_fd=dir_fd)
        created = False
    try:
        check_owned_private(os.fstat(fd), path, "file")
        if created:
            # The umask can only have narrowed 0600: under umask 0277 the file would be
            # 0400, and the next open for writing (every save and logout) would fail.
            os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _repair_mode(dir_fd: int, path: Path) -> None:
    """Our lock file, but read-only: what an earlier version left under a strict umask.
    The file is never deleted, so without this every later save and logout would fail;
    only our own file is changed, and never to more than 0600."""
    fd = os.open(LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        check_owned_private(os.fstat(fd), path, "file")
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _record_holder(fd: int) -> None:
    """Write our pid into the lock file, best effort: it only improves a waiter's error
    message, so a full disk or a quota must not stop a logout that frees space."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        _log.debug("could not record the lock holder's pid: %s", exc.strerror)


def _forget_holder(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    except OSError as exc:
        _log.debug("could not clear the lock holder's pid: %s", exc.strerror)


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
