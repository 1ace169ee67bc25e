"""The ``copilot-host`` group: global options, error discipline, exit codes.

Every way a command can end is decided here, once: its result (exit 0), a failure (one
stderr line, plus the JSON error when ``--json`` asked for it), a signal (``_signals``:
the same report, exit 130 or 143), a reader of stdout that went away (quietly, exit 0)
or a stdout that cannot be written (``_output``).

Start-up is kept close to bare click: each command's module is imported only when that
command runs (``--help`` lists them from the table below, ``--version`` needs none), and
commands import the library inside the command function, so ``--help``, ``--version``
and ``status`` start without httpx2, keyring or cryptography.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, NoReturn

import click

from copilot_host import __version__

from ._context import error_sink, output
from ._failure import (
    EXIT_FAILED,
    EXIT_OK,
    CliFailure,
    Interrupted,
    Problem,
    exit_code_for_signal,
    signal_word,
)
from ._logging import LOGGER_NAME, configure_logging
from ._output import (
    OUTPUT_FAILED,
    STDOUT_CLOSED,
    CopilotHostCommand,
    Output,
    ReaderGone,
)
from ._signals import Signals, Stop, command_signals, current_signals

__all__ = ["COMMANDS", "main"]

# name -> (module, the first line of its help). A test keeps the help text here equal to
# the command's own docstring, so the listing cannot drift from the commands.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("_demo", "Run the whole journey against a built-in GitHub emulator."),
    "doctor": ("_doctor", "Check why copilot-host may not work here, and say what to do."),
    "login": ("_login", "Log in to GitHub with a one-time code; keep the login encrypted."),
    "logout": ("_logout", "Remove the stored GitHub credential and its key from this machine."),
    "models": (
        "_models",
        "List the Copilot models this login can use.",
    ),
    "run": ("_run", "Run a coding agent (or any command) on this login's Copilot models."),
    "serve": ("_serve", "Serve this login's Copilot models to programs in any language."),
    "status": ("_status", "Show who is logged in and how the login is protected."),
    "usage": ("_usage", "Show this account's Copilot plan, quotas and when they reset."),
}

_DEBUG_KEY = "copilot_host_cli.debug"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    # A constant: no importlib.metadata lookup (which costs more than importing click).
    output(ctx).result(f"copilot-host {__version__}")
    ctx.exit()


def _problem_of(exc: BaseException) -> Problem | None:
    """The one-line, secret-free description of a failure we know how to explain."""
    from copilot_host import CopilotHostError

    if isinstance(exc, CliFailure | Interrupted):
        return exc.problem
    if isinstance(exc, CopilotHostError):
        return Problem(exc.code, exc.message, exc.retryable)
    return None


def _signal_of(exc: BaseException, signals: Signals) -> int | None:
    """The signal that ended the command, if one did (whatever the exception it became)."""
    if isinstance(exc, Stop):
        return exc.signum
    if isinstance(exc, KeyboardInterrupt):
        import signal

        return signal.SIGINT
    # A Stop that turned into another error on its way out (a connection pool closed
    # mid-request, say) still ended the command: report the signal, not the echo.
    return signals.received


def _signal_problem(signum: int) -> Problem:
    word = signal_word(signum)
    return Problem(word, word)


@contextmanager
def _stderr_for_click() -> Iterator[None]:
    """With stderr closed (``2>&-``) click writes usage errors to stdout instead, where
    only results may go: give it somewhere else to lose them."""
    if sys.stderr is not None:
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        sys.stderr = devnull
        try:
            yield
        finally:
            sys.stderr = None


class CopilotHostGroup(CopilotHostCommand, click.Group):
    """Lazy commands; every failure becomes one stderr line (+ JSON when asked) + exit code.

    Its ``--help`` fails the way any output does, as every command's (the base class).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module = importlib.import_module(f"{__package__}.{COMMANDS[cmd_name][0]}")
            self.add_command(getattr(module, cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """click's ``main`` inside this call's signal handling (see ``_signals``)."""
        if sys.stdout is None:
            # Started with stdout closed: there is nowhere for a result, so do nothing
            # (and a file this process opened could otherwise take descriptor 1).
            Output().error(STDOUT_CLOSED)
            if standalone_mode:
                sys.exit(EXIT_FAILED)
            return EXIT_FAILED
        with command_signals() as signals, _stderr_for_click():
            try:
                return super().main(
                    args,
                    prog_name,
                    complete_var,
                    standalone_mode,
                    windows_expand_args=windows_expand_args,
                    **extra,
                )
            except (Stop, ReaderGone, CliFailure) as exc:
                # Outside a command: while click parsed the arguments or wrote --help or
                # --version, or after the command had finished.
                if not standalone_mode:
                    raise
                signals.decide()
                if isinstance(exc, ReaderGone):
                    sys.exit(EXIT_OK)
                if isinstance(exc, Stop):
                    Output().error(_signal_problem(exc.signum).message)
                    sys.exit(exit_code_for_signal(exc.signum))
                Output().error(exc.problem.message)
                sys.exit(exc.exit_code)

    def invoke(self, ctx: click.Context) -> Any:
        signals = current_signals()
        try:
            result = super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException):
            raise  # click's own: --help, usage errors (exit 2)
        except ReaderGone:
            # Not a failure: whoever read our output has all they wanted.
            signals.decide()
            if signals.received is not None:
                self._end_by_signal(ctx, signals.received)
            raise click.exceptions.Exit(EXIT_OK) from None
        except click.exceptions.Abort as exc:
            signals.decide()
            # A prompt that got Ctrl-C (130) or end of input (1).
            interrupted = isinstance(exc.__context__, KeyboardInterrupt)
            self._report(
                ctx,
                exc,
                Problem(
                    "interrupted" if interrupted else "no_answer",
                    "interrupted; nothing was changed"
                    if interrupted
                    else "no answer; nothing was changed (use --force to skip the question)",
                ),
            )
            raise click.exceptions.Exit(130 if interrupted else EXIT_FAILED) from None
        except (Exception, KeyboardInterrupt, Stop) as exc:
            signals.decide()
            problem, code = self._outcome(exc, signals)
            self._report(ctx, exc, problem)
            raise click.exceptions.Exit(code) from None
        if signals.received is not None:
            # The command swallowed the signal's Stop somewhere and finished anyway.
            signals.decide()
            self._end_by_signal(ctx, signals.received)
        return result

    def _end_by_signal(self, ctx: click.Context, signum: int) -> NoReturn:
        self._report(ctx, None, _signal_problem(signum))
        raise click.exceptions.Exit(exit_code_for_signal(signum))

    @staticmethod
    def _outcome(exc: BaseException, signals: Signals) -> tuple[Problem, int]:
        if isinstance(exc, Interrupted):
            return exc.problem, exc.exit_code  # the login wait's own account of it
        signum = _signal_of(exc, signals)
        if signum is not None:
            return _signal_problem(signum), exit_code_for_signal(signum)
        problem = _problem_of(exc)
        if problem is None:
            # A bug, or an exception from a library we did not wrap. Its text may hold
            # anything, so only the type is shown; --debug has the (redacted) traceback.
            problem = Problem(
                "internal_error",
                f"unexpected {type(exc).__name__}; rerun with --debug for details "
                "and report it if it persists",
            )
        code = exc.exit_code if isinstance(exc, CliFailure) else EXIT_FAILED
        return problem, code

    @staticmethod
    def _report(ctx: click.Context, exc: BaseException | None, problem: Problem) -> None:
        if ctx.meta.get(_DEBUG_KEY) and exc is not None:
            import logging

            logging.getLogger(LOGGER_NAME).debug("failure details", exc_info=exc)
        sink = error_sink(ctx)
        if sink is not None and problem.code != OUTPUT_FAILED:
            # If stdout failed as well, the line below still tells people.
            with suppress(ReaderGone, CliFailure):
                sink(problem)
        output(ctx).error(problem.message)


_EPILOG = """\b
Examples:
  copilot-host login              log in (opens your browser)
  copilot-host login --headless   log in over SSH: shows a code, opens nothing
  copilot-host status             who is logged in, and how the login is protected
  copilot-host models             the Copilot models this account can use
  copilot-host usage              what this account has used of its Copilot quotas
  copilot-host doctor             why something fails, one check a line, with its fix
  copilot-host serve              an OpenAI/Anthropic API on 127.0.0.1 for other programs
  copilot-host run -- claude      a coding agent on your Copilot models
  copilot-host logout             forget the local login
  copilot-host demo               the whole journey against a built-in emulator

\b
Exit codes: 0 ok, 1 failed (status: not logged in), 2 usage error,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
State lives in $COPILOT_HOST_HOME (default: your user state folder).
"""


@click.group(
    cls=CopilotHostGroup, epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--debug",
    is_flag=True,
    help="Log details and tracebacks to stderr (secrets are always redacted).",
)
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """copilot-host: use your GitHub Copilot models from your own applications.

    Log in once with GitHub's device flow; the credential is kept encrypted on this
    machine and applications get short-lived Copilot sessions from it.
    """
    ctx.meta[_DEBUG_KEY] = debug
    ctx.call_on_close(configure_logging(debug))
