"""``--max-credits``: the gateway's budget, shared by every command that starts one."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import click

__all__ = ["max_credits_option"]

_F = TypeVar("_F", bound=Callable[..., object])


def _positive(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter("a positive number of AI credits, e.g. 25 or 2.5")
    return value


def max_credits_option(command: _F) -> _F:
    """Adds ``--max-credits N`` (as ``max_credits``, None when absent) to a command."""
    return click.option(
        "--max-credits",
        "max_credits",
        type=float,
        default=None,
        callback=_positive,
        metavar="N",
        help=(
            "Stop relaying model requests once the answers since start have reported N AI "
            "credits of cost: each is then refused (budget_exhausted, 402; 400 for Codex "
            "CLI and aider, which retry a 402), so the agent stops at once and shows why."
        ),
    )(command)
