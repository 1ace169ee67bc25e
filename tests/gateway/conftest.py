"""Gateway test fixtures: the emulator, a running gateway on it, and a leak check of what
each test saw (responses, access lines) against the run's canaries and the client key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from copilot_host._accel import PURE_PYTHON_ENV
from copilot_host.gateway._server._stack import PURE_PYTHON
from copilot_host.testing import GitHubEmulator, Scenario
from tests._extras import require
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.test_serve import serve  # noqa: F401 - a child serve, for every module
from tests.security._support import TOKEN_SHAPES


@pytest.fixture(params=["aiohttp", "pure"])
def upstream_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each upstream transport the gateway may run on: aiohttp (serve's on [fast]) and
    httpx2's own (``COPILOT_HOST_PURE_PYTHON=1``). Modules that prove the relay's
    behaviour on both name it first (``pytestmark = pytest.mark.usefixtures(...)``), so
    it is set before their gateways are made (``running_gateway`` puts the emulator's
    transport over :func:`copilot_host.gateway.upstream_transport`)."""
    if request.param == "aiohttp":
        require("aiohttp")
    if request.param == "pure":
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    else:
        monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    return str(request.param)


@pytest.fixture
def emulator(request: pytest.FixtureRequest) -> Iterator[GitHubEmulator]:
    """The emulator with the scenario of ``@pytest.mark.parametrize("emulator", ...)``
    (indirect) or the default one."""
    scenario = getattr(request, "param", None) or Scenario()
    with GitHubEmulator(scenario) as emu:
        yield emu


@pytest.fixture
def gateway(emulator: GitHubEmulator, tmp_path: Path) -> Iterator[Gateway]:
    """A gateway serving a logged-in account, checked for leaks when the test ends."""
    with running_gateway(emulator, tmp_path / "home") as running:
        yield running
        assert_no_leaks(running)


@pytest.fixture(scope="module")
def shared_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway for a module whose tests change nothing it holds (no login, no
    scenario): see ``fresh_view``."""
    home = tmp_path_factory.mktemp("gateway") / "home"
    with GitHubEmulator() as emulator, running_gateway(emulator, home) as running:
        yield running


@pytest.fixture(scope="module")
def pure_shared_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """``shared_gateway`` on the pure-Python stack (h11 on asyncio), for the tests that
    must hold on both stacks serve may use."""
    home = tmp_path_factory.mktemp("gateway") / "home"
    with (
        GitHubEmulator() as emulator,
        running_gateway(emulator, home, stack=PURE_PYTHON) as running,
    ):
        yield running


@pytest.fixture(params=["default", "pure-python"])
def either_stack_gateway(request: pytest.FixtureRequest) -> Iterator[Gateway]:
    """The module's shared gateway on the default stack, then on the pure-Python one."""
    name = "shared_gateway" if request.param == "default" else "pure_shared_gateway"
    shared: Gateway = request.getfixturevalue(name)
    yield from fresh_view(shared)


def fresh_view(shared: Gateway) -> Iterator[Gateway]:
    """The shared gateway as a test sees it: the emulator's record and what was seen
    start empty, and are checked for leaks when the test ends."""
    shared.emulator.clear_requests()
    shared.seen.clear()
    shared.access.lines.clear()
    try:
        yield shared
    finally:
        shared.close_clients()
    assert_no_leaks(shared)


def assert_no_leaks(gateway: Gateway) -> None:
    """Neither the emulator's credentials nor the session or client key in anything the
    test saw of the gateway (access lines included)."""
    secrets = [*gateway.emulator.canaries()]
    texts = [*gateway.seen, *(("access line", line) for line in gateway.access.lines)]
    found = []
    for label, text in texts:
        found += [f"{label}: a canary" for canary in secrets if canary in text]
        found += [f"{label}: token-shaped text" for _ in TOKEN_SHAPES.finditer(text)]
    # The key is in what the test sent, never in what it got back or the log.
    found += [f"{label}: the client key" for label, text in texts if gateway.key in text]
    assert found == []
