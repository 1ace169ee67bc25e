"""``copilot-host usage --history``: what the ledger recorded, as rows or totals; and
``usage --report FILE``: the same figures as one HTML page (:mod:`._report`).

``--history`` works offline and logged out: it reads the local ledger only (``--ledger
FILE``, else ``COPILOT_HOST_LEDGER``, else ``$COPILOT_HOST_HOME/ledger.sqlite3``), never
the network, the credential or the keyring. ``--report`` reads the same, and adds the
plan's quota from one live ``usage`` lookup when there is a login, bounded in time; without
a login, offline, or without an answer in time the page says the quota is not reported.
Days are UTC days; times are shown in UTC.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ._context import output, seam
from ._failure import CliFailure
from ._format import table

if TYPE_CHECKING:
    from copilot_host import CopilotUsage
    from copilot_host.gateway._ledger import Group, History, HistoryRow

__all__ = [
    "DEFAULT_SINCE",
    "REPORT_LOOKUP_SECONDS",
    "Plan",
    "history_lines",
    "plan_now",
    "show_history",
    "write_report",
]

DEFAULT_SINCE = "30d"
# The report's live quota lookup: best effort, never a longer wait than this.
REPORT_LOOKUP_SECONDS = 5.0
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


def _start(since: str | None) -> float:
    from copilot_host.gateway._ledger import since_time

    try:
        return since_time(since or DEFAULT_SINCE, _now())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--since'") from None


def _now() -> float:
    clock = seam().clock
    return clock.time() if clock is not None else time.time()


def _ledger(ledger: str | None) -> Path:
    """The ledger to read; says so when recording is off but a file from before is read."""
    from copilot_host._internal import show_path
    from copilot_host.gateway._ledger import LEDGER_VARIABLE, history_path

    path = history_path(option=ledger, environ=os.environ)
    if ledger is None and os.environ.get(LEDGER_VARIABLE, "").strip().lower() == "off":
        output().info(
            f"{LEDGER_VARIABLE}=off: serve and run record nothing now; this is what "
            f"{show_path(path)} holds from before"
        )
    return path


def _missing(path: Path) -> None:
    from copilot_host._internal import show_path
    from copilot_host.gateway._ledger import LEDGER_VARIABLE

    output().info(
        f"No ledger at {show_path(path)} yet: serve and run record there unless run "
        f"with --no-ledger or {LEDGER_VARIABLE}=off."
    )


def _no_sqlite() -> CliFailure:
    return CliFailure(
        "ledger_unavailable", "this Python was built without sqlite3: no ledger to read"
    )


def show_history(*, since: str | None, by: str | None, ledger: str | None, as_json: bool) -> None:
    """Print the history (``usage --history``)."""
    from copilot_host.gateway._ledger import history_json, read_history

    from ._output import write_stdout

    start = _start(since)
    path = _ledger(ledger)
    try:
        if as_json:
            document, exists = history_json(path, since=start, by=by)
        else:
            found = read_history(path, since=start, by=by)
            exists = found.found
    except ImportError:
        raise _no_sqlite() from None
    if not exists:
        _missing(path)
    if as_json:
        # Made whole by the ledger (SQLite writes each row's JSON): one line, as out.json.
        write_stdout(document)
        return
    out = output()
    for line in history_lines(found):
        out.result(line)


class Plan(NamedTuple):
    """What the live lookup found: the plan (or why there is none) and what Copilot Auto
    picks from (``auto_now``'s document; None without Auto, or not asked in time)."""

    usage: CopilotUsage | str
    auto: dict[str, Any] | None = None


def plan_now(seconds: float) -> Plan:
    """The account's plan from a live ``usage`` lookup, and Auto's pool, or why there is
    none: not logged in, the lookup failed (offline, say), or no answer within ``seconds``
    (the lookup runs on a thread that is not waited for past them)."""
    import copilot_host as ch

    from ._context import make_host, make_store
    from ._editor import editor_from_environment
    from ._plan import auto_now

    editor = editor_from_environment()
    store = make_store()
    try:
        if store.availability() is None:
            return Plan("not logged in")
    except ch.CopilotHostError as exc:
        return Plan(exc.message)
    found: list[CopilotUsage | str] = []
    auto: list[dict[str, Any] | None] = []
    with make_host(store, editor) as host:

        def ask() -> None:
            try:
                found.append(host.usage())
            except ch.CopilotHostError as exc:
                found.append(exc.message)
                return
            except Exception:  # best effort: the page says "not reported" for any failure
                found.append("the lookup failed")
                return
            auto.append(auto_now(host))

        worker = threading.Thread(target=ask, name="copilot-host usage", daemon=True)
        worker.start()
        worker.join(seconds)
    if not found:
        return Plan(f"GitHub did not answer within {seconds:g} s")
    return Plan(found[0], auto[0] if auto else None)


def write_report(*, report: str, since: str | None, ledger: str | None) -> None:
    """Write the page (``usage --report FILE``) and say what it holds."""
    from copilot_host.gateway._ledger import format_credits, read_summary

    from ._ownfile import open_own_file
    from ._report import RUNS_SHOWN, report_html

    out = output()
    start = _start(since)
    path = _ledger(ledger)
    target = Path(report)
    # Checked before the ledger is read: a refused FILE costs no wait.
    opened = open_own_file(target, noun="report file", code="report_file_io", append=False)
    try:
        try:
            summary = read_summary(path, since=start, runs=RUNS_SHOWN)
        except ImportError:
            raise _no_sqlite() from None
        if not summary.found:
            _missing(path)
        seconds = seam().lookup_seconds
        plan = plan_now(REPORT_LOOKUP_SECONDS if seconds is None else seconds)
        page = report_html(summary, plan.usage, now=_now(), auto=plan.auto)
        opened.replace_contents(page.encode())
    except BaseException:
        opened.discard()
        raise
    os.close(opened.fd)
    totals = summary.totals
    day = time.strftime("%Y-%m-%d", time.gmtime(start))
    quota = (
        "the plan's quota as GitHub reports it"
        if not isinstance(plan.usage, str)
        else (f"the plan's quota not reported ({plan.usage})")
    )
    plural = "s" if totals.requests != 1 else ""
    out.result(
        f"{target}: {totals.requests:,} model request{plural} since {day} (UTC), "
        f"{format_credits(totals.credits)} AI credits; {quota}"
    )
