"""The gateway's never-blocking log lines (``copilot_host.gateway._server._lines``) on real pipes, in this process:
lines pass in order, a full pipe costs dropped (and counted) lines instead of a blocked
writer, a reader gone stops the writer quietly."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import sys
import time
from collections.abc import Iterator

import pytest

from copilot_host.gateway._server import _lines as _stderr_queue
from copilot_host.gateway._server._lines import queued_stderr, write_stderr_line

BOUND = 10.0


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):
            os.close(fd)


def _queue_in_force() -> bool:
    return _stderr_queue._active is not None


def _read_some(fd: int) -> bytes:
    """What ``fd`` holds now (nothing when it holds nothing)."""
    os.set_blocking(fd, False)
    got = b""
    while True:
        try:
            piece = os.read(fd, 1 << 16)
        except BlockingIOError:
            return got
        if not piece:
            return got
        got += piece


def _drain(fd: int, until: bytes) -> bytes:
    """Read ``fd`` until ``until`` has arrived (bounded in time)."""
    got = _read_some(fd)
    deadline = time.monotonic() + BOUND
    while until not in got:
        assert time.monotonic() < deadline, got[-500:]
        time.sleep(0.01)
        got += _read_some(fd)
    return got


def _pipe_size(fd: int) -> int:
    return int(fcntl.fcntl(fd, 1032))  # F_GETPIPE_SZ (Linux)


def test_lines_pass_in_order(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    queue = _stderr_queue._Queue(write_end, capacity=16)
    for index in range(10):
        queue.put(f"line {index}\n")
    queue.close(BOUND)
    text = _drain(read_end, b"line 9\n").decode()
    assert text.splitlines() == [f"line {index}" for index in range(10)]


def test_a_full_pipe_drops_and_counts_lines_and_the_writer_never_blocks_the_caller(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    line = "x" * 99 + "\n"
    fill = _pipe_size(write_end) // len(line) + 64  # more than the pipe holds
    queue = _stderr_queue._Queue(write_end, capacity=8)
    began = time.monotonic()
    for _ in range(fill + 100):  # nobody reads: the writer blocks, the queue fills
        queue.put(line)
    assert time.monotonic() - began < 2.0  # the caller was never held
    queue.put("after\n")  # dropped as well: the queue is still full
    # Someone reads again: what the pipe and the queue held comes out, then the count,
    # once a line is put with room for it.
    got = _drain(read_end, line.encode() * 4)
    deadline = time.monotonic() + BOUND
    while True:
        with queue._changed:
            if not queue._lines:
                break
        assert time.monotonic() < deadline
        got += _read_some(read_end)
        time.sleep(0.01)
    queue.put("later\n")
    got += _drain(read_end, b"later\n")
    queue.close(BOUND)
    text = got.decode()
    notices = [n for n in text.splitlines() if "dropped while stderr was not being read" in n]
    assert len(notices) == 1
    dropped = int(notices[0].split("copilot-host: ", 1)[1].split()[0])
    written = text.count(line)
    assert written + dropped == fill + 100 + 1  # every line written or counted
    assert text.endswith(notices[0] + "\nlater\n")


def test_a_reader_gone_stops_the_writer_quietly(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.close(read_end)
    queue = _stderr_queue._Queue(write_end, capacity=8)
    queue.put("nobody reads this\n")
    queue._thread.join(BOUND)
    assert not queue._thread.is_alive()
    queue.put("nor this\n")  # ignored, no error
    queue.close(BOUND)


def test_a_non_blocking_descriptor_is_waited_on_off_the_callers_thread(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    os.set_blocking(write_end, False)
    line = "y" * 199 + "\n"
    count = _pipe_size(write_end) // len(line) + 32
    queue = _stderr_queue._Queue(write_end, capacity=count + 1)
    for _ in range(count):
        queue.put(line)
    time.sleep(0.2)  # the writer fills the pipe and waits for room
    got = b""
    deadline = time.monotonic() + BOUND
    while got.count(line.encode()) < count:
        assert time.monotonic() < deadline
        got += _read_some(read_end)
        time.sleep(0.01)
    queue.close(BOUND)
    assert got.count(line.encode()) == count


def test_queued_stderr_routes_lines_through_the_queue_and_undo_drains_them(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_end, write_end = pipe
    stream = io.TextIOWrapper(io.FileIO(write_end, "w", closefd=False))
    monkeypatch.setattr(sys, "stderr", stream)
    undo = queued_stderr()
    try:
        assert _queue_in_force()
        write_stderr_line("through the queue\n")
    finally:
        undo()
    assert not _queue_in_force()
    assert _drain(read_end, b"through the queue\n").endswith(b"through the queue\n")


def test_without_a_descriptor_lines_go_straight_to_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    captured = io.StringIO()  # a test runner's stream: no descriptor, never blocks
    monkeypatch.setattr(sys, "stderr", captured)
    undo = queued_stderr()
    try:
        assert not _queue_in_force()
        write_stderr_line("straight\n")
    finally:
        undo()
    assert captured.getvalue() == "straight\n"
    monkeypatch.setattr(sys, "stderr", None)
    queued_stderr()()  # nothing to do, no error
    write_stderr_line("nowhere\n")  # a closed stderr takes nothing


def test_close_waits_a_bounded_time_for_a_blocked_writer(pipe: tuple[int, int]) -> None:
    _read_end, write_end = pipe
    line = "z" * 99 + "\n"
    queue = _stderr_queue._Queue(write_end, capacity=4)
    for _ in range(_pipe_size(write_end) // len(line) + 16):
        queue.put(line)
    began = time.monotonic()
    queue.close(0.3)  # nobody reads: the writer stays blocked, close gives up
    assert time.monotonic() - began < 2.0


def test_a_line_to_an_idle_writer_goes_at_once_and_lines_after_it_wait_for_its_linger(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    # A linger far longer than the test: what it holds back can only come out by close().
    queue = _stderr_queue._Queue(write_end, capacity=16, linger=60.0)
    queue.put("first\n")
    assert _drain(read_end, b"first\n") == b"first\n"  # woken: written at once
    queue.put("second\n")
    queue.put("third\n")
    time.sleep(0.3)
    assert _read_some(read_end) == b""  # held: the writer lingers and was not woken
    began = time.monotonic()
    queue.close(BOUND)  # close() ends the linger: both go out, in one write
    assert time.monotonic() - began < BOUND
    assert _drain(read_end, b"third\n") == b"second\nthird\n"


def test_a_queue_filling_fast_ends_the_writers_linger(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    queue = _stderr_queue._Queue(write_end, capacity=8, linger=60.0)
    queue.put("first\n")
    _drain(read_end, b"first\n")
    for index in range(4):  # half the capacity: the writer is woken from its linger
        queue.put(f"line {index}\n")
    assert _drain(read_end, b"line 3\n") == b"line 0\nline 1\nline 2\nline 3\n"
    queue.close(BOUND)
