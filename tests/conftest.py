"""Suite-wide isolation: no test touches the real keyring or home of whoever runs it."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# -- how long the suite took, as a ratio to a fixed workload timed in the same run ----------
# These machines differ about 3x in Python speed from one session to the next, so a bare
# duration says little; the same duration over a fixed pure-Python workload (the
# interpreter, json and the allocator, as the suite uses them) compares across machines.

_REFERENCE_DOCUMENT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "x" * 64}] * 32}


def _reference_workload() -> float:
    """Seconds for the fixed workload: the best of three runs."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(2_000):
            json.loads(json.dumps(_REFERENCE_DOCUMENT))
        sum(i * i for i in range(200_000))
        best = min(best, time.perf_counter() - started)
    return best


def pytest_sessionstart(session: pytest.Session) -> None:
    # A suite started in the background by a shell without job control (`pytest &`,
    # `sh -c '... &'`) inherits SIGINT and SIGQUIT ignored, and one started under `nohup`
    # SIGHUP, and so would every process the tests start; the signal tests send them and
    # expect the usual dispositions. The product's own rule (an ignored signal stays
    # ignored) is tested by setting it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGQUIT, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
    if not hasattr(session.config, "workerinput"):  # the controller, not an xdist worker
        session.config.stash[_STARTED] = (time.perf_counter(), _reference_workload())


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started = config.stash.get(_STARTED, None)
    if started is None:
        return
    # The report's screenshots (tests/ledger/test_report_chromium.py), where CI keeps them.
    shots = os.environ.get("COPILOT_HOST_SCREENSHOTS")
    if shots and Path(shots).is_dir():
        for shot in sorted(Path(shots).glob("*.png")):
            terminalreporter.write_line(f"report screenshot: {shot}")
    began, reference = started
    took = time.perf_counter() - began
    terminalreporter.write_line(
        f"suite time: {took:.0f} s, {took / reference:,.0f}x the reference workload "
        f"({reference * 1000:.0f} ms on this machine, timed at the start of this run)"
    )


_STARTED = pytest.StashKey[tuple[float, float]]()
