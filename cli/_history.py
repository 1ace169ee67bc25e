"""``copilot-host usage --history``: what the ledger recorded, as rows or totals.

Offline and logged out: it reads the local ledger only (``--ledger FILE``, else
``COPILOT_HOST_LEDGER``, else ``$COPILOT_HOST_HOME/ledger.sqlite3``), never the network, the
credential or the keyring. Days are UTC days; times are shown in UTC.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import click

from ._context import output, seam
from ._format import table

if TYPE_CHECKING:
    from copilot_host.gateway._ledger import Group, History, HistoryRow

__all__ = ["DEFAULT_SINCE", "history_lines", "show_history"]

DEFAULT_SINCE = "30d"
_ROW_HEADER = ("TIME (UTC)", "AGENT", "API", "MODEL", "STATUS", "IN", "OUT", "CREDITS", "MS")
_BY_HEADER = {"day": "DAY (UTC)", "agent": "AGENT", "model": "MODEL", "run": "RUN"}


def _amount(value: float | None) -> str:
    from copilot_host.gateway._ledger import format_credits

    return "" if value is None else format_credits(value)


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _row_cells(row: HistoryRow) -> tuple[str, ...]:
    from copilot_host._internal import clean

    model = clean(row.model, limit=60)
    if row.model_asked and row.model_asked != row.model:
        model = f"{clean(row.model_asked, limit=40)}->{model}"
    cost = _amount(row.credits)
    if cost and row.credits_estimated:
        cost = "~" + cost
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row.time)),
        row.agent,
        row.api,
        model,
        str(row.status),
        _count(row.input_tokens),
        _count(row.output_tokens),
        cost,
        _count(row.duration_ms),
    )


def _group_cells(group: Group) -> tuple[str, ...]:
    from copilot_host._internal import clean

    return (
        clean(group.key, limit=80),
        f"{group.requests:,}",
        _amount(group.credits),
        f"{group.input_tokens:,}",
        f"{group.output_tokens:,}",
    )


def history_lines(found: History) -> list[str]:
    """What people read: a table of the rows (or groups), then one line of totals."""
    day = time.strftime("%Y-%m-%d", time.gmtime(found.since))
    if not found.requests:
        return [f"No model requests recorded since {day} (UTC)."]
    if found.by is None:
        lines = table(_ROW_HEADER, [_row_cells(row) for row in found.rows])
    else:
        header = (_BY_HEADER[found.by], "REQUESTS", "CREDITS", "INPUT", "OUTPUT")
        lines = table(header, [_group_cells(group) for group in found.groups])
    credits = _amount(found.credits) or "0"
    if found.estimated:
        credits += f" ({_amount(found.estimated)} estimated, marked ~)"
    plural = "s" if found.requests != 1 else ""
    lines.append(
        f"{found.requests:,} model request{plural} since {day} (UTC): {credits} AI credits"
    )
    return lines


def show_history(*, since: str | None, by: str | None, ledger: str | None, as_json: bool) -> None:
    """Print the history (``usage --history``)."""
    from copilot_host._internal import show_path
    from copilot_host.gateway._ledger import (
        LEDGER_VARIABLE,
        history_json,
        history_path,
        read_history,
        since_time,
    )

    from ._output import write_stdout

    out = output()
    clock = seam().clock
    now = clock.time() if clock is not None else time.time()
    try:
        start = since_time(since or DEFAULT_SINCE, now)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--since'") from None
    path = history_path(option=ledger, environ=os.environ)
    if ledger is None and os.environ.get(LEDGER_VARIABLE, "").strip().lower() == "off":
        out.info(
            f"{LEDGER_VARIABLE}=off: serve and run record nothing now; this is what "
            f"{show_path(path)} holds from before"
        )
    try:
        if as_json:
            document, exists = history_json(path, since=start, by=by)
        else:
            found = read_history(path, since=start, by=by)
            exists = found.found
    except ImportError:
        from ._failure import CliFailure

        raise CliFailure(
            "ledger_unavailable", "this Python was built without sqlite3: no ledger to read"
        ) from None
    if not exists:
        out.info(
            f"No ledger at {show_path(path)} yet: serve and run record there unless run "
            f"with --no-ledger or {LEDGER_VARIABLE}=off."
        )
    if as_json:
        # Made whole by the ledger (SQLite writes each row's JSON): one line, as out.json.
        write_stdout(document)
        return
    for line in history_lines(found):
        out.result(line)
