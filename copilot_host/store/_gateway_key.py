"""``gateway-PORT.key``: a running gateway's key in the store folder, for the user's programs.

Written the store's way: in the store folder as the store checks it (owned, private),
atomically (a temp file renamed into place, so a reader never sees half a key and a
symlink or other file at the name is replaced, never followed), 0600 whatever the umask.

One gateway per port: the file is guarded by a lock of its own (``gateway-PORT.lock``,
an exclusive ``flock`` held while the gateway runs), not by a lock on the key file, since
the rename that writes the key swaps the file under any lock held on it. A key file left
by a gateway that died (its lock went with it) is stale and replaced; while another
gateway holds the lock (the same port on the other loopback family), starting fails and
its key file is left alone. On exit the key file is removed if it is still the one this
gateway wrote, and the lock file with it.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .._errors import StoreError, StoreLockedError
from .._safety._text import shell_quote, show_path
from ._atomic import remove, write_private
from ._paths import check_owned_private, open_home

__all__ = ["GatewayKey", "GatewayKeyFile", "gateway_key_name"]

_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def gateway_key_name(port: int) -> str:
    return f"gateway-{port}.key"


@dataclass(frozen=True, slots=True)
class GatewayKey:
    """Where the gateway's key is: ``path``, and ``quoted``, the path as one shell word."""

    path: Path
    quoted: str


class GatewayKeyFile:
    """The key file while a gateway runs: a context manager giving a :class:`GatewayKey`.

    Raises StoreLockedError (``gateway_running``) when another gateway holds the port's
    lock, the store's folder errors (``store_insecure``...) for a folder it would refuse,
    and StoreError (``key_file_io``) when the key cannot be written; no copy of the key
    stays behind after a failure.
    """

    def __init__(self, home: Path, port: int, key: str) -> None:
        if not (isinstance(port, int) and 0 < port < 65536):
            raise ValueError("a gateway's port is 1-65535")
        if not (key.isascii() and key.isprintable()):
            raise ValueError("a gateway key is printable ASCII")
        self._home = home
        self._name = gateway_key_name(port)
        self._lock_name = f"gateway-{port}.lock"
        self._key = key
        self._dir_fd = -1
        self._lock_fd = -1
        self._written = -1
        self.key = GatewayKey(home / self._name, shell_quote(home / self._name))

    def __enter__(self) -> GatewayKey:
        try:
            with open_home(self._home, create=True) as dir_fd:
                assert dir_fd is not None  # create=True
                self._dir_fd = os.dup(dir_fd)
            self._lock()
            write_private(self._dir_fd, self._name, (self._key + "\n").encode("ascii"))
            # Held open so its inode is not reused while we run: on exit, a file someone
            # put at the name since cannot pass for ours.
            self._written = os.open(
                self._name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._dir_fd
            )
        except OSError as exc:  # a full disk, a read-only folder, an I/O error
            self._release()
            raise StoreError(
                f"could not write the key file {show_path(self.key.path)}: "
                f"{exc.strerror or type(exc).__name__}",
                code="key_file_io",
            ) from None
        except BaseException:
            self._release()
            raise
        return self.key

    def __exit__(
        self,
        kind: type[BaseException] | None = None,
        error: BaseException | None = None,
        trace: TracebackType | None = None,
    ) -> None:
        self._release()

    def _lock(self) -> None:
        """Take the port's lock, on the file that is at its name (a gateway that left
        removes it: a lock taken on a file just unlinked would guard nothing)."""
        path = self._home / self._lock_name
        for _ in range(8):
            fd = os.open(self._lock_name, _LOCK_FLAGS, 0o600, dir_fd=self._dir_fd)
            try:
                check_owned_private(os.fstat(fd), path, "file")
                os.fchmod(fd, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                mine = os.fstat(fd)
                try:
                    there = os.stat(self._lock_name, dir_fd=self._dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    there = None
            except BlockingIOError:
                os.close(fd)
                raise StoreLockedError(
                    f"another gateway on this port holds {show_path(path)}",
                    code="gateway_running",
                ) from None
            except BaseException:
                os.close(fd)
                raise
            if there is not None and (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                self._lock_fd = fd
                return
            os.close(fd)  # unlinked by the gateway that held it: try the new one
        raise StoreLockedError(f"could not take the lock {show_path(path)}", code="gateway_running")

    def _release(self) -> None:
        dir_fd, lock_fd = self._dir_fd, self._lock_fd
        try:
            if lock_fd >= 0 and dir_fd >= 0:
                written = self._written
                if written >= 0:
                    mine = os.fstat(written)
                    try:
                        there = os.stat(self._name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        there = None
                    # Only the file this gateway wrote: one someone put there since stays.
                    if there is not None and (there.st_dev, there.st_ino) == (
                        mine.st_dev,
                        mine.st_ino,
                    ):
                        remove(dir_fd, self._name)
                    # Emptied too (ours, whoever holds its name now), so a copy opened
                    # elsewhere meanwhile reads nothing once the gateway is gone.
                    os.ftruncate(written, 0)
                remove(dir_fd, self._lock_name)
        finally:
            written = self._written
            self._dir_fd = self._lock_fd = self._written = -1
            for fd in (written, lock_fd, dir_fd):
                if fd >= 0:
                    os.close(fd)
