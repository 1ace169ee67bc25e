"""A file the CLI writes at a path the user names (``--log``, ``usage --report``).

Opened 0600, never through a symbolic link, never blocking. An existing file is used only
when it is a regular file of this user's with exactly one name (it is then made 0600);
anything else is refused: a FIFO (which another user may have left in a shared folder,
and which would block the command until someone reads it, or feed what is written to
whoever does), a device, another user's file, or a second name of another file (which the
command would write through and make 0600).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from ._failure import CliFailure

__all__ = ["OwnFile", "open_own_file"]


class OwnFile:
    """An open descriptor of a checked file; ``created``: this open made it."""

    def __init__(self, fd: int, path: Path, *, created: bool) -> None:
        self.fd = fd
        self.path = path
        self.created = created

    def replace_contents(self, data: bytes) -> None:
        """The file holds ``data`` and nothing else."""
        os.ftruncate(self.fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def discard(self) -> None:
        """Close it, and remove it when this open made it (nothing was meant for it)."""
        os.close(self.fd)
        if self.created:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def open_own_file(path: Path, *, noun: str, code: str, append: bool) -> OwnFile:
    """``path`` opened for writing (at its end with ``append``, else at its start; its
    contents kept until written), or a :class:`CliFailure` with ``code`` that names the
    ``noun`` (``log file``) and what to do."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    if append:
        flags |= os.O_APPEND
    created = True
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            created = False
            fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads (O_NONBLOCK says so at once)
            raise CliFailure(code, _not_yours(noun, path)) from None
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise CliFailure(code, f"cannot write the {noun} {path}: {why}") from None
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_nlink != 1:
        os.close(fd)
        raise CliFailure(code, _not_yours(noun, path))
    os.set_blocking(fd, True)
    os.fchmod(fd, 0o600)
    return OwnFile(fd, path, created=created)


def _not_yours(noun: str, path: Path) -> str:
    return (
        f"the {noun} {path} is not a regular file of yours with one name (a FIFO, a "
        "device, another user's file or a hard link); name a new file or one of yours"
    )
