"""Data keys in the OS keyring: the default :class:`KeyProtection`.

Every keyring call runs in a daemon worker thread and is abandoned after a timeout: a
locked keyring waiting on a prompt, or a hung D-Bus service, yields a typed error instead
of hanging the caller. (An abandoned call may still finish later; the worst it can do is
store a key under a fresh, unused login id.) Until it does, further calls fail at once,
so a hung keyring costs one thread, not one per call. The keyring is looked up when a key
is needed, never at import time, and only a recommended backend (priority >= 1) is
accepted.
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._bounded import Abandoned, call_bounded
from .._errors import KeyringUnavailableError
from ._header import KEYRING, ProtectionKind
from ._protection import KeyLeft, KeyNotFound
from ._record import KEY_BYTES

__all__ = ["SERVICE", "KeyringKeys", "backend_display_name"]

SERVICE = "copilot-host"
_log = logging.getLogger("copilot_host.store")
T = TypeVar("T")

# Names people know their keyring by, keyed on the backend's module.
_DISPLAY_NAMES = {
    "keyring.backends.SecretService": "Secret Service",
    "keyring.backends.libsecret": "Secret Service (libsecret)",
    "keyring.backends.macOS": "macOS Keychain",
    "keyring.backends.Windows": "Windows Credential Manager",
    "keyring.backends.kwallet": "KWallet",
}

_TROUBLE = {
    "keyring_locked": "the keyring is locked",
    "keyring_timeout": "the keyring did not answer",
    "keyring_unavailable": "the keyring cannot be used",
}

_KEY_FILE_HINT = (
    "to keep the key in a 0600 file beside the record instead, log in with --key-file "
    "(key_file=True): anyone who can read your files can then use the credential"
)


class _Abandoned:
    """The completion event of the last keyring call given up on, if it is still running.

    The backend is one per process (keyring.get_keyring()), so a call stuck in it blocks
    every store alike: one record for the whole process, not one per store.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: threading.Event | None = None

    def still_running(self) -> bool:
        with self._lock:
            return self._done is not None and not self._done.is_set()

    def remember(self, done: threading.Event) -> None:
        with self._lock:
            self._done = done


_ABANDONED = _Abandoned()


class _NoRecommendedKeyring(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def backend_display_name(backend: Any) -> str:
    cls = type(backend)
    if cls.__module__ == "keyring.backends.chainer":
        chained = list(getattr(backend, "backends", ()))
        return backend_display_name(chained[0]) if chained else "no keyring"
    if cls.__module__ == "keyring.backends.fail":
        return "no keyring"
    return _DISPLAY_NAMES.get(cls.__module__, cls.__qualname__)


def _recommended_backend() -> Any:
    import keyring  # lazy: keyring's backend discovery is slow

    backend = keyring.get_keyring()
    # Reading the priority may probe the service (Secret Service asks D-Bus), so this runs
    # inside the bounded worker too.
    priority = backend.priority
    if priority < 1:
        raise _NoRecommendedKeyring(backend_display_name(backend))
    return backend


class KeyringKeys:
    """Data keys in the OS keyring, one entry per login id (service "copilot-host"); the
    header records the keyring's display name ("Secret Service", "macOS Keychain")."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout

    @property
    def kind(self) -> ProtectionKind:
        return KEYRING

    def probe(self) -> None:
        """Raise the error a put would meet, if any, without creating an entry.

        It reads an entry that never exists: a locked or hung keyring shows itself on a
        read as it would on the write.
        """

        def call() -> None:
            _recommended_backend().get_password(SERVICE, "preflight")

        self._bounded(call, saving=True)

    def put(self, login_id: str, key: bytes) -> str:
        """Store ``key``; returns the backend's display name for the record header."""
        encoded = base64.b64encode(key).decode("ascii")

        def call() -> str:
            backend = _recommended_backend()
            backend.set_password(SERVICE, login_id, encoded)
            return backend_display_name(backend)

        return self._bounded(call, saving=True)

    def get(self, login_id: str, recorded: str) -> bytes | None:
        """The key; None when the entry is there but is no key (damage, like a record
        that fails its check). Raises KeyNotFound when the keyring in use has no entry:
        ``recorded`` (the keyring the record names) says where it should have been."""

        def call() -> tuple[str | None, str]:
            backend = _recommended_backend()
            value: str | None = backend.get_password(SERVICE, login_id)
            return value, backend_display_name(backend)

        encoded, in_use = self._bounded(call, saving=False)
        if encoded is None:
            raise _entry_missing(login_id, recorded, in_use)
        try:
            key = base64.b64decode(encoded.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            return None
        return key if len(key) == KEY_BYTES else None

    def remove(self, login_id: str, recorded: str) -> bool:
        """Remove the entry; False when the keyring in use has none. Raises KeyLeft when
        the keyring cannot be asked, or has none but the record names another keyring
        (``recorded``): the key may well live on there, where only a person can reach it."""

        def call() -> tuple[bool, str]:
            import keyring.errors

            backend = _recommended_backend()
            try:
                backend.delete_password(SERVICE, login_id)
            except keyring.errors.PasswordDeleteError:
                return False, backend_display_name(backend)  # not (or no longer) there
            return True, backend_display_name(backend)

        entry = f'service "{SERVICE}", user "{login_id}" in {recorded}'
        command = f"keyring del {SERVICE} {login_id}"
        try:
            removed, in_use = self._bounded(call, saving=False)
        except KeyringUnavailableError as exc:
            raise KeyLeft(entry, _TROUBLE.get(exc.code, "the keyring failed"), command) from None
        if not removed and in_use != recorded:
            raise KeyLeft(entry, f"the keyring in use now is {in_use}", command)
        return removed

    def location(self, login_id: str, recorded: str) -> str:
        return recorded

    def sweep(self, keep: str | None) -> bool:
        return False  # a keyring's entries cannot be listed

    def _bounded(self, call: Callable[[], T], *, saving: bool) -> T:
        hint = f"; nothing was saved: {_KEY_FILE_HINT}" if saving else ""
        if _ABANDONED.still_running():
            # Starting another worker would only strand one more thread behind it.
            _log.debug("keyring call refused: an abandoned call is still running")
            raise KeyringUnavailableError(
                "The OS keyring is not answering (an earlier request is still waiting; "
                f"it may be locked or showing an unlock prompt); unlock it and try again{hint}",
                code="keyring_timeout",
            )
        try:
            return call_bounded(call, self._timeout, name="copilot-host-keyring")
        except BaseException as error:
            failure = error
        # Raised outside the handler: the backend's exception (its text may echo anything)
        # must not ride along as the typed error's context.
        if isinstance(failure, Abandoned):
            _log.debug("keyring call abandoned after %.1f s", self._timeout)
            _ABANDONED.remember(failure.done)
            raise KeyringUnavailableError(
                f"The OS keyring did not answer within {self._timeout:g} s (it may be locked "
                f"or waiting for an unlock prompt); unlock it and try again{hint}",
                code="keyring_timeout",
            )
        raise _translate(failure, hint)


def _entry_missing(login_id: str, recorded: str, in_use: str) -> KeyNotFound:
    entry = f'service "{SERVICE}", user "{login_id}"'
    if in_use != recorded:
        message = (
            f"The stored login's encryption key was saved in the OS keyring ({recorded}), "
            f"but the keyring in use now ({in_use}) has no entry for it ({entry}); the "
            "record is kept: use the keyring that holds the key (for example, run with the "
            "PYTHON_KEYRING_BACKEND you logged in with), or log in again to replace the login"
        )
    else:
        message = (
            f"The OS keyring ({in_use}) has no entry for the stored login's encryption key "
            f"({entry}): it was removed, or the keyring was reset; the record is kept, but "
            "it cannot be used without that key: log in again to replace it"
        )
    return KeyNotFound(KeyringUnavailableError(message, code="keyring_entry_missing"))


def _translate(error: BaseException, hint: str) -> KeyringUnavailableError:
    # Only the exception's type is used: a backend's message could echo anything.
    import keyring.errors

    _log.debug("keyring call failed: %s", type(error).__name__)
    if isinstance(error, _NoRecommendedKeyring):
        return KeyringUnavailableError(
            f"No usable OS keyring to hold the credential's encryption key "
            f"(found: {error.name}){hint}",
            code="keyring_unavailable",
        )
    if isinstance(error, keyring.errors.KeyringLocked):
        return KeyringUnavailableError(
            f"The OS keyring is locked; unlock it and try again{hint}", code="keyring_locked"
        )
    return KeyringUnavailableError(
        f"The OS keyring failed ({type(error).__name__}); check that it is running and "
        f"unlocked, then try again{hint}",
        code="keyring_unavailable",
    )
