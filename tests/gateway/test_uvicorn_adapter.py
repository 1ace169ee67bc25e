"""The one uvicorn adapter (gateway/_uvicorn.py) checks at serve() that the uvicorn
installed has every class, method, attribute and setting it relies on, refusing with one
line naming what is missing, and warns once for a release newer than the tested range."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path

import pytest
import uvicorn
from uvicorn.protocols.http import h11_impl

import copilot_host as ch
from copilot_host.gateway import GatewayServer
from copilot_host.gateway._server import _uvicorn
from copilot_host.gateway._server._stack import PURE_PYTHON

ROOT = Path(__file__).resolve().parents[2]


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("never served")


def test_the_installed_uvicorn_has_all_the_adapter_relies_on() -> None:
    assert _uvicorn._missing("h11") == []
    _uvicorn.check("h11")


def test_a_missing_method_refuses_serve_before_anything_is_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(uvicorn.Server, "capture_signals")
    server = GatewayServer(port=0, stack=PURE_PYTHON)
    with pytest.raises(ch.CopilotHostError) as raised:
        asyncio.run(server.serve(_app))
    error = raised.value
    assert error.code == "server_unsupported"
    assert "Server.capture_signals" in error.message
    assert "\n" not in error.message
    lo, hi = _uvicorn.TESTED
    assert f"tested with uvicorn {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}" in error.message
    assert not server.started


def test_an_attribute_init_no_longer_sets_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    original = h11_impl.RequestResponseCycle.__init__

    def renamed(self: object, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(h11_impl.RequestResponseCycle, "__init__", renamed)
    assert _uvicorn._missing("h11") == [
        "RequestResponseCycle.response_complete",
        "RequestResponseCycle.body",
    ]


def test_a_setting_config_lost_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    original = uvicorn.Config.__init__

    def fewer(self: uvicorn.Config, app: object, server_header: bool = True) -> None:
        original(self, app)  # type: ignore[arg-type]

    monkeypatch.setattr(uvicorn.Config, "__init__", fewer)
    missing = _uvicorn._missing("h11")
    assert "Config(h11_max_incomplete_event_size=)" in missing
    assert "Config(server_header=)" not in missing


def test_a_newer_release_warns_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hi = _uvicorn.TESTED[1]
    monkeypatch.setattr(uvicorn, "__version__", f"{hi[0]}.{hi[1] + 1}.0")
    monkeypatch.setattr(_uvicorn, "_warned", set())
    with caplog.at_level(logging.WARNING, "copilot_host.gateway"):
        _uvicorn.check("h11")
        _uvicorn.check("h11")
    warned = [r.getMessage() for r in caplog.records if "newer than" in r.getMessage()]
    assert warned == [
        f"uvicorn {hi[0]}.{hi[1] + 1}.0 is newer than the releases copilot-host is tested "
        f"with ({_uvicorn.TESTED[0][0]}.{_uvicorn.TESTED[0][1]} to {hi[0]}.{hi[1]})"
    ]
    caplog.clear()
    monkeypatch.setattr(uvicorn, "__version__", f"{hi[0]}.{hi[1]}.9")
    with caplog.at_level(logging.WARNING, "copilot_host.gateway"):
        _uvicorn.check("h11")
    assert caplog.records == []


def test_the_installed_release_is_within_the_tested_range() -> None:
    # CI installs the newest uvicorn: a release past TESTED fails here, so that the
    # range is raised only once the suite has passed on it.
    assert _uvicorn.TESTED[0] <= _uvicorn._version() <= _uvicorn.TESTED[1]


def test_only_the_adapter_and_the_serving_module_name_uvicorn_and_the_cli_imports_none() -> None:
    found = subprocess.run(
        ["grep", "-rln", "--include=*.py", "import uvicorn\\|from uvicorn", "copilot_host", "cli"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert sorted(found) == ["copilot_host/gateway/_server/_uvicorn.py"]
