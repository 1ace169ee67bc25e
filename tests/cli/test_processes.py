"""Real processes: the installed console script, and the emulator harness for login/models.

Marked slow (real processes); each stays within a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from copilot_host_cli._models import TITLES

from copilot_host import Secret
from copilot_host._version import __version__
from copilot_host.store import CredentialStore
from tests.github._support import REALISTIC_ROUTES

from .conftest import HARNESS, LeakGuard, Proc, canary_token, child_env

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("copilot_home")]


def test_console_script_version_and_help(proc: Proc) -> None:
    version = proc.script("--version")
    assert (version.returncode, version.stdout, version.stderr) == (
        0,
        f"copilot-host {__version__}\n",
        "",
    )
    helped = proc.script("--help")
    assert helped.returncode == 0
    assert "Examples:" in helped.stdout
    for command in ("login", "logout", "status", "models", "demo"):
        assert command in helped.stdout
    usage = proc.script("frobnicate")
    assert usage.returncode == 2
    assert usage.stdout == ""


def test_console_script_status_and_logout(
    proc: Proc, leak_guard: LeakGuard, copilot_home: Path
) -> None:
    logged_out = proc.script("status")
    assert (logged_out.returncode, logged_out.stdout) == (1, "Not logged in.\n")

    token = leak_guard.canary(canary_token())
    CredentialStore().save("octocat", Secret(token), key_file=True)
    status = proc.script("status", "--json")
    assert status.returncode == 0
    assert json.loads(status.stdout)["account"] == "octocat"

    logout = proc.script("logout")
    assert logout.returncode == 0
    assert logout.stdout == "Logged out (octocat): removed the local credential and its key.\n"
    assert "https://github.com/settings/applications" in logout.stderr
    assert proc.script("status").returncode == 1
    again = proc.script("logout")
    assert (again.returncode, again.stdout) == (0, "Already logged out: nothing to remove.\n")


def test_console_script_demo_touches_nothing_real(
    proc: Proc, copilot_home: Path, tmp_path: Path
) -> None:
    # The demo must not use the configured home, and must find no keyring it could use.
    before = sorted(os.listdir(copilot_home))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    demo = proc.script("demo", env={"TMPDIR": str(tmpdir)})
    assert demo.returncode == 0, demo.stderr
    lines = demo.stdout.splitlines()
    steps = [line for line in lines if line.startswith("ok [")]
    assert len(steps) == 10
    for wanted in (
        "device code",
        "authorization simulated",
        "stored encrypted",
        "registered",
        "Chat Completions request through route.auth",
        "Responses request through route.auth",
        "logged out",
    ):
        assert any(wanted in step for step in steps), wanted
    assert all(step.rstrip().endswith(("ms)", "s)")) for step in steps)
    assert "answered: echo: Say hello." in demo.stdout
    assert sorted(os.listdir(copilot_home)) == before
    assert os.listdir(tmpdir) == []  # the throwaway home is gone
    assert demo.stderr == ""


def _canaries(guard: LeakGuard, path: Path) -> None:
    for line in path.read_text().splitlines():
        guard.canary(line)


def test_harness_login(proc: Proc, leak_guard: LeakGuard, tmp_path: Path) -> None:
    canaries = tmp_path / "canaries"
    login = proc.harness(
        "--fast", "--canaries", str(canaries), "--", "login", "--headless", "--json", "--key-file"
    )
    _canaries(leak_guard, canaries)
    assert login.returncode == 0, login.stderr
    events = [json.loads(line) for line in login.stdout.splitlines()]
    assert [e["event"] for e in events] == ["device_code", "authorized"]
    assert events[1]["protection"] == "key-file"

    status = proc.script("status")
    assert status.returncode == 0
    assert status.stdout.startswith("Logged in to GitHub as octocat")


def test_harness_models(proc: Proc, leak_guard: LeakGuard, tmp_path: Path) -> None:
    canaries = tmp_path / "canaries"
    models = proc.harness("--logged-in", "--canaries", str(canaries), "--", "models", "--json")
    _canaries(leak_guard, canaries)
    assert models.returncode == 0, models.stderr
    assert len(json.loads(models.stdout)["models"]) == REALISTIC_ROUTES

    table = proc.harness("--logged-in", "--canaries", str(canaries), "--", "models")
    _canaries(leak_guard, canaries)
    assert table.returncode == 0
    # The table itself (its columns pinned in tests/cli/test_models.py), not an error.
    assert table.stdout.splitlines()[0].split() == list(TITLES)

    logged_out = proc.harness("--", "logout")
    assert logged_out.returncode == 0
    failed = proc.harness("--", "models")
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == "error: not logged in: run `copilot-host login` first\n"


def _no_leftovers(home: Path) -> None:
    assert CredentialStore().header() is None
    leftovers = [n for n in os.listdir(home) if n != "credential.lock"] if home.exists() else []
    assert leftovers == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_the_login_wait(
    leak_guard: LeakGuard, copilot_home: Path, tmp_path: Path, signum: int, code: int
) -> None:
    canaries = tmp_path / "canaries"
    child = subprocess.Popen(
        [
            sys.executable,
            str(HARNESS),
            "--wait",
            "--canaries",
            str(canaries),
            "--",
            "login",
            "--headless",
            "--json",
            "--key-file",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert child.stdout is not None
        first = json.loads(child.stdout.readline())
        assert first["event"] == "device_code"
        # The handlers are in place before the event is written: the signal lands in the
        # wait (the interval is 5 s, so no poll has happened yet).
        child.send_signal(signum)
        out, err = child.communicate(timeout=15)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    _canaries(leak_guard, canaries)
    leak_guard.saw("harness stdout", out)
    leak_guard.saw("harness stderr", err)
    assert child.returncode == code, err
    last = json.loads(out.splitlines()[-1])
    assert last["event"] == "error"
    assert last["code"] == "login_cancelled"
    assert err.splitlines()[-1] == "error: login cancelled; nothing was stored"
    assert "Traceback" not in err
    _no_leftovers(copilot_home)
