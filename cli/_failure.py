"""Failures as one line and an exit code.

Exit codes: 0 ok, 1 the operation failed (``status``: not logged in), 2 usage error
(click's own), 130 interrupted by SIGINT, 143 terminated by SIGTERM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "CliFailure",
    "ErrorSink",
    "Interrupted",
    "Problem",
    "exit_code_for_signal",
    "signal_word",
]

EXIT_OK = 0
EXIT_FAILED = 1


def exit_code_for_signal(signum: int) -> int:
    """The shell convention: 128 + signal number (SIGINT 130, SIGTERM 143)."""
    return 128 + int(signum)


def signal_word(signum: int) -> str:
    """What a signal did to a command; also the JSON ``code`` of that outcome."""
    import signal

    return "interrupted" if signum == signal.SIGINT else "terminated"


class Problem(NamedTuple):
    """What a failure tells people (one line) and programs (a stable code)."""

    code: str
    message: str
    retryable: bool = False


# A command in --json mode registers one of these so the failure also reaches stdout as
# a JSON document (or event) a program can act on.
ErrorSink = Callable[[Problem], None]


class CliFailure(Exception):
    """A failure the CLI itself decides (as opposed to one the library raises)."""

    def __init__(self, code: str, message: str, *, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.problem = Problem(code, message)
        self.exit_code = exit_code


class Interrupted(Exception):
    """A signal whose outcome the command words itself (the login wait, the replace
    question, a login that had just completed); any other signal is reported plainly."""

    def __init__(self, signum: int, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.signum = signum
        if code is None:
            code = signal_word(signum)
        self.problem = Problem(code, message)
        self.exit_code = exit_code_for_signal(signum)
