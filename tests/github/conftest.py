"""Fixtures of the GitHub adapter tests: a store in a fresh home, a clock, an emulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Scenario
from tests._clock import FakeClock


@pytest.fixture
def store(copilot_home: Path) -> CredentialStore:
    return CredentialStore(copilot_home)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def emulator(request: pytest.FixtureRequest) -> Iterator[GitHubEmulator]:
    """The emulator with the scenario of ``@pytest.mark.parametrize("scenario", ...)``
    (indirect) or the default one."""
    scenario = getattr(request, "param", None) or Scenario()
    with GitHubEmulator(scenario) as emu:
        yield emu
