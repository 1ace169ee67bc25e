"""``--ledger``, ``--no-ledger`` and ``--max-credits-per-day``: where ``serve`` and ``run``
record their model requests, and the daily budget counted there.

The ledger (``copilot_host.gateway._ledger``) is ``ledger.sqlite3`` in the home folder unless
``--ledger FILE`` or ``COPILOT_HOST_LEDGER`` names another file, or ``--no-ledger`` or
``COPILOT_HOST_LEDGER=off`` turns it off; an ``--emulator`` gateway records only into a file
named so (emulated credits never enter a person's real history). The daily budget is
counted in the ledger, across every process writing it: without one it cannot be.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    import copilot_host as ch
    from copilot_host.gateway._ledger import Recorder

__all__ = ["LedgerChoice", "ledger_choice", "ledger_options", "ledger_warning", "open_recorder"]

_F = TypeVar("_F", bound=Callable[..., object])


def _positive(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter("a positive number of AI credits, e.g. 50 or 7.5")
    return value


def ledger_options(command: _F) -> _F:
    """Adds ``--ledger FILE``, ``--no-ledger`` and ``--max-credits-per-day N``."""
    decorators = [
        click.option(
            "--ledger",
            "ledger_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Record each model request in FILE instead of the home folder's "
            "ledger.sqlite3 (COPILOT_HOST_LEDGER=FILE does the same); `copilot-host usage "
            "--history` reads it back.",
        ),
        click.option(
            "--no-ledger",
            is_flag=True,
            help="Record nothing (COPILOT_HOST_LEDGER=off does the same).",
        ),
        click.option(
            "--max-credits-per-day",
            "max_credits_per_day",
            type=float,
            default=None,
            callback=_positive,
            metavar="N",
            help="Refuse model requests once this account's credits for the UTC day, in "
            "every copilot-host process writing the ledger, would pass N (refused as a spent "
            "--max-credits is, so agents stop at once); needs the ledger.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@dataclass(frozen=True)
class LedgerChoice:
    """Where requests are recorded (None: nowhere), and the daily budget."""

    path: Path | None
    per_day: float | None = None


def ledger_choice(
    *,
    ledger_file: Path | None,
    no_ledger: bool,
    max_credits_per_day: float | None,
    emulator: bool,
) -> LedgerChoice:
    """The ledger the options and the environment name; a usage error for options that
    contradict each other."""
    from copilot_host.gateway._ledger import LEDGER_VARIABLE, ledger_path

    if no_ledger and ledger_file is not None:
        raise click.UsageError("--ledger and --no-ledger: give one of them")
    path = ledger_path(
        option=ledger_file, no_ledger=no_ledger, environ=os.environ, emulator=emulator
    )
    if max_credits_per_day is not None and path is None:
        why = (
            "--no-ledger"
            if no_ledger
            else (
                f"{LEDGER_VARIABLE}=off"
                if not emulator
                else "--emulator without --ledger FILE (emulated requests go to no ledger "
                "unless one is named)"
            )
        )
        raise click.UsageError(
            f"--max-credits-per-day is counted in the ledger, which {why} turns off"
        )
    return LedgerChoice(path, max_credits_per_day)


def open_recorder(
    choice: LedgerChoice, clock: ch.Clock, warn: Callable[[str], None]
) -> Recorder | None:
    """The ledger to record into (None when none is chosen); ``warn`` gets the one line
    said when it is off for want of what it needs. A ledger that cannot be opened is the
    typed error that says why; so is a daily budget that cannot be counted."""
    from copilot_host import CopilotHostError
    from copilot_host.gateway._ledger import LedgerOff, open_ledger

    if choice.path is None:
        return None
    opened = open_ledger(choice.path, clock=clock, max_credits_per_day=choice.per_day, warn=warn)
    if isinstance(opened, LedgerOff):
        if opened.reason and choice.per_day is not None:
            raise CopilotHostError(
                f"--max-credits-per-day needs the ledger, which is off: {opened.reason}",
                code="ledger_off",
            )
        if opened.reason:
            warn(opened.reason)
        return None
    return opened


def ledger_warning(line: str) -> None:
    """A line about the ledger, where the gateway's warnings go (``serve``: stderr and the
    log file; ``run``: the log file), behind the redaction filter."""
    import logging

    from copilot_host.gateway import ACCESS_LOGGER

    logging.getLogger(ACCESS_LOGGER).warning("%s", line)
