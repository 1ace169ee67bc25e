"""stdout that cannot take a line, in-process: a reader that went away, a full disk, a
closed stream, a signal in the middle of a write; and the commands' ends for each."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO

import pytest
from copilot_host_cli import main
from copilot_host_cli._failure import CliFailure
from copilot_host_cli._output import (
    OUTPUT_FAILED,
    STDOUT_CLOSED,
    ReaderGone,
    color_allowed,
    help_writes,
    write_stdout,
)


def _same_file(fd: int, path: str) -> bool:
    here, there = os.fstat(fd), os.stat(path)
    return (here.st_dev, here.st_ino, here.st_rdev) == (there.st_dev, there.st_ino, there.st_rdev)


# pytest puts its own capture back as sys.stdout at the start of each test phase, so the
# fixtures below make the stream and each test installs it.


@pytest.fixture
def reader_gone() -> Iterator[TextIO]:
    """A pipe whose reader has closed its end (``| head`` after one line)."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with open(write_fd, "w", encoding="utf-8") as stream:
        yield stream


@pytest.fixture
def full_disk() -> Iterator[TextIO]:
    """/dev/full: every write fails with ENOSPC."""
    with open("/dev/full", "w", encoding="utf-8") as stream:
        yield stream


def test_a_reader_that_went_away_stops_quietly_and_stdout_leads_nowhere(
    reader_gone: TextIO,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdout", reader_gone)
    with pytest.raises(ReaderGone):
        write_stdout("first line")
    # Whatever is still buffered, and anything written at exit, now goes to /dev/null
    # instead of failing again (Python would print "Exception ignored ... BrokenPipeError").
    assert _same_file(reader_gone.fileno(), os.devnull)
    reader_gone.write("late text\n")
    reader_gone.flush()


def test_a_full_disk_is_one_typed_failure_naming_the_reason(
    full_disk: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", full_disk)
    with pytest.raises(CliFailure) as caught:
        write_stdout("a line")
    assert caught.value.problem.code == OUTPUT_FAILED
    assert caught.value.problem.message == (
        "cannot write to standard output (No space left on device)"
    )
    assert _same_file(full_disk.fileno(), os.devnull)


def test_a_closed_or_missing_stdout_is_a_typed_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stdout", closed)
    with pytest.raises(CliFailure) as caught:
        write_stdout("a line")
    assert caught.value.problem.message == "cannot write to standard output (ValueError)"
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(CliFailure) as caught:
        write_stdout("a line")
    assert caught.value.problem.message == "cannot write to standard output (it is closed)"
    assert not color_allowed(closed)  # a closed stream is no terminal


class _InterruptedWrite(io.TextIOWrapper):
    """A pipe whose write is cut short by a signal (as one blocked on a full pipe is)."""

    def write(self, text: str) -> int:
        super().write(text[: len(text) // 2])
        raise KeyboardInterrupt


def test_a_signal_during_a_write_sends_the_rest_nowhere_and_propagates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read_fd, write_fd = os.pipe()
    stream = _InterruptedWrite(open(write_fd, "wb"), encoding="utf-8")  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        with pytest.raises(KeyboardInterrupt):
            write_stdout("a line that never ends")
        # Half a line may have gone out; nothing more goes to the pipe after it.
        assert _same_file(stream.fileno(), os.devnull)
        stream.flush()
        with os.fdopen(read_fd, "rb") as reader:
            os.set_blocking(reader.fileno(), False)
            assert b"\n" not in (reader.read() or b"")
    finally:
        stream.close()


def test_help_text_into_a_reader_that_went_away_is_reader_gone(
    reader_gone: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", reader_gone)
    with pytest.raises(ReaderGone), help_writes():
        raise BrokenPipeError(32, "Broken pipe")


def test_help_into_a_reader_that_went_away_exits_0(
    reader_gone: TextIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", reader_gone)
    with pytest.raises(SystemExit) as caught:
        main.main(["--help"], prog_name="copilot-host")
    assert caught.value.code == 0


def test_version_onto_a_full_disk_exits_1_and_says_why(
    full_disk: TextIO, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", full_disk)
    with pytest.raises(SystemExit) as caught:
        main.main(["--version"], prog_name="copilot-host")
    assert caught.value.code == 1
    assert "cannot write to standard output (No space left on device)" in capsys.readouterr().err


def test_a_command_started_with_stdout_closed_does_nothing_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], copilot_home: object
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    assert main.main(["logout"], prog_name="copilot-host", standalone_mode=False) == 1
    assert STDOUT_CLOSED in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main.main(["logout"], prog_name="copilot-host")
    assert caught.value.code == 1


def test_a_usage_error_with_stderr_closed_never_reaches_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stderr", None)
    with pytest.raises(SystemExit) as caught:
        main.main(["--no-such-option"], prog_name="copilot-host")
    assert caught.value.code == 2
    assert sys.stderr is None  # put back as it was
    assert capsys.readouterr().out == ""
