"""Suite-wide isolation: no test touches the real keyring or home of whoever runs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from hypothesis import settings

from tests._keyring_base import TypedBackend

# CI runs 2,000 examples per target (SECURITY.md's figures are measured at that budget);
# a plain `pytest` runs 200, to stay quick; `HYPOTHESIS_PROFILE=long pytest` runs 20,000.
settings.register_profile("default", max_examples=200, deadline=None)
settings.register_profile("ci", max_examples=2000, deadline=None)
settings.register_profile("long", max_examples=20000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)


class MemoryKeyring(TypedBackend):
    """A recommended keyring backend that lives in this process only."""

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        try:
            del self.items[(service, username)]
        except KeyError:
            import keyring.errors

            raise keyring.errors.PasswordDeleteError("not found") from None


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def copilot_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("copilot-home")
    home.chmod(0o700)
    monkeypatch.setenv("COPILOT_HOST_HOME", str(home))
    # Nothing the suite runs may read a real person's tokens or folders.
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return home
