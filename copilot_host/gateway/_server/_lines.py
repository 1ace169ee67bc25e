"""Log lines that never block the gateway (``serve(..., stderr_queue=True)``).

A server's log goes to stderr, and stderr may be a pipe that nobody reads (a supervisor
that only captures stdout, ``2>`` into a FIFO, a parent that forgot). Once the pipe is
full, a plain write blocks, and a write on the event loop blocks every request: the
gateway stopped answering after some 770 access lines. While :func:`queued_stderr` is in
force, log lines are handed to a writer thread through a bounded queue instead; when the
queue is full (stderr takes nothing), a line is dropped and counted, and the count is
reported in one line as soon as there is room again.

The writer writes to the descriptor with ``os.write``, not through ``sys.stderr``: a
thread blocked inside ``sys.stderr``'s buffer would hold its lock, and the interpreter's
final flush at exit would then abort the process.

Waking a thread is what a line costs (a futex on each side and a turn of the GIL: on the
pure-Python stack a fifth of a relayed request's CPU, bench/gateway.py). So the writer is
woken only when it waits idle: once it has written, lines that come within
:data:`LINGER_SECONDS` are written together by its next turn, without waking it. A quiet
gateway's line goes out at once; a busy one's lines go out in one write per
:data:`LINGER_SECONDS`, at most that late (sooner once half the queue is taken).
"""

from __future__ import annotations

import collections
import os
import sys
import threading
from collections.abc import Callable

__all__ = ["CAPACITY", "queued_stderr", "write_stderr_line"]

# Lines held while stderr takes nothing (about 100 KiB of access lines): enough to ride
# out a reader that is merely slow, small enough not to matter.
CAPACITY = 1024
# How long the way out waits for held lines to be written before it goes on without them.
DRAIN_SECONDS = 2.0
# After a write, how long lines wait to be written together (see the module docstring).
# At 20 ms a busy gateway still woke the writer every few requests (about 90 Python
# opcodes a request, with a futex on each side); a person reading the log does not see
# the tenth of a second.
LINGER_SECONDS = 0.1


class _Queue:
    def __init__(self, fd: int, capacity: int, linger: float = LINGER_SECONDS) -> None:
        self._fd = fd
        self._capacity = capacity
        self._linger = linger
        # Whether the writer waits for a line (a put must wake it) or will look again by
        # itself once its linger is over.
        self._idle = False
        self._lines: collections.deque[str] = collections.deque()
        self._changed = threading.Condition()
        self._dropped = 0
        self._closing = False
        self._broken = False
        self._thread = threading.Thread(target=self._run, name="copilot-host-stderr", daemon=True)
        self._thread.start()

    def put(self, line: str) -> None:
        with self._changed:
            if self._broken:
                return
            if len(self._lines) >= self._capacity:
                self._dropped += 1
                return
            if self._dropped:
                self._lines.append(_dropped_notice(self._dropped))
                self._dropped = 0
            self._lines.append(line)
            if self._idle:
                self._idle = False
                self._changed.notify()
            elif len(self._lines) == self._capacity // 2:
                # Filling fast: the writer's linger ends now, before lines are dropped.
                self._changed.notify()

    def _linger_over(self) -> bool:
        return self._closing or len(self._lines) >= self._capacity // 2

    def close(self, timeout: float) -> None:
        with self._changed:
            if self._dropped:
                self._lines.append(_dropped_notice(self._dropped))
                self._dropped = 0
            self._closing = True
            self._changed.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not (self._lines or self._closing):
                    self._idle = True
                    self._changed.wait()
                self._idle = False
                if not self._lines:
                    return
                batch = "".join(self._lines)
                self._lines.clear()
                if self._dropped:
                    # Room again: what was dropped is said after the lines held before it.
                    batch += _dropped_notice(self._dropped)
                    self._dropped = 0
            if not self._write(batch.encode("utf-8", "replace")):
                with self._changed:
                    self._broken = True
                    self._lines.clear()
                return
            with self._changed:
                # Puts do not wake it now; close() and a half-full queue do.
                self._changed.wait_for(self._linger_over, self._linger)

    def _write(self, data: bytes) -> bool:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except InterruptedError:
                continue
            except BlockingIOError:
                # A descriptor someone made non-blocking: wait for room, off the loop.
                import select

                waiting = select.poll()
                waiting.register(self._fd, select.POLLOUT)
                waiting.poll()
                continue
            except OSError:
                # Closed, or its reader went away (EPIPE): nothing more can be written.
                return False
            view = view[written:]
        return True


def _dropped_notice(count: int) -> str:
    lines = "line" if count == 1 else "lines"
    return (
        f"copilot-host: {count} log {lines} dropped while stderr was not being read "
        "(read or redirect the gateway's stderr)\n"
    )


_active: _Queue | None = None


def write_stderr_line(line: str) -> None:
    """Write one line (with its newline) to stderr: through the queue while
    :func:`queued_stderr` is in force, else straight to ``sys.stderr``."""
    queue = _active
    if queue is not None:
        queue.put(line)
        return
    if sys.stderr is not None:
        sys.stderr.write(line)
        sys.stderr.flush()


def queued_stderr(capacity: int = CAPACITY) -> Callable[[], None]:
    """Send log lines through a writer thread until the returned undo is called (which
    waits up to :data:`DRAIN_SECONDS` for held lines). Does nothing when stderr has no
    descriptor (a test runner's in-memory stream never blocks)."""
    global _active  # one queue per process at a time; undo restores the one before
    try:
        stream = sys.stderr
        if stream is None:
            return lambda: None
        fd = stream.fileno()
        stream.flush()
    except (AttributeError, OSError, ValueError):
        return lambda: None
    queue = _Queue(fd, capacity)
    previous, _active = _active, queue

    def undo() -> None:
        global _active  # noqa: PLW0603
        _active = previous
        queue.close(DRAIN_SECONDS)

    return undo
