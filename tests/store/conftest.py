"""Fixtures of the store tests: a real Secret Service, and children run unprivileged."""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Iterator
from typing import Any

import keyring
import pytest

from tests.store._keyrings import HangingKeyring, keyring_workers
from tests.store._secret_service import missing_programs, private_secret_service
from tests.store._unprivileged import Interpreter, Unprivileged, scratch_for, unprivileged_user


@pytest.fixture(scope="session")
def secret_service_address() -> Iterator[str]:
    """A private D-Bus session with an unlocked gnome-keyring, for the whole session.

    Skips where the programs are absent (a developer's laptop); under CI it fails instead,
    so a missing package can never quietly turn the real-backend tests off.
    """
    missing = missing_programs()
    if missing:
        reason = f"needs {' and '.join(missing)} (Debian packages gnome-keyring and dbus)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Secret Service tests: {reason}")
        pytest.skip(reason)
    try:
        import secretstorage  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI must run the Secret Service tests: secretstorage is missing")
        pytest.skip("needs the secretstorage package")
    with private_secret_service() as address:
        yield address


@pytest.fixture
def secret_service(secret_service_address: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """keyring's real SecretService backend, bound to the private bus for this test only."""
    from keyring.backends import SecretService

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", secret_service_address)
    backend = SecretService.Keyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture(scope="session")
def unprivileged_account() -> tuple[pwd.struct_passwd, Interpreter]:
    """The unprivileged user children run as (created once when the suite runs as root),
    and the interpreter that user can run."""
    return unprivileged_user()


@pytest.fixture
def unprivileged(
    unprivileged_account: tuple[pwd.struct_passwd, Interpreter],
) -> Iterator[Unprivileged]:
    """Runs Python children as an unprivileged user, in a fresh folder that user owns."""
    account, interpreter = unprivileged_account
    root = scratch_for(account)
    try:
        yield Unprivileged(account.pw_name, account.pw_uid, account.pw_gid, root, interpreter)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def hanging() -> Iterator[HangingKeyring]:
    """A keyring whose every call hangs until the test ends, like a prompt nobody answers."""
    backend = HangingKeyring()
    keyring.set_keyring(backend)
    yield backend
    backend.release.set()  # let the abandoned worker threads finish
    # ...and wait for them: while one runs, this process's keyring calls fail at once.
    for worker in keyring_workers():
        worker.join(10)
