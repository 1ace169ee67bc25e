"""Where text goes: results on stdout, everything meant for people on stderr.

stdout carries only what a program may consume (a result line, one JSON document, or
``login --json`` events); progress, prompts, hints and errors go to stderr, so
``copilot-host models --json | jq`` never sees a spinner. Colour follows the terminal and
https://no-color.org: ``NO_COLOR`` set to anything non-empty turns it off everywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import click

__all__ = ["Output", "color_allowed"]

_ERASE_LINE = "\r\x1b[2K"


def color_allowed(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (non-empty)."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


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
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False

    def _color(self, stream: TextIO) -> bool:
        return color_allowed(stream)

    # -- stdout: results only -----------------------------------------------------------

    def result(self, text: str = "") -> None:
        self.end_live()
        click.echo(text, color=self._color(sys.stdout))

    def json(self, document: Mapping[str, Any]) -> None:
        """One JSON document (or event) per line; flushed so a reading program sees it now."""
        import json  # only --json outputs pay for it

        self.end_live()
        line = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        click.echo(line)
        sys.stdout.flush()

    # -- stderr: people -----------------------------------------------------------------

    def info(self, text: str = "") -> None:
        self.end_live()
        click.echo(text, err=True, color=self._color(sys.stderr))

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
        stream = sys.stderr
        stream.write(_ERASE_LINE)
        click.echo(text, err=True, nl=False, color=self._color(stream))
        stream.flush()
        self._live = True

    def end_live(self) -> None:
        if self._live:
            self._live = False
            sys.stderr.write(_ERASE_LINE)
            sys.stderr.flush()

    # -- styling helpers ----------------------------------------------------------------

    @staticmethod
    def strong(text: str) -> str:
        return click.style(text, bold=True)

    @staticmethod
    def good(text: str) -> str:
        return click.style(text, fg="green", bold=True)
