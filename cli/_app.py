"""The ``copilot-host`` group: global options, error discipline, exit codes.

Commands live in their own modules and import the library inside the command function,
so ``--help``, ``--version`` and ``status`` start without httpx2, authlib, keyring or
cryptography.
"""

from __future__ import annotations

import logging
from typing import Any

import click

from copilot_host._version import __version__

from ._demo import demo
from ._failure import EXIT_FAILED, CliFailure, Interrupted, Problem
from ._logging import LOGGER_NAME, configure_logging
from ._login import login
from ._logout import logout
from ._models import models
from ._seam import error_sink, output
from ._status import status

__all__ = ["main"]

_DEBUG_KEY = "copilot_host_cli.debug"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    # A constant: no importlib.metadata lookup (which costs more than importing click).
    click.echo(f"copilot-host {__version__}")
    ctx.exit()


def _problem_of(exc: BaseException) -> Problem | None:
    """The one-line, secret-free description of a failure we know how to explain."""
    from copilot_host._errors import CopilotHostError

    if isinstance(exc, CliFailure | Interrupted):
        return exc.problem
    if isinstance(exc, CopilotHostError):
        return Problem(exc.code, exc.message, exc.retryable)
    return None


class CopilotHostGroup(click.Group):
    """Turns every failure into one stderr line (and a JSON error when asked) + exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException):
            raise  # click's own: --help, usage errors (exit 2)
        except click.exceptions.Abort as exc:
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
        except KeyboardInterrupt as exc:
            self._report(ctx, exc, Problem("interrupted", "interrupted"))
            raise click.exceptions.Exit(130) from None
        except Exception as exc:
            problem = _problem_of(exc)
            if problem is None:
                # A bug, or an exception from a library we did not wrap. Its text may
                # hold anything, so only the type is shown; --debug has the (redacted)
                # traceback.
                problem = Problem(
                    "internal_error",
                    f"unexpected {type(exc).__name__}; rerun with --debug for details "
                    "and report it if it persists",
                )
            self._report(ctx, exc, problem)
            code = exc.exit_code if isinstance(exc, CliFailure | Interrupted) else EXIT_FAILED
            raise click.exceptions.Exit(code) from None

    @staticmethod
    def _report(ctx: click.Context, exc: BaseException, problem: Problem) -> None:
        if ctx.meta.get(_DEBUG_KEY):
            logging.getLogger(LOGGER_NAME).debug("failure details", exc_info=exc)
        sink = error_sink(ctx)
        if sink is not None:
            sink(problem)
        output(ctx).error(problem.message)


_EPILOG = """\b
Examples:
  copilot-host login              log in (opens your browser)
  copilot-host login --headless   log in over SSH: shows a code, opens nothing
  copilot-host status             who is logged in, and how the login is protected
  copilot-host models             the Copilot models this account can use
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


main.add_command(login)
main.add_command(logout)
main.add_command(status)
main.add_command(models)
main.add_command(demo)
