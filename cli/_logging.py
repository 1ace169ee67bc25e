"""Logging for one CLI invocation, always behind the redaction filter.

Without ``--debug`` only warnings reach stderr; with it, everything down to DEBUG
(including tracebacks of failures). Either way the handler carries a
:class:`~copilot_host.RedactingFilter`, and records are formatted *after* the
filter scrubbed them, so no level and no traceback can put a token on the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

__all__ = ["LOGGER_NAME", "SecondStamp", "configure_logging", "line_formatter", "stderr_handler"]

LOGGER_NAME = "copilot_host_cli"


class SecondStamp:
    """The local time of a moment as ``datefmt`` shows it, formatted once per second: the
    gateway writes an access line per request, and ``time.strftime`` for every one of them
    was a visible share of a relayed request's CPU."""

    __slots__ = ("_datefmt", "_second", "_text")

    def __init__(self, datefmt: str) -> None:
        self._datefmt = datefmt
        self._second = -1
        self._text = ""

    def __call__(self, moment: float) -> str:
        second = int(moment)
        if second != self._second:
            import time

            # Text first, then its second: a reader in another thread never pairs a
            # second with the text of the one before.
            text = time.strftime(self._datefmt, time.localtime(second))
            self._text, self._second = text, second
        return self._text


def line_formatter(fmt: str, datefmt: str | None = None) -> logging.Formatter:
    """A formatter for ``fmt`` whose times (``datefmt``) come from a :class:`SecondStamp`.
    With ``datefmt`` None, logging's own format (which shows milliseconds) is used."""
    import logging

    stamp = SecondStamp(datefmt) if datefmt is not None else None

    class _Formatter(logging.Formatter):
        def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
            if stamp is None or datefmt is None:
                return super().formatTime(record, datefmt)
            return stamp(record.created)

    return _Formatter(fmt, datefmt)


def stderr_handler(level: int, fmt: str, datefmt: str | None = None) -> logging.Handler:
    """A handler writing to whatever ``sys.stderr`` is now (test runners swap it per run;
    a closed one takes nothing), or to the gateway's writer thread while serve's server
    queues stderr (:func:`copilot_host.gateway._plumbing.write_stderr_line`), behind the redaction
    filter."""
    import logging  # not at import time: --help and --version never log
    import sys

    from copilot_host import RedactingFilter

    class _StderrHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                line = self.format(record) + "\n"
                # Through serve's writer thread while it runs (a full pipe never blocks
                # it). There is none unless the gateway was imported, and a command that
                # never serves does not import it for a log line.
                if "copilot_host.gateway" in sys.modules:
                    from copilot_host.gateway._plumbing import write_stderr_line

                    write_stderr_line(line)
                elif sys.stderr is not None:
                    sys.stderr.write(line)
                    sys.stderr.flush()
            except Exception:
                self.handleError(record)

    handler = _StderrHandler(level)
    handler.setFormatter(line_formatter(fmt, datefmt))
    handler.addFilter(RedactingFilter())
    return handler


def configure_logging(debug: bool) -> Callable[[], None]:
    """Attach a redacting stderr handler to the root logger; returns its undo."""
    import logging

    from copilot_host import RedactingFilter, install_redaction

    root = logging.getLogger()
    handler = stderr_handler(
        logging.DEBUG if debug else logging.WARNING, "%(levelname)s %(name)s: %(message)s"
    )
    root.addHandler(handler)
    # Also every handler someone else configured on the root logger before us; remember
    # what each had, so undo leaves an embedding process's logging as it found it.
    before = {target: list(target.filters) for target in (root, *root.handlers)}
    install_redaction(root)
    previous_level = root.level
    if debug:
        root.setLevel(logging.DEBUG)

    def undo() -> None:
        root.removeHandler(handler)
        for target, filters in before.items():
            for added in [f for f in target.filters if f not in filters]:
                if isinstance(added, RedactingFilter):
                    target.removeFilter(added)
        root.setLevel(previous_level)

    return undo
