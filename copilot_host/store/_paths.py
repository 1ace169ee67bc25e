"""Where the store lives, what its files are called, and whether they may be trusted.

Every file operation goes through a descriptor of the home folder opened with
``O_NOFOLLOW`` and checked with ``fstat``: once that descriptor is checked, swapping the
folder for a symlink afterwards cannot redirect a read or a write (all names are resolved
relative to the descriptor).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._errors import StoreError, StoreInsecureError
from .._safety._text import shell_quote, show_path

__all__ = [
    "DAMAGED_PREFIX",
    "KEY_REMOVED_SUFFIX",
    "ENV_HOME",
    "KEY_FILE_PATTERN",
    "LOCK_NAME",
    "RECORD_NAME",
    "TEMP_PATTERN",
    "TEMP_PREFIX",
    "check_owned_private",
    "default_home",
    "file_symlink_error",
    "key_file_name",
    "open_home",
    "precheck_home",
    "resolve_home",
    "unusable_path_error",
]

ENV_HOME = "COPILOT_HOST_HOME"
RECORD_NAME = "credential"
LOCK_NAME = "credential.lock"
DAMAGED_PREFIX = "credential.damaged-"
# Ends the name of a record set aside whose key is known to be removed: a logout then has
# no reason to ask the keyring about it again (it may be locked, or another one, by then).
KEY_REMOVED_SUFFIX = ".key-removed"
# One key file per login id: a new login writes its key under a new name before the
# record is replaced, so a crash between the two writes never pairs a record with the
# wrong key.
KEY_FILE_PATTERN = re.compile(r"\Acredential-([0-9a-f]{32})\.key\Z")
TEMP_PREFIX = ".copilot-host-tmp-"
TEMP_PATTERN = re.compile(r"\A\.copilot-host-tmp-[0-9a-f]{16}\Z")

_PRIVATE_BITS = stat.S_IRWXG | stat.S_IRWXO


def key_file_name(login_id: str) -> str:
    return f"credential-{login_id}.key"


def default_home() -> Path:
    """The store folder used when none is given: ``$COPILOT_HOST_HOME`` when set (and not
    blank), else the platform's per-user state folder for copilot-host (on Linux
    ``$XDG_STATE_HOME/copilot-host``, by default ``~/.local/state/copilot-host``).

    Read when called, never at import time; the folder is not created.
    """
    configured = os.environ.get(ENV_HOME, "")
    # Blank means unset; anything else is a path, taken exactly as given (a folder name
    # may begin or end with a space).
    if configured.strip():
        return _absolute(configured)
    import platformdirs  # lazy: only needed when no home is configured

    return _absolute(platformdirs.user_state_dir("copilot-host"))


def resolve_home(home: str | os.PathLike[str] | None) -> Path:
    """The store folder: the argument, else :func:`default_home`."""
    return default_home() if home is None else _absolute(home)


def _absolute(home: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(home))))


def check_owned_private(st: os.stat_result, path: Path, what: str) -> None:
    """Refuse anything not owned by us or reachable by group/others, and a file with
    more than one name (a hard link).

    ``what`` is "folder" or "file"; the message says how to fix it.
    """
    expected_type = stat.S_ISDIR if what == "folder" else stat.S_ISREG
    if not expected_type(st.st_mode):
        raise StoreInsecureError(
            f"The credential store {what} {show_path(path)} is not a regular {what}; "
            "remove it or point COPILOT_HOST_HOME elsewhere"
        )
    uid = os.geteuid()
    if st.st_uid != uid:
        raise StoreInsecureError(
            f"The credential store {what} {show_path(path)} is owned by uid {st.st_uid}, "
            f"not by you (uid {uid}); refusing to use it: remove it or point "
            "COPILOT_HOST_HOME elsewhere"
        )
    if what == "file" and st.st_nlink > 1:
        # Another name for the same file (a hard link) could be anywhere the user can
        # write: what the store reads there is not only its own, and what it writes or
        # empties would show up under the other name too. No name at all (0) is a file
        # another process removed or replaced after it was opened here: no other name can
        # show it, and the read goes on as it did before the removal.
        raise StoreInsecureError(
            f"The credential store file {show_path(path)} has {st.st_nlink} names (hard "
            "links); refusing to use it: remove the other names, or remove it"
        )
    if st.st_mode & _PRIVATE_BITS:
        wanted = "700" if what == "folder" else "600"
        raise StoreInsecureError(
            f"The credential store {what} {show_path(path)} is accessible to other users "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); run: chmod {wanted} {shell_quote(path)}"
        )


def _symlink_error(path: Path, what: str) -> StoreInsecureError:
    return StoreInsecureError(
        f"The credential store {what} {show_path(path)} is a symbolic link; refusing to "
        "follow it: "
        "replace it with a real folder or point COPILOT_HOST_HOME elsewhere"
    )


def _not_a_folder_error(path: Path) -> StoreInsecureError | None:
    """When ``path`` or one of its parents is something other than a folder (a regular
    file, a device...), the error that names it; None when no such part is found."""
    for part in (*reversed(path.parents), path):
        try:
            # Parents may be symlinks to folders (/tmp on some systems); the home itself
            # is never followed.
            st = os.lstat(part) if part == path else os.stat(part)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            continue
        if part == path:
            return StoreInsecureError(
                f"The credential store folder {show_path(path)} is not a regular folder; "
                "remove it or point COPILOT_HOST_HOME elsewhere"
            )
        return StoreInsecureError(
            f"The credential store folder {show_path(path)} cannot be used: "
            f"{show_path(part)} is not a folder; remove it or point COPILOT_HOST_HOME elsewhere"
        )
    return None


def _open_dir(path: Path) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags)
    except ValueError:
        # Embedded NUL, or a str that cannot be encoded for the file system.
        raise unusable_path_error(path) from None
    except OSError as exc:
        # O_NOFOLLOW on a symlink: ELOOP on Linux, and ENOTDIR when O_DIRECTORY wins.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and path.is_symlink():
            raise _symlink_error(path, "folder") from None
        if exc.errno == errno.ENOTDIR:
            # A file where the folder (or one of its parents) should be: say which, the
            # same way whichever command meets it first.
            better = _not_a_folder_error(path)
            if better is not None:
                raise better from None
        raise


def _create_home(path: Path) -> None:
    try:
        for parent in reversed(_missing_parents(path)):
            try:
                _make_private_folder(parent)
            except FileExistsError:
                continue  # made meanwhile by someone else: taken as it is
        _make_private_folder(path)
    except FileExistsError:
        if path.parent.is_dir():
            return  # another process won the race; the checks on open decide.
        raise _not_a_folder_error(path) or _cannot_create(path, None) from None
    except OSError as exc:
        # /proc, a read-only mount, a missing permission: name the folder and the remedy.
        raise _cannot_create(path, exc) from exc


def _missing_parents(path: Path) -> list[Path]:
    """The parents of ``path`` that do not exist yet, nearest first."""
    missing = []
    for parent in path.parents:
        if os.path.lexists(parent):
            break
        missing.append(parent)
    return missing


def _make_private_folder(path: Path) -> None:
    """Create a folder 0700 whatever the umask: mkdir's mode is narrowed by it, and under
    umask 0377 a parent made 0400 could not even be entered to make the next folder. Only
    a folder made here is ever chmod-ed: an existing one is never narrowed or widened."""
    os.mkdir(path, 0o700)
    # By name, not through a descriptor: under umask 0777 the new folder is 0000 and
    # could not be opened, while chmod only asks that we own it.
    os.chmod(path, 0o700, follow_symlinks=False)


@contextmanager
def open_home(path: Path, *, create: bool) -> Iterator[int | None]:
    """Yield a checked descriptor of the home folder, or None when it does not exist
    (and ``create`` is False)."""
    try:
        fd = _open_dir(path)
    except FileNotFoundError:
        if not create:
            yield None
            return
        _create_home(path)
        fd = _open_dir(path)
    try:
        check_owned_private(os.fstat(fd), path, "folder")
        yield fd
    finally:
        os.close(fd)


def _cannot_create(path: Path, exc: OSError | None) -> StoreError:
    why = (exc.strerror or type(exc).__name__) if exc is not None else "a file is in the way"
    return StoreError(
        f"Could not create the credential store folder {show_path(path)}: {why}; "
        "point COPILOT_HOST_HOME at a folder you can write",
        code="store_io",
    )


def unusable_path_error(path: Path) -> StoreError:
    """The error for a folder name no file system call can take (a NUL character, or a
    surrogate that stands for no byte): refused as it is, never altered to fit."""
    return StoreError(
        f"The credential store folder {show_path(path)} cannot be used: its name holds a "
        "character no file name can hold; point COPILOT_HOST_HOME at another folder",
        code="invalid_store_path",
    )


def precheck_home(path: Path) -> None:
    """Refuse an insecure existing home before anything (such as a keyring entry) is
    written on its behalf; a missing home is fine (it is created 0700 later)."""
    with open_home(path, create=False):
        pass


def file_symlink_error(path: Path) -> StoreInsecureError:
    return _symlink_error(path, "file")
