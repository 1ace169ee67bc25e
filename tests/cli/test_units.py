"""Pure helpers: formatting, JSON events, the signal handling, the live line."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from copilot_host_cli._events import LoginEvents, iso_utc
from copilot_host_cli._failure import Problem, exit_code_for_signal
from copilot_host_cli._format import ago, clock_time, mmss, table, width
from copilot_host_cli._output import Output
from copilot_host_cli._signals import Signals, Stop


def test_mmss_and_clock_time() -> None:
    assert mmss(900) == "15:00"
    assert mmss(899.2) == "15:00"
    assert mmss(61) == "1:01"
    assert mmss(-5) == "0:00"
    assert clock_time(0.0123) == "12 ms"
    assert clock_time(1.26) == "1.3 s"


def test_ago() -> None:
    assert ago(1000, 1000) == "just now"
    assert ago(1000, 1000 + 60) == "1 minute ago"
    assert ago(1000, 1000 + 7200) == "2 hours ago"
    assert ago(1000, 1000 + 3 * 86400) == "3 days ago"
    assert "clock" in ago(10_000, 1000)


def test_table_aligns_wide_characters() -> None:
    lines = table(("A", "B"), [("日本", "x"), ("abc", "yy")])
    assert lines == ["A     B", "日本  x", "abc   yy"]
    assert width("日本") == 4


def test_iso_utc() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
    assert iso_utc(1_700_000_000.9) == "2023-11-14T22:13:20Z"


def test_signal_codes() -> None:
    assert exit_code_for_signal(signal.SIGINT) == 130
    assert exit_code_for_signal(signal.SIGTERM) == 143


def _capture(fn: object) -> tuple[str, str]:
    runner = CliRunner()
    import click

    @click.command()
    def cmd() -> None:
        fn()  # type: ignore[operator]

    result = runner.invoke(cmd, [])
    assert result.exception is None, result.exception
    return result.stdout, result.stderr


def test_events_are_one_json_object_per_line_and_silent_when_off() -> None:
    def emit() -> None:
        events = LoginEvents(Output(), enabled=True)
        events.device_code(
            user_code="ABCD-1234",
            verification_uri="https://github.com/login/device",
            expires_in=899.6,
            deadline_wall=0,
            interval=5,
        )
        events.authorized(account="octocat", login_id="0" * 32, protection="keyring")
        events.error(Problem("access_denied", "you said no", False))
        LoginEvents(Output(), enabled=False).error(Problem("x", "y"))

    stdout, stderr = _capture(emit)
    assert stderr == ""
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert [e["event"] for e in lines] == ["device_code", "authorized", "error"]
    assert lines[0] == {
        "v": 1,
        "event": "device_code",
        "user_code": "ABCD-1234",
        "verification_uri": "https://github.com/login/device",
        "expires_in": 899,
        "deadline": "1970-01-01T00:00:00Z",
        "interval": 5,
    }
    assert lines[2] == {
        "v": 1,
        "event": "error",
        "code": "access_denied",
        "message": "you said no",
        "retryable": False,
    }


def test_live_line_is_erased_before_any_other_output() -> None:
    def emit() -> None:
        out = Output(err_is_tty=True)
        out.live("waiting 1")
        out.live("waiting 2")
        out.result("done")
        out.info("note")

    stdout, stderr = _capture(emit)
    assert stdout == "done\n"
    assert stderr == "\r\x1b[2Kwaiting 1\r\x1b[2Kwaiting 2\r\x1b[2Knote\n"


class _Exited(Exception):
    """Stands in for the process exit of a second signal, so the test can watch it."""


def _exit_recorder() -> tuple[list[int], Callable[[int], None]]:
    codes: list[int] = []

    def exit_now(code: int) -> None:
        codes.append(code)
        raise _Exited(code)

    return codes, exit_now


def _deliver(signum: int) -> None:
    """Send ``signum`` to this process; its handler runs in this (the main) thread."""
    os.kill(os.getpid(), signum)
    threading.Event().wait(1)  # the handler raises out of this wait, well before 1 s


def _handlers() -> tuple[object, object]:
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


def test_the_first_signal_raises_stop_and_a_second_exits_at_once() -> None:
    codes, exit_now = _exit_recorder()
    before = _handlers()
    signals = Signals(exit_now=exit_now)
    signals.install()
    try:
        assert signals.installed == {signal.SIGINT, signal.SIGTERM}
        with pytest.raises(Stop) as first:
            _deliver(signal.SIGTERM)
        assert (first.value.signum, signals.received) == (signal.SIGTERM, signal.SIGTERM)
        # The way out is blocked, the person insists: leave at once, with the first code.
        with pytest.raises(_Exited):
            _deliver(signal.SIGINT)
        assert codes == [143]
    finally:
        signals.restore()
    assert _handlers() == before


def test_while_cancelling_the_first_signal_only_sets_the_event() -> None:
    codes, exit_now = _exit_recorder()
    signals = Signals(exit_now=exit_now)
    cancel = threading.Event()
    signals.install()
    try:
        with signals.cancelling(cancel):
            os.kill(os.getpid(), signal.SIGINT)
            assert cancel.wait(5)
        assert signals.received == signal.SIGINT
        assert codes == []
    finally:
        signals.restore()


def test_once_the_outcome_is_decided_any_signal_exits_at_once() -> None:
    codes, exit_now = _exit_recorder()
    signals = Signals(exit_now=exit_now)
    signals.install()
    try:
        signals.decide()
        with pytest.raises(_Exited):
            _deliver(signal.SIGTERM)
        assert codes == [143]
    finally:
        signals.restore()


def test_off_the_main_thread_nothing_is_installed() -> None:
    seen: list[frozenset[int]] = []

    def run() -> None:
        signals = Signals()
        signals.install()
        seen.append(signals.installed)
        signals.restore()

    before = _handlers()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [frozenset()]
    assert _handlers() == before


def test_an_ignored_signal_stays_ignored() -> None:
    # A background job of a script starts with SIGINT ignored; so does anything under
    # a parent that chose to ignore SIGTERM. We do not take those signals back.
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        signals = Signals()
        signals.install()
        try:
            assert signals.installed == {signal.SIGINT}
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        finally:
            signals.restore()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_handler_set_outside_python_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # getsignal answers None for a handler an embedding C program set: signal.signal
    # could not put it back, so we must not replace it. (Only an embedding interpreter
    # produces None for real; the answer is simulated here.)
    real = signal.getsignal

    def getsignal(signum: int) -> object:
        return None if signum == signal.SIGTERM else real(signum)

    monkeypatch.setattr(signal, "getsignal", getsignal)
    before = real(signal.SIGTERM)
    signals = Signals()
    signals.install()
    try:
        assert signals.installed == {signal.SIGINT}
        assert real(signal.SIGTERM) is before
    finally:
        signals.restore()


@pytest.mark.parametrize(
    ("env", "platform", "expected"),
    [
        ({"DISPLAY": ":0"}, "linux", True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", True),
        ({}, "linux", False),
        ({"DISPLAY": ":0", "SSH_CONNECTION": "10.0.0.1 22 10.0.0.2 5555"}, "linux", False),
        ({}, "darwin", True),
        ({"SSH_TTY": "/dev/pts/1"}, "darwin", False),
    ],
)
def test_a_browser_is_tried_only_where_one_can_appear(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], platform: str, expected: bool
) -> None:
    from copilot_host_cli import _wait

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SSH_CONNECTION", "SSH_TTY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "platform", platform)  # the sys module _wait reads
    assert _wait.can_open_browser() is expected
