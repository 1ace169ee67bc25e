"""Where text goes: results on stdout, everything meant for people on stderr.

stdout carries only what a program may consume (a result line, one JSON document, or
``login --json`` events); progress, prompts, hints and errors go to stderr, so
``copilot-host models --json | jq`` never sees a spinner. Colour follows the terminal and
https://no-color.org: ``NO_COLOR`` set to anything non-empty turns it off everywhere.

Writing can fail, and each way has one meaning:

* stdout's reader went away (EPIPE: ``copilot-host models | head -1``): not a failure. The
  command stops quietly with :class:`ReaderGone` and exits 0, as a Unix filter would.
* stdout cannot take the text (a full disk, a descriptor open for reading only): the
  command fails with ``output_failed``, one line on stderr.
* stdout was never open (``>&-``): ``main`` refuses before doing anything
  (:data:`STDOUT_CLOSED`); a command has nowhere to put its result.
* stderr failing costs only the text for people: the command carries on.
* a signal in the middle of a write (stdout full, its reader not reading): that line
  stays cut, and nothing more is written to stdout, not even the JSON error document.

After stdout fails, its descriptor is pointed at ``/dev/null``. What is still buffered then
drains there when the interpreter exits, instead of failing once more in Python's final
flush (which would print "Exception ignored ... BrokenPipeError").
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

import click

from ._failure import CliFailure

__all__ = [
    "OUTPUT_FAILED",
    "STDOUT_CLOSED",
    "CopilotHostCommand",
    "Output",
    "ReaderGone",
    "color_allowed",
    "help_writes",
    "stdout_failure",
    "write_stdout",
]

_ERASE_LINE = "\r\x1b[2K"

OUTPUT_FAILED = "output_failed"
STDOUT_CLOSED = "standard output is closed, so no result could be shown; nothing was done"


class ReaderGone(Exception):
    """stdout's reader went away: stop quietly (exit 0), the way ``head`` expects."""


def color_allowed(stream: TextIO | None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (non-empty)."""
    return not os.environ.get("NO_COLOR") and _is_tty(stream)


def _is_tty(stream: TextIO | None) -> bool:
    try:  # closed or replaced streams are no terminal
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def _point_at_devnull(stream: TextIO | None) -> None:
    try:
        fd = stream.fileno() if stream is not None else -1
    except (AttributeError, ValueError, OSError):
        return  # not a descriptor (a test runner's buffer): nothing flushes it at exit
    if fd < 0:
        return
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def stdout_failure(exc: OSError | ValueError) -> ReaderGone | CliFailure:
    """What a failed write to stdout means for the command (see the module's notes)."""
    _point_at_devnull(sys.stdout)
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        return ReaderGone()
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return CliFailure(OUTPUT_FAILED, f"cannot write to standard output ({reason})")


def write_stdout(text: str, *, color: bool | None = None) -> None:
    """One line on stdout, flushed; every failure becomes ReaderGone or a CliFailure."""
    if sys.stdout is None:
        raise CliFailure(OUTPUT_FAILED, "cannot write to standard output (it is closed)")
    try:
        click.echo(text, color=color)
        sys.stdout.flush()  # click.echo flushes too; a program reading events needs it now
    except (OSError, ValueError) as exc:  # ValueError: a closed file, an unencodable text
        raise stdout_failure(exc) from None
    except BaseException:
        # A signal stopped this write, most likely blocked on a reader that stopped
        # reading: a piece of a line may have gone out and the rest may never drain.
        # Nothing more goes there (an error document after half a line is no document),
        # and the exit cannot hang on the buffered rest. A terminal is left alone: it
        # does not stall like that, and it may outlive us (an application's own).
        if not _is_tty(sys.stdout):
            _point_at_devnull(sys.stdout)
        raise


@contextmanager
def help_writes() -> Iterator[None]:
    """Parsing writes only ``--help`` and ``--version`` text, all of it to stdout: an
    OSError there is a failed write to stdout and means what one always does (click would
    print a traceback for most, and exit 1 for a closed pipe)."""
    try:
        yield
    except OSError as exc:
        raise stdout_failure(exc) from None


class CopilotHostCommand(click.Command):
    """Every command's class: its ``--help`` fails the way any output does."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with help_writes():
            return super().make_context(info_name, args, parent, **extra)


class Output:
    """One command's two channels.

    The streams are looked up on each write (not captured at construction) so that
    click's test runner, which swaps ``sys.stdout``/``sys.stderr`` per invocation, and
    a closed pipe behave the same as a terminal.
    """

    def __init__(self, *, err_is_tty: bool | None = None) -> None:
        self._err_is_tty = err_is_tty
        self._live = False  # a live status line is on stderr and must be cleared first

    # -- decisions ----------------------------------------------------------------------

    @property
    def err_is_tty(self) -> bool:
        if self._err_is_tty is not None:
            return self._err_is_tty
        return _is_tty(sys.stderr)

    # -- stdout: results only -----------------------------------------------------------

    def result(self, text: str = "") -> None:
        self.end_live()
        write_stdout(text, color=color_allowed(sys.stdout))

    def json(self, document: Mapping[str, Any]) -> None:
        """One JSON document (or event) per line; flushed so a reading program sees it now."""
        import json  # only --json outputs pay for it

        self.end_live()
        line = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            # A path holding bytes that are not UTF-8 (kept as lone surrogates): \udcXX
            # escapes keep the document valid JSON, and Python readers get the exact bytes
            # back with os.fsencode.
            line = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
        write_stdout(line)

    # -- stderr: people -----------------------------------------------------------------

    def info(self, text: str = "") -> None:
        self.end_live()
        self._stderr(lambda: click.echo(text, err=True, color=color_allowed(sys.stderr)))

    @staticmethod
    def _stderr(write: Callable[[], object]) -> None:
        if sys.stderr is None:  # started with stderr closed (2>&-): people see nothing
            return
        try:
            write()
        except (OSError, ValueError):
            # Nobody can read what we tell people any more; the work and its result
            # (stdout, the exit code) still count. Later writes go to /dev/null.
            _point_at_devnull(sys.stderr)

    def hint(self, text: str) -> None:
        self.info(click.style(text, dim=True))

    def warn(self, text: str) -> None:
        self.info(click.style("warning: ", fg="yellow", bold=True) + text)

    def error(self, text: str) -> None:
        """The one line a failure prints: what happened and what to do."""
        self.info(click.style("error: ", fg="red", bold=True) + text)

    def live(self, text: str) -> None:
        """Rewrite the current stderr line in place (terminals only)."""

        # The erase sequence is cursor control, not colour: written directly so that
        # NO_COLOR (which strips styles) cannot leave half-erased lines behind.
        def write() -> None:
            stream = sys.stderr
            stream.write(_ERASE_LINE)
            click.echo(text, err=True, nl=False, color=color_allowed(stream))
            stream.flush()

        self._live = True
        self._stderr(write)

    def end_live(self) -> None:
        if self._live:
            self._live = False

            def write() -> None:
                sys.stderr.write(_ERASE_LINE)
                sys.stderr.flush()

            self._stderr(write)

    # -- styling helpers ----------------------------------------------------------------

    @staticmethod
    def strong(text: str) -> str:
        return click.style(text, bold=True)

    @staticmethod
    def good(text: str) -> str:
        return click.style(text, fg="green", bold=True)
