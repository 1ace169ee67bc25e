"""Crash-safe writes and checked reads of small private files, relative to a folder fd.

A write goes to a fresh temp file in the same folder (``O_CREAT|O_EXCL|O_NOFOLLOW``, 0600
from the moment it exists), is fsynced, renamed over the target with ``os.replace`` and the
folder is fsynced: a crash at any point leaves the old file or the new one, never a torn
one. A read opens with ``O_NOFOLLOW`` and checks type, owner and mode on the open
descriptor, so what is checked is what is read.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NamedTuple

from ._paths import TEMP_PREFIX, check_owned_private, file_symlink_error

__all__ = [
    "FileIdentity",
    "identity_of",
    "probe_writable",
    "read_private",
    "remove",
    "rename",
    "write_private",
]

# ELOOP on Linux and macOS, EMLINK on FreeBSD: what O_NOFOLLOW reports for a symlink.
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})


class FileIdentity(NamedTuple):
    """What the availability cache keys on: any rewrite, replace or chmod changes it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


def identity_of(st: os.stat_result) -> FileIdentity:
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_private(
    dir_fd: int, name: str, folder: Path, max_size: int
) -> tuple[bytes, FileIdentity] | None:
    """Read at most ``max_size + 1`` bytes (so the caller can tell "too large"), or None
    when the file does not exist."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in _SYMLINK_ERRNOS:
            raise file_symlink_error(folder / name) from None
        raise
    try:
        st = os.fstat(fd)
        check_owned_private(st, folder / name, "file")
        chunks: list[bytes] = []
        remaining = max_size + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), identity_of(st)
    finally:
        os.close(fd)


def write_private(dir_fd: int, name: str, data: bytes) -> None:
    """Replace ``name`` with ``data`` atomically and durably, mode 0600."""
    temp = TEMP_PREFIX + os.urandom(8).hex()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        try:
            # The umask can only have narrowed 0600; make it exactly 0600 so we can read it.
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        remove(dir_fd, temp)
        raise
    # The rename itself must survive a power cut, not only the file's bytes.
    os.fsync(dir_fd)


def probe_writable(dir_fd: int) -> None:
    """Create and remove an empty temp file: raises the OSError a real write would meet
    for want of permission or a writable file system. (A crash in between leaves a temp
    file that the next writer's sweep removes.)"""
    temp = TEMP_PREFIX + os.urandom(8).hex()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(temp, flags, 0o600, dir_fd=dir_fd))
    remove(dir_fd, temp)


def remove(dir_fd: int, name: str) -> bool:
    """Unlink ``name``; False when it was not there."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def rename(dir_fd: int, source: str, target: str) -> None:
    """Rename within the folder (the caller holds the lock and chose an unused target)."""
    os.rename(source, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)
