"""The ``copilot-host`` group: global options, error discipline, exit codes.

Start-up is kept close to bare click: each command's module is imported only when that
command runs (``--help`` lists them from the table below, ``--version`` needs none), and
commands import the library inside the command function, so ``--help``, ``--version``
and ``status`` start without httpx2, authlib, keyring or cryptography.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from copilot_host._version import __version__

from ._failure import EXIT_FAILED, CliFailure, Interrupted, Problem
from ._logging import LOGGER_NAME, configure_logging
from ._seam import error_sink, output

__all__ = ["COMMANDS", "main"]

# name -> (module, the first line of its help). A test keeps the help text here equal to
# the command's own docstring, so the listing cannot drift from the commands.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("_demo", "Run the whole journey against a built-in GitHub emulator."),
    "login": ("_login", "Log in to GitHub with a one-time code; keep the login encrypted."),
    "logout": ("_logout", "Remove the stored GitHub credential and its key from this machine."),
    "models": (
        "_models",
        "List the Copilot models this login can use.",
    ),
    "status": ("_status", "Show who is logged in and how the login is protected."),
}

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
    """Lazy commands; every failure becomes one stderr line (+ JSON when asked) + exit code."""

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
            import logging

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
