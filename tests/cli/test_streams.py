"""Streams that went away or were never there: a reader that left, fd 1 closed, a stdout
that cannot be written, stdin closed.

Real child processes with real descriptors: a pipe whose reading end the test closes
(after the child is held at a known line, so the next write meets the closed pipe for
certain), descriptors closed by a shell (``>&-``, ``<&-``) before the command starts, a
stdout open for reading only, and ``/dev/full``. Marked slow; each within seconds.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from copilot_host import Secret
from copilot_host.store import CredentialStore

from .conftest import HARNESS, LeakGuard, Proc, canary_token, child_env, console_script

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("copilot_home")]

CLOSED = "error: standard output is closed, so no result could be shown; nothing was done\n"


def _log_in(guard: LeakGuard) -> None:
    CredentialStore().save("octocat", Secret(guard.canary(canary_token())), key_file=True)


# -- the reader went away ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        pytest.param(("--logged-in", "--", "status"), 1, id="status"),
        pytest.param(("--logged-in", "--", "status", "--json"), 0, id="status --json"),
        pytest.param(("--logged-in", "--", "models"), 1, id="models"),
        pytest.param(("--logged-in", "--", "models", "--json"), 0, id="models --json"),
        pytest.param(("--", "demo"), 2, id="demo"),
    ],
)
def test_a_reader_that_went_away_ends_the_command_quietly(
    hold: Any, args: tuple[str, ...], lines: int
) -> None:
    # As `copilot-host ... | head -N`: N lines read, then the reader leaves, then we write.
    child = hold("--hold-output", str(lines), *args)
    assert child.wait_held() == "output"
    read = child.close_stdout(after_lines=lines)
    assert len(read) == lines and all(line.endswith("\n") for line in read)
    child.release()
    # No "error: unexpected BrokenPipeError", and no "Exception ignored ... BrokenPipeError"
    # from the interpreter's last flush either.
    assert child.finish() == (0, "", "")


def test_login_json_whose_reader_left_after_the_code_still_logs_in(hold: Any) -> None:
    child = hold(
        "--fast", "--hold-output", "1", "--", "login", "--headless", "--json", "--key-file"
    )
    assert child.wait_held() == "output"
    [first] = child.close_stdout(after_lines=1)
    assert json.loads(first)["event"] == "device_code"
    child.release()
    code, out, err = child.finish()
    # The login went on for the person (the code is on stderr too) and was stored; the
    # exit code says so. No error line.
    assert (code, out) == (0, "")
    _assert_login_text(err)
    assert CredentialStore().header() is not None


def test_login_json_whose_reader_left_before_the_code_still_logs_in(hold: Any) -> None:
    child = hold(
        "--fast", "--hold-output", "0", "--", "login", "--headless", "--json", "--key-file"
    )
    assert child.wait_held() == "output"
    child.close_stdout()
    child.release()
    code, out, err = child.finish()
    assert (code, out) == (0, "")
    _assert_login_text(err)
    assert CredentialStore().header() is not None


def _assert_login_text(err: str) -> None:
    header = CredentialStore().header()
    assert header is not None
    lines = err.splitlines()
    assert lines[:6] == [
        "Authorizing OAuth app Iv1.b507a08c87ecfe98 (VS Code's, the default)",
        "",
        "  First copy your one-time code:  WDJB-MJHT",
        "  Then open:                      https://github.com/login/device",
        "",
        "Open that address on any device (a phone works) and enter the code.",
    ]
    waiting = r"Waiting for authorization \(the code expires in \d+:\d\d\)\.\.\."
    assert re.fullmatch(waiting, lines[6])
    assert lines[7:] == [
        f"Stored encrypted; the key is kept in the key file {header.protection.backend} "
        "(readable by anyone who can read your files)."
    ]


def test_status_logged_out_stays_exit_1_when_the_reader_went_away(hold: Any) -> None:
    child = hold("--hold-output", "0", "--", "status")
    assert child.wait_held() == "output"
    child.close_stdout()
    child.release()
    assert child.finish() == (1, "", "")


def test_models_into_a_reader_that_stops_after_one_line(
    leak_guard: LeakGuard, tmp_path: Path
) -> None:
    # No hold: 2,000 routes are more than a pipe holds, so the child is still writing
    # when the reader leaves, as with `copilot-host models | head -1`.
    canaries = tmp_path / "canaries"
    for as_json in (False, True):
        argv = [sys.executable, str(HARNESS), "--logged-in", "--models", "2000"]
        argv += ["--canaries", str(canaries), "--", "models", *(["--json"] if as_json else [])]
        child = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env()
        )
        assert child.stdout is not None
        first = child.stdout.read(200) if as_json else child.stdout.readline()
        child.stdout.close()
        _, err = child.communicate(timeout=60)
        for line in canaries.read_text().splitlines():
            leak_guard.canary(line)
        leak_guard.saw("models | head (stdout)", first)
        leak_guard.saw("models | head (stderr)", err)
        assert (child.returncode, err) == (0, b"")
        assert first.startswith(b'{"v":1,' if as_json else b"ROUTE")


def test_demo_piped_into_head(proc: Proc, tmp_path: Path) -> None:
    script = f'"{console_script()}" demo | head -2; exit "${{PIPESTATUS[0]}}"'
    done = proc.run(["bash", "-c", script], env={"TMPDIR": str(tmp_path)})
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[0].startswith("copilot-host demo: the whole journey")
    assert len(done.stdout.splitlines()) == 2


# -- stdout never open ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("status", "--json"), id="status --json"),
        pytest.param(("status",), id="status"),
        pytest.param(("demo",), id="demo"),
        pytest.param(("--version",), id="--version"),
        pytest.param(("--help",), id="--help"),
    ],
)
def test_a_stdout_that_was_never_open_is_one_error_line(
    proc: Proc, leak_guard: LeakGuard, args: tuple[str, ...]
) -> None:
    _log_in(leak_guard)
    done = proc.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", str(console_script()), *args])
    assert (done.returncode, done.stdout, done.stderr) == (1, "", CLOSED)


@pytest.mark.parametrize("as_json", [False, True], ids=["models", "models --json"])
def test_models_with_stdout_never_open(proc: Proc, as_json: bool) -> None:
    args = ["models", "--json"] if as_json else ["models"]
    shell = ["/bin/sh", "-c", 'exec "$@" >&-', "sh", sys.executable, str(HARNESS)]
    done = proc.run([*shell, "--logged-in", "--", *args])
    assert (done.returncode, done.stdout, done.stderr) == (1, "", CLOSED)


def test_logout_with_stdout_never_open_does_nothing(proc: Proc, leak_guard: LeakGuard) -> None:
    _log_in(leak_guard)
    done = proc.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", str(console_script()), "logout"])
    assert (done.returncode, done.stdout, done.stderr) == (1, "", CLOSED)
    assert CredentialStore().header() is not None  # the result could not be shown: not done


@pytest.mark.parametrize(
    "args", [("frobnicate",), ("models", "--jsn")], ids=["unknown command", "unknown option"]
)
def test_usage_errors_with_stderr_closed_stay_off_stdout(proc: Proc, args: tuple[str, ...]) -> None:
    # click sends its usage text to stdout when stderr is closed; stdout is for results.
    done = proc.run(["/bin/sh", "-c", 'exec "$@" 2>&-', "sh", str(console_script()), *args])
    assert (done.returncode, done.stdout) == (2, "")


# -- stdout that cannot be written ---------------------------------------------------------


_TARGETS = [
    pytest.param(os.devnull, "rb", errno.EBADF, id="open-for-reading"),
    pytest.param(
        "/dev/full",
        "wb",
        errno.ENOSPC,
        id="dev-full",
        marks=pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here"),
    ),
]


@pytest.mark.parametrize(("target", "mode", "error"), _TARGETS)
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("status", "--json"), id="status --json"),
        pytest.param(("demo",), id="demo"),
        pytest.param(("--version",), id="--version"),
        pytest.param(("--help",), id="--help"),
        pytest.param(("models", "--help"), id="models --help"),
    ],
)
def test_a_stdout_that_cannot_be_written_is_one_error_line(
    leak_guard: LeakGuard, args: tuple[str, ...], target: str, mode: str, error: int
) -> None:
    _log_in(leak_guard)
    done = _into(target, [str(console_script()), *args], mode=mode)
    leak_guard.saw("unwritable stdout (stderr)", done.stderr)
    _assert_one_error_line(done, error)


def _into(target: str, argv: list[str], *, mode: str = "wb") -> subprocess.CompletedProcess[str]:
    """``argv`` run with its stdout opened on ``target`` (a file it cannot write to)."""
    with open(target, mode) as stdout:
        return subprocess.run(
            argv,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            timeout=60,
            check=False,
        )


def _assert_one_error_line(done: subprocess.CompletedProcess[str], error: int) -> None:
    expected = f"error: cannot write to standard output ({os.strerror(error)})\n"
    assert (done.returncode, done.stderr) == (1, expected)


def test_models_json_into_a_full_disk_is_one_error_line(leak_guard: LeakGuard) -> None:
    # The error document cannot be written either; the stderr line still is.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    done = _into(
        "/dev/full", [sys.executable, str(HARNESS), "--logged-in", "--", "models", "--json"]
    )
    leak_guard.saw("models > /dev/full (stderr)", done.stderr)
    _assert_one_error_line(done, errno.ENOSPC)


# -- stdin ---------------------------------------------------------------------------------


def test_the_replace_question_with_stdin_closed_is_no_answer(proc: Proc) -> None:
    shell = ["/bin/sh", "-c", 'exec "$@" <&-', "sh", sys.executable, str(HARNESS)]
    done = proc.run([*shell, "--logged-in", "--", "login"])
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: no answer; nothing was changed (use --force to skip the question)\n"
    )


def test_the_replace_question_at_end_of_input_ends_its_line(proc: Proc) -> None:
    done = proc.harness("--logged-in", "--", "login", input="")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "You are logged in as octocat. Replace that login? [y/N]: \n"
        "error: no answer; nothing was changed (use --force to skip the question)\n"
    )


def test_login_json_into_a_full_disk_fails_and_stores_nothing(leak_guard: LeakGuard) -> None:
    # The device code event cannot be written: the login must stop, not go on (and maybe
    # complete) behind the failure. No --fast: the first poll waits for the interval.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    argv = [sys.executable, str(HARNESS), "--", "login", "--headless", "--json", "--key-file"]
    done = _into("/dev/full", argv)
    leak_guard.saw("login --json > /dev/full (stderr)", done.stderr)
    _assert_one_error_line(done, errno.ENOSPC)
    assert CredentialStore().header() is None


def test_json_errors_still_reach_a_working_stdout(proc: Proc) -> None:
    # The guard against a failing stdout must not cost the documented error document.
    done = proc.harness("--", "models", "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["error"]["code"] == "not_logged_in"
