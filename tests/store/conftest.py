"""Fixtures of the store tests: a real Secret Service, and a keyring shared by processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import keyring
import pytest

from tests.store._secret_service import missing_programs, private_secret_service


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
