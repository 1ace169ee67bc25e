"""Private files beside the credential store, made and checked through a folder descriptor.

What the store does for its own record, for a file another part of copilot-host keeps (the
ledger): the folder is opened once and checked on its descriptor, and every name in it is
resolved relative to that descriptor, so swapping the folder for a link afterwards changes
nothing. A new file is made ``O_CREAT|O_EXCL|O_NOFOLLOW`` with mode 0600 from the moment it
exists; an existing one is looked at with ``lstat`` (never opened when it is a link, a FIFO
or a device) and must be a regular file of this user's, with one name, that no one else may
read. A file a library opens by name afterwards (SQLite does) is then only as safe as its
folder: hence the folder rules below.

* The store's home (``home=True``) is held to the store's own rules: not a link, this
  user's, mode 0700; created 0700 when missing.
* Any other folder (``--ledger FILE`` elsewhere) may be reached through links, must exist,
  and must be this user's (or root's) and writable by no one else: another user able to
  write there could plant a link where a companion file (SQLite's ``-wal``) will be made.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .._errors import StoreError, StoreInsecureError
from .._safety._text import shell_quote, show_path
from ._paths import open_home

__all__ = ["PrivateFile", "PrivateFolder", "private_folder"]

_PRIVATE_BITS = stat.S_IRWXG | stat.S_IRWXO
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
# What O_NOFOLLOW reports for a link: ELOOP on Linux and macOS, EMLINK on FreeBSD.
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})


@dataclass(frozen=True, slots=True)
class PrivateFile:
    """A checked private file: where it is, whether this call made it, and which file it
    was (device and inode), so that what a library later opens by name can be compared."""

    path: Path
    created: bool
    device: int
    inode: int

    def still_same(self) -> bool:
        """Whether ``path`` still names this very file (not a link, not a replacement)."""
        try:
            found = os.lstat(self.path)
        except OSError:
            return False
        return stat.S_ISREG(found.st_mode) and (found.st_dev, found.st_ino) == (
            self.device,
            self.inode,
        )


class PrivateFolder:
    """A checked folder descriptor (closed by :meth:`close` or ``with``); ``noun`` names
    what its files are in messages ("ledger"), ``code`` the error code of a refusal."""

    def __init__(self, path: Path, fd: int, *, noun: str, code: str) -> None:
        self.path = path
        self.fd = fd
        self.noun = noun
        self.code = code

    def __enter__(self) -> PrivateFolder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def file(self, name: str, *, create: bool) -> PrivateFile | None:
        """The private file ``name`` in this folder, made 0600 when missing and ``create``
        (else None); refused when it is anything but a private regular file of ours."""
        path = self.path / name
        found = self._lstat(name)
        created = False
        if found is None:
            if not create:
                return None
            try:
                fd = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=self.fd)
            except FileExistsError:
                return self.file(name, create=False)  # made meanwhile: checked as found
            try:
                # The umask can only have narrowed 0600: make it exactly that.
                os.fchmod(fd, 0o600)
                found = os.fstat(fd)
            finally:
                os.close(fd)
            created = True
        self._check_file(found, path)
        if not created:
            # lstat looked at a name; open it (never following a link, never blocking on
            # a FIFO) and check that the descriptor is the very file that was checked.
            try:
                fd = os.open(name, _CHECK_FLAGS, dir_fd=self.fd)
            except OSError as exc:
                if exc.errno in _LINK_ERRNOS:
                    raise self._insecure(f"{show_path(path)} is a symbolic link") from None
                if exc.errno in (errno.ENOENT, errno.ENXIO):
                    # Removed, or made a socket, between the check and the open.
                    raise self._insecure(
                        f"{show_path(path)} was replaced while it was checked"
                    ) from None
                raise
            try:
                opened = os.fstat(fd)
            finally:
                os.close(fd)
            if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
                raise self._insecure(f"{show_path(path)} was replaced while it was checked")
            self._check_file(opened, path)
        return PrivateFile(path, created, found.st_dev, found.st_ino)

    def check_companion(self, name: str) -> None:
        """A file a library makes beside ours (SQLite's ``-wal``, ``-shm``): when present,
        it must pass the same checks; it is never opened here."""
        found = self._lstat(name)
        if found is not None:
            self._check_file(found, self.path / name)

    def folder(self, name: str, *, create: bool = True) -> PrivateFolder | None:
        """The private subfolder ``name`` (0700, ours): made when missing and ``create``,
        else None."""
        path = self.path / name
        if create:
            try:
                os.mkdir(name, 0o700, dir_fd=self.fd)
                # By name (a 0000 folder under umask 0777 could not be opened to fchmod
                # it): made a moment ago in a folder only its owner can write.
                os.chmod(name, 0o700, dir_fd=self.fd)
            except FileExistsError:
                pass
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError as exc:
            if exc.errno in (*_LINK_ERRNOS, errno.ENOTDIR):
                raise self._insecure(f"{show_path(path)} is not a folder") from None
            raise
        found = os.fstat(fd)
        if found.st_uid != os.geteuid() or found.st_mode & _PRIVATE_BITS:
            os.close(fd)
            raise self._insecure(f"{show_path(path)} is not a private folder of yours")
        return PrivateFolder(path, fd, noun=self.noun, code=self.code)

    def _lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _check_file(self, found: os.stat_result, path: Path) -> None:
        shown = show_path(path)
        if stat.S_ISLNK(found.st_mode):
            raise self._insecure(f"{shown} is a symbolic link; refusing to follow it")
        if not stat.S_ISREG(found.st_mode):
            raise self._insecure(f"{shown} is not a regular file (a FIFO, a device or a folder)")
        uid = os.geteuid()
        if found.st_uid != uid:
            raise self._insecure(f"{shown} is owned by uid {found.st_uid}, not by you (uid {uid})")
        if found.st_nlink != 1:
            # A second name could be anywhere its owner can write: what is recorded here
            # would show up there, and what is read here is not only ours.
            raise self._insecure(f"{shown} has {found.st_nlink} names (hard links)")
        if found.st_mode & _PRIVATE_BITS:
            raise StoreInsecureError(
                f"The {self.noun} file {shown} is accessible to other users (mode "
                f"{stat.S_IMODE(found.st_mode):04o}); run: chmod 600 {shell_quote(path)}",
                code=self.code,
            )

    def _insecure(self, why: str) -> StoreInsecureError:
        return StoreInsecureError(
            f"The {self.noun} file cannot be used: {why}; remove it or name another file",
            code=self.code,
        )


_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHECK_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def private_folder(
    path: Path, *, home: bool, create: bool, noun: str, code: str
) -> Iterator[PrivateFolder | None]:
    """The checked folder ``path`` (see the module docstring), or None when it does not
    exist and may not be made (``create`` applies to the store's home only)."""
    if home:
        with open_home(path, create=create) as fd:
            if fd is None:
                yield None
                return
            # open_home closes its descriptor: hand out a duplicate of our own.
            folder = PrivateFolder(path, os.dup(fd), noun=noun, code=code)
    else:
        shared = _open_shared(path, noun=noun, code=code)
        if shared is None:
            yield None
            return
        folder = shared
    with folder:
        yield folder


def _open_shared(path: Path, *, noun: str, code: str) -> PrivateFolder | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except ValueError:
        raise StoreError(
            f"The {noun} folder {show_path(path)} cannot be used: its name holds a "
            "character no file name can hold",
            code=code,
        ) from None
    except NotADirectoryError:
        raise StoreInsecureError(
            f"The {noun} folder {show_path(path)} is not a folder; name a file in a folder",
            code=code,
        ) from None
    found = os.fstat(fd)
    if found.st_uid not in (os.geteuid(), 0) or found.st_mode & _OTHERS_WRITE:
        os.close(fd)
        raise StoreInsecureError(
            f"The {noun} folder {show_path(path)} is writable by other users (or theirs); "
            f"its files could be replaced there: name a file in a folder of yours",
            code=code,
        )
    return PrivateFolder(path, fd, noun=noun, code=code)
