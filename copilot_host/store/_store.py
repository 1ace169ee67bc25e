"""``CredentialStore``: the only code that writes credentials to disk.

One record per login in the store folder (``credential``), its data key kept by a
:class:`~._protection.KeyProtection`: the OS keyring, or by explicit choice a
``credential-<login id>.key`` file. ``credential.lock`` serializes writers across
processes; records that fail to authenticate are renamed to
``credential.damaged-<UTC time>`` and kept, and their keys removed.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from .._clock import SYSTEM_CLOCK, Clock
from .._errors import (
    KeyringUnavailableError,
    NotLoggedInError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreVersionError,
)
from .._hosts import LoginIdentity
from .._safety._secret import Secret
from .._safety._text import show_path
from ._atomic import (
    FileIdentity,
    identity_of,
    probe_writable,
    read_private,
    remove,
    rename,
    write_private,
)
from ._gateway_key import GatewayKeyFile
from ._header import KEY_FILE, KEYRING, Protection, ProtectionKind, RecordHeader
from ._keyfile import KeyFileKeys
from ._keyring import KeyringKeys
from ._lock import StoreLock
from ._paths import (
    DAMAGED_PREFIX,
    KEY_FILE_PATTERN,
    KEY_REMOVED_SUFFIX,
    RECORD_NAME,
    TEMP_PATTERN,
    open_home,
    precheck_home,
    resolve_home,
    unusable_path_error,
)
from ._protection import KeyLeft, KeyNotFound, KeyProtection
from ._record import (
    KEY_BYTES,
    MAX_RECORD_BYTES,
    SealedRecord,
    check_account,
    check_client_id,
    check_token,
    format_for,
    new_login_id,
    open_sealed,
    parse,
    seal,
)

__all__ = ["CredentialStore", "Deleted", "Saved"]

_log = logging.getLogger("copilot_host.store")
# A reader that loses a race with a writer (the record was replaced and the old key removed
# between its two reads) reads again; this many changes in a row means something is wrong.
_READ_ATTEMPTS = 5


def _entries(count: int) -> str:
    return "this data key" if count == 1 else f"these {count} data keys"


class _Damaged(Exception):
    """Internal: the record at ``identity`` is not a well-formed record (``reason``)."""

    def __init__(self, reason: str, identity: FileIdentity) -> None:
        super().__init__(reason)
        self.reason = reason
        self.identity = identity


@dataclass(frozen=True, slots=True)
class Saved:
    """What :meth:`CredentialStore.save` did.

    ``header``: the new record's, as ``header()`` shows it. ``replaced``: the login it
    replaced (None: there was none, or it could not be read). ``set_aside``: where a record
    that could not be read was moved instead of replaced (kept, never deleted), else None.
    """

    header: RecordHeader
    replaced: RecordHeader | None = None
    set_aside: Path | None = None

    @property
    def identity(self) -> LoginIdentity:
        """Who logged in."""
        return self.header.identity


@dataclass(frozen=True, slots=True)
class Deleted:
    """What :meth:`CredentialStore.delete` did; true when anything was removed.

    ``record``: the login removed (None: there was none, or it could not be read).
    ``set_aside``: where a record that could not be read was moved (kept), else None.
    ``still_aside``: records set aside earlier, left where they are. ``removed``: whether
    anything was removed (a record, a key, or an unreadable record moved aside).
    """

    removed: bool
    record: RecordHeader | None = None
    set_aside: Path | None = None
    still_aside: tuple[Path, ...] = ()

    def __bool__(self) -> bool:
        return self.removed


class CredentialStore:
    """The durable GitHub credential of one store folder.

    ``home`` defaults to :func:`default_home` (``$COPILOT_HOST_HOME``, else the platform's
    per-user state folder), read when the store is constructed. New logins keep their data
    key in the OS keyring, or with ``key_file=True`` (an explicit choice: anyone who can
    read your files can then use the credential) in a 0600 file beside the record. Each
    record is read with the protection its header names, whichever this store writes.
    Nothing touches the disk or the keyring until a method needs it. Thread-safe; several
    processes may share a folder.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        key_file: bool = False,
        keyring_timeout: float = 3.0,
        lock_timeout: float = 5.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._home = resolve_home(home)
        self._record_path = self._home / RECORD_NAME
        self._record_str = os.fspath(self._record_path)
        self._clock = clock
        self._protections: dict[ProtectionKind, KeyProtection] = {
            KEYRING: KeyringKeys(keyring_timeout),
            KEY_FILE: KeyFileKeys(self._home),
        }
        self._key_file = bool(key_file)
        self._lock = StoreLock(self._home, timeout=lock_timeout, clock=clock)
        # (identity of the record file, who it names): replaced as a whole, so readers on
        # other threads see either the old pair or the new one.
        self._cache: tuple[FileIdentity, LoginIdentity] | None = None

    @property
    def home(self) -> Path:
        return self._home

    @property
    def record_path(self) -> Path:
        return self._record_path

    def __repr__(self) -> str:
        return f"CredentialStore(home={os.fspath(self._home)!r})"

    def lock(self) -> AbstractContextManager[None]:
        """The cross-process lock, as a context manager (re-entrant within a thread).

        Waits at most ``lock_timeout`` seconds, then raises StoreLockedError (retryable)
        naming the holder's pid when known. Hold it around read-modify-write sequences,
        never around a wait for the person.
        """
        return self._lock

    # -- reading without the key -------------------------------------------------------

    def header(self) -> RecordHeader | None:
        """The record's header as recorded (unauthenticated), or None when logged out.

        Needs no key, no keyring and no network.
        """
        with self._io("read"):
            found = self._read_checked()
        return None if found is None else self._shown(found[0].header)

    def availability(self) -> LoginIdentity | None:
        """Who is logged in, as recorded; one ``stat()`` when the record has not changed.

        Any change of the record file (device, inode, size, mtime, ctime) re-reads its
        header, so a logout or another login by another process shows on the next call.
        With no record, the folder is checked like every other call checks it: an open,
        foreign or symlinked folder raises StoreInsecureError, not "logged out". (A folder
        opened up after the record was read shows on the next read of the record.)
        """
        # The hot path: it runs before every request an application sends, so it is one
        # lstat() and three comparisons, with nothing else on the way. The cache keys on
        # device, inode, size, mtime and ctime; the kernel moves ctime whenever size or
        # mtime (or anything else about the file) changes, and a replaced record is a new
        # inode, so ctime, inode and device decide for all five.
        try:
            st = os.lstat(self._record_str)
        except (OSError, ValueError):
            return self._availability_without_record()
        cached = self._cache
        if cached is not None:
            key = cached[0]
            if st.st_ctime_ns == key[4] and st.st_ino == key[1] and st.st_dev == key[0]:
                return cached[1]
        with self._io("read"):
            found = self._read_checked()
        if found is None:
            self._cache = None
            return None
        record, identity = found
        who = record.header.identity
        self._cache = (identity, who)
        return who

    def _availability_without_record(self) -> LoginIdentity | None:
        """The record could not be stat()ed: logged out, or a typed error saying why."""
        self._cache = None
        with self._io("read"):
            try:
                os.lstat(self._record_str)
            except FileNotFoundError:
                # Only "no such file" means logged out, and only in a folder the store
                # may use: an open or foreign folder is refused here as by every other
                # call (never "not logged in"). A missing folder is fine.
                precheck_home(self._home)
                return None
            except ValueError:
                raise unusable_path_error(self._home) from None
            except OSError:
                # A file where the folder should be, a symlink loop...: the same typed
                # error header(), save() and the CLI give; else the OSError as store_io.
                precheck_home(self._home)
                raise
        # It appeared between the two calls: read it as usual.
        return self.availability()

    def set_aside(self) -> tuple[Path, ...]:
        """Records that failed to authenticate and were kept aside, oldest first."""
        with self._io("read"), open_home(self._home, create=False) as dir_fd:
            if dir_fd is None:
                return ()
            return self._aside_paths(dir_fd)

    def _aside_paths(self, dir_fd: int) -> tuple[Path, ...]:
        names = sorted(n for n in os.listdir(dir_fd) if n.startswith(DAMAGED_PREFIX))
        return tuple(self._home / name for name in names)

    # -- the credential ----------------------------------------------------------------

    def load(self) -> tuple[LoginIdentity, Secret]:
        """The stored identity and GitHub token, authenticated.

        Raises NotLoggedInError when there is no record, StoreVersionError for a newer
        format, and KeyringUnavailableError when the keyring cannot be asked. A key that
        is not where the record says (``keyring_entry_missing``: the keyring in use has
        no entry, say because another keyring is in use now; ``key_file_missing``) is an
        error that keeps the record. Only a record that does not authenticate under its
        key raises StoreCorruptError; it is then moved aside, and its key removed.
        """
        with self._io("read"):
            for _ in range(_READ_ATTEMPTS):
                try:
                    found = self._read()
                except _Damaged as damaged:
                    moved = self._move_aside_if_unchanged(damaged.identity)
                    if moved is None:
                        continue
                    raise self._corrupt_error(damaged.reason, moved) from None
                if found is None:
                    raise NotLoggedInError(
                        f"No GitHub login is stored in {show_path(self._home)}; log in first"
                    )
                record, identity = found
                try:
                    key = self._key_for(record.header)
                except KeyNotFound as missing:
                    # No sign of damage: the key is elsewhere (another keyring) or gone.
                    # Unless a writer replaced the record meanwhile (and removed the old
                    # key), say so and keep the record.
                    if self._unchanged(identity):
                        raise missing.error from None
                    continue
                token = open_sealed(record, key) if key is not None else None
                if token is not None:
                    self._cache = (identity, record.header.identity)
                    _log.debug("loaded credential record (login id %s)", record.header.login_id)
                    return record.header.identity, token
                # The key is there and the record does not open with it: damaged or
                # tampered with, unless a writer replaced it between our two reads (only
                # the first is moved aside).
                moved = self._move_aside_if_unchanged(identity, record.header)
                if moved is None:
                    continue
                raise self._corrupt_error(
                    "it failed its integrity check (it was modified or damaged)", moved
                )
        raise StoreLockedError(
            f"The credential record in {show_path(self._home)} kept changing while it was "
            "read; try again"
        )

    def preflight(self, *, key_file: bool | None = None) -> None:
        """Raise now the error a later ``save`` would meet for want of a usable folder or
        keyring, so nobody authorizes a login that cannot be kept. ``key_file`` overrides
        the store's choice for this call (None: the store's).

        Creates the store folder (0700) when it is missing, exactly as ``save`` would, and
        proves a file can be created in it (the probe file is removed at once); writes
        nothing else and never touches a record or the keyring's entries. A keyring that
        answers now can still fail at save time (locked in between); ``save`` stays the
        authority.
        """
        with self._io("check"):
            with open_home(self._home, create=True) as dir_fd:
                assert dir_fd is not None  # create=True
                probe_writable(dir_fd)
            self._writer(key_file).probe()

    def save(
        self,
        account: str,
        token: Secret,
        *,
        key_file: bool | None = None,
        client_id: str | None = None,
    ) -> Saved:
        """Persist a new login (fresh random login id) replacing any previous one, and
        say what was done (:class:`Saved`: the new header as ``header()`` would show it,
        ``.identity`` who logged in, the login replaced, a record set aside).

        The key is kept the store's way (``key_file`` overrides it for this call; None:
        the store's choice). ``client_id`` is the OAuth app the token was minted for,
        None for the default one (the record then stays format 1). Without a usable
        keyring no record and no key is written, and KeyringUnavailableError says how to
        choose a key file.
        """
        account = check_account(account)
        token = check_token(token)
        client_id = check_client_id(client_id)
        keys = self._writer(key_file)
        login_id = new_login_id()
        key = os.urandom(KEY_BYTES)
        with self._io("save"):
            # The lock refuses an insecure folder before a key is put anywhere for it.
            with self._lock, open_home(self._home, create=True) as dir_fd:
                assert dir_fd is not None  # create=True
                # The key first, under its own new name: a crash before the record is
                # replaced leaves the old record with its old key.
                header = RecordHeader(
                    version=format_for(client_id),
                    login_id=login_id,
                    account=account,
                    created_at=self._clock.time(),
                    protection=Protection(keys.kind, keys.put(login_id, key)),
                    client_id=client_id,
                )
                try:
                    previous, moved = self._previous_header(dir_fd)
                    write_private(dir_fd, RECORD_NAME, seal(header, key, token))
                except BaseException:
                    # Only a record that never took the new one's place may lose its key:
                    # a failure (or a signal) after the rename leaves the new record,
                    # which needs it.
                    if not self._holds(dir_fd, login_id):
                        self._forget_key(header)
                    raise
                self._sweep(dir_fd, keep=login_id)
            self._cache = None
            if previous is not None:
                self._forget_key(previous)
        _log.debug("saved credential record (login id %s, %s)", login_id, keys.kind)
        return Saved(self._shown(header), previous, moved)

    def delete(self) -> Deleted:
        """Log out locally: remove the record and every data key the store knows of, and
        say what was done (:class:`Deleted`, true when anything was removed).

        The keys of records set aside go too (their headers name them): a record set
        aside and its key would together still decrypt the token it held. A record that
        cannot be parsed is not deleted but renamed aside like any damaged record
        (``set_aside()`` lists it); that counts as removed. The lock file and records set
        aside stay. With nothing to remove, nothing is created (not even the folder or
        the lock file).

        When a key cannot be removed (the keyring is locked, or the record names another
        keyring than the one in use), everything else is still removed, then a
        KeyringUnavailableError (code ``keyring_entries_left``) names each entry left
        (service, user name and keyring) and how to remove it.
        """
        removed = False
        previous: RecordHeader | None = None
        moved: Path | None = None
        aside: tuple[Path, ...] = ()
        known: list[RecordHeader] = []
        with self._io("delete"):
            if not self._anything_to_delete():
                self._cache = None
                return Deleted(False, still_aside=self.set_aside())
            with self._lock, open_home(self._home, create=False) as dir_fd:
                if dir_fd is not None:
                    previous, moved = self._previous_header(dir_fd)
                    removed = moved is not None
                    aside = tuple(path for path in self._aside_paths(dir_fd) if path != moved)
                    known = [
                        *([previous] if previous is not None else []),
                        *self._aside_headers(dir_fd),
                    ]
                    if remove(dir_fd, RECORD_NAME):
                        removed = True
                        os.fsync(dir_fd)
                    removed = self._sweep(dir_fd, keep=None) or removed
            self._cache = None
            removed = self._remove_keys(known, record_removed=previous is not None) or removed
        _log.debug("deleted credential record (removed: %s)", removed)
        return Deleted(removed, previous, moved, aside)

    # -- the gateway's key ---------------------------------------------------------------

    def gateway_key(self, port: int, key: str) -> GatewayKeyFile:
        """``gateway-PORT.key`` in the store folder while a gateway runs (a context manager
        that gives where it is; see :mod:`copilot_host.store._gateway_key`): written
        atomically, 0600, in the folder as the store checks it, guarded against a second
        gateway on the same port by a lock of its own, removed on exit."""
        return GatewayKeyFile(self._home, port, key)

    # -- internals ---------------------------------------------------------------------

    @contextmanager
    def _io(self, action: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            # Disk full, permission denied, I/O error: still a typed, actionable error.
            raise StoreError(
                f"Could not {action} the credential store {show_path(self._home)}: "
                f"{exc.strerror or type(exc).__name__}",
                code="store_io",
            ) from exc

    def _read(self) -> tuple[SealedRecord, FileIdentity] | None:
        with open_home(self._home, create=False) as dir_fd:
            if dir_fd is None:
                return None
            found = read_private(dir_fd, RECORD_NAME, self._home, MAX_RECORD_BYTES)
        if found is None:
            return None
        data, identity = found
        try:
            record = parse(data)
        except StoreVersionError as exc:
            raise StoreVersionError(
                f"The credential record {show_path(self._record_path)} cannot be used: "
                f"{exc.message}"
            ) from None
        except StoreCorruptError as exc:
            raise _Damaged(exc.message, identity) from None
        return record, identity

    def _read_checked(self) -> tuple[SealedRecord, FileIdentity] | None:
        try:
            return self._read()
        except _Damaged as damaged:
            raise StoreCorruptError(
                f"The credential record {show_path(self._record_path)} is damaged "
                f"({damaged.reason}); log in again to replace it"
            ) from None

    def _shown(self, header: RecordHeader) -> RecordHeader:
        """The header as callers see it: where its key is (a key file by the path it is
        read from, though the record holds only its name)."""
        recorded = header.protection.backend
        where = self._keys_of(header).location(header.login_id, recorded)
        if where == recorded:
            return header
        return replace(header, protection=Protection(header.protection.kind, where))

    def _corrupt_error(self, reason: str, moved: Path) -> StoreCorruptError:
        return StoreCorruptError(
            f"The stored GitHub credential could not be used: {reason}; it was moved to "
            f"{show_path(moved)} and kept; log in again"
        )

    def _keys_of(self, header: RecordHeader) -> KeyProtection:
        """What keeps this record's key: the protection its header names."""
        return self._protections[header.protection.kind]

    def _writer(self, key_file: bool | None) -> KeyProtection:
        """What keeps the key of a new login: the store's choice unless overridden."""
        chosen = self._key_file if key_file is None else key_file
        return self._protections[KEY_FILE if chosen else KEYRING]

    def _key_for(self, header: RecordHeader) -> bytes | None:
        return self._keys_of(header).get(header.login_id, header.protection.backend)

    def _unchanged(self, identity: FileIdentity) -> bool:
        try:
            return identity_of(os.lstat(self._record_str)) == identity
        except FileNotFoundError:
            return False

    def _move_aside_if_unchanged(
        self, identity: FileIdentity, header: RecordHeader | None = None
    ) -> Path | None:
        """Under the lock, rename the record aside if it is still the file we read, and
        remove its key (``header`` names it when the record could be parsed); None when
        the record changed (or went) meanwhile."""
        with self._lock, open_home(self._home, create=False) as dir_fd:
            if dir_fd is None:
                return None
            try:
                st = os.stat(RECORD_NAME, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if identity_of(st) != identity:
                return None
            moved = self._rename_aside(dir_fd)
            # The record set aside is kept; its key is not: together they would still
            # decrypt the token the record once held (a damaged byte is easily flipped
            # back). Once the key is gone the name says so, and a logout leaves it be.
            if header is not None and self._forget_key(header):
                keyless = moved.name + KEY_REMOVED_SUFFIX
                rename(dir_fd, moved.name, keyless)
                moved = self._home / keyless
        return moved

    def _rename_aside(self, dir_fd: int) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock.time()))
        # A name is taken with or without the suffix it may get once its key is removed.
        existing = {n.removesuffix(KEY_REMOVED_SUFFIX) for n in os.listdir(dir_fd)}
        name = f"{DAMAGED_PREFIX}{stamp}"
        serial = 1
        while name in existing:
            serial += 1
            name = f"{DAMAGED_PREFIX}{stamp}-{serial}"
        rename(dir_fd, RECORD_NAME, name)
        _log.warning("damaged credential record set aside as %s", name)
        return self._home / name

    def _anything_to_delete(self) -> bool:
        """Without the lock: is there a folder with a record, a record set aside, a key
        file or a temp file in it?

        A "no" is safe to act on without locking: anything a concurrent login writes
        afterwards is simply newer than this logout."""
        with open_home(self._home, create=False) as dir_fd:
            if dir_fd is None:
                return False
            return any(
                name == RECORD_NAME
                or name.startswith(DAMAGED_PREFIX)  # its key, if any, goes too
                or KEY_FILE_PATTERN.match(name)
                or TEMP_PATTERN.match(name)
                for name in os.listdir(dir_fd)
            )

    def _previous_header(self, dir_fd: int) -> tuple[RecordHeader | None, Path | None]:
        """The current record's header (under the lock), and where an unparseable record
        was moved aside (kept, never deleted). A newer format is refused."""
        try:
            return self._header_at(dir_fd, RECORD_NAME), None
        except StoreVersionError as exc:
            raise StoreVersionError(
                f"The credential record {show_path(self._record_path)} was left unchanged: "
                f"{exc.message}"
            ) from None
        except StoreCorruptError:
            return None, self._rename_aside(dir_fd)

    def _sweep(self, dir_fd: int, *, keep: str | None) -> bool:
        """Under the lock: remove temp files of crashed writers and the keys (that can be
        listed) of logins other than ``keep``. True when a key was removed."""
        for name in os.listdir(dir_fd):
            if TEMP_PATTERN.match(name):
                remove(dir_fd, name)
        removed = False
        for keys in self._protections.values():
            removed = keys.sweep(keep) or removed
        return removed

    def _holds(self, dir_fd: int, login_id: str) -> bool:
        """Whether the record in place is ``login_id``'s (under the lock)."""
        try:
            header = self._header_at(dir_fd, RECORD_NAME)
        except (OSError, StoreError):
            return False
        return header is not None and header.login_id == login_id

    def _header_at(self, dir_fd: int, name: str) -> RecordHeader | None:
        """The header of the record file ``name`` (None when there is none); raises what
        reading and parsing raise."""
        found = read_private(dir_fd, name, self._home, MAX_RECORD_BYTES)
        return None if found is None else parse(found[0]).header

    def _remove_key(self, header: RecordHeader) -> bool:
        """Remove the data key ``header`` names; raises KeyLeft when it may remain."""
        return self._keys_of(header).remove(header.login_id, header.protection.backend)

    def _forget_key(self, header: RecordHeader) -> bool:
        """Best effort, for a key nothing can use any more (a save must not fail after
        the fact); True when the key is known to be gone. A logout tries again for the
        keys of records set aside and names any it cannot remove."""
        try:
            self._remove_key(header)
        except KeyLeft as left:
            _log.warning("an unused data key stayed (%s): %s", left.entry, left.why)
        except OSError as exc:
            _log.warning("could not remove an unused key file: %s", exc.strerror)
        except StoreError as exc:  # the folder changed under us (a key file's folder)
            _log.warning("could not remove an unused key: %s", exc.message)
        else:
            return True
        return False

    def _aside_headers(self, dir_fd: int) -> list[RecordHeader]:
        """The headers of the records set aside that can still be parsed: they name the
        login ids whose keys a logout must remove."""
        headers = []
        for name in sorted(os.listdir(dir_fd)):
            if not name.startswith(DAMAGED_PREFIX) or name.endswith(KEY_REMOVED_SUFFIX):
                continue
            try:
                header = self._header_at(dir_fd, name)
                if header is not None:
                    headers.append(header)
            except (OSError, StoreError):
                # Unreadable or not a record at all: it names no key. Never a reason to
                # refuse the logout.
                continue
        return headers

    def _remove_keys(self, headers: list[RecordHeader], *, record_removed: bool) -> bool:
        """Remove the keys of these records; True when any was removed. Raises naming
        every key left behind (and why), after trying them all."""
        removed = False
        left: list[KeyLeft] = []
        for header in headers:
            try:
                removed = self._remove_key(header) or removed
            except KeyLeft as exc:
                left.append(exc)
        if left:
            entries = "; ".join(f"{exc.entry} ({exc.why})" for exc in left)
            commands = " and ".join(exc.command for exc in left)
            done = "the credential record is removed" if record_removed else "nothing else is left"
            raise KeyringUnavailableError(
                f"Logged out locally ({done}), but {_entries(len(left))} could not be "
                f"removed: {entries}; remove {'them' if len(left) > 1 else 'it'} by hand once "
                f"that is fixed, for example: {commands}",
                code="keyring_entries_left",
            )
        return removed
