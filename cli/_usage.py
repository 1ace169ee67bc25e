"""``copilot-host usage``: the account's plan, each quota with a bar, and the reset date."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ._context import JSON_VERSION, make_host, make_store, output, use_json_errors
from ._editor import editor_from_environment
from ._format import table
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand
from ._plan import auto_line, auto_now
from ._quotas import plan_head, quota_row, window_row

if TYPE_CHECKING:
    from datetime import datetime

    from copilot_host import CopilotUsage

__all__ = ["usage", "usage_document", "usage_lines"]

_EPILOG = """\b
Examples:
  copilot-host usage
  copilot-host usage --json | jq '.quotas[] | select(.id=="premium_interactions")'
  copilot-host usage --history --by day
  copilot-host usage --history --since 2026-01-01 --by model --json
  copilot-host usage --report spend.html --since 90d

\b
--json prints one document (fields are only ever added):
  {"v":1,"login":"octocat","plan":"individual_pro",
   "sku":"plus_monthly_subscriber_quota"|null,"auto_only":false,"unit":"credits"|"requests",
   "reset_at":"2027-01-01T00:00:00Z"|null,
   "quotas":[{"id":"premium_interactions","entitlement":1500.0,"remaining":12.5,
     "used":1487.5,"percent_remaining":0.8,"unlimited":false,
     "overage_permitted":false,"overage_count":0.0|null,"overage_in_use":false,
     "usable":true}],
   "rate_windows":[{"id":"session"|"weekly","entitlement":50.0|null,
     "percent_remaining":80.0|null,"reset_at":"2026-12-02T18:00:00Z"|null}],
   "auto":{"pool":["<id>",…],"discounts":{"<id>":0.1}}|null}
Numbers are as GitHub reports them (fractions; negative remaining once overage is used).
"usable" is false only for a used-up quota whose plan permits no overage.
"rate_windows" holds the windows this lookup's answer reported (often none: GitHub
reports them on model answers, which `serve` and `run` warn about).
"auto" is what Copilot Auto picks from and the discount on each (null: no Auto, or it
could not be asked within 2 s).
An exhausted quota is not an error: the exit status is 0.

\b
--history --json prints one document of what serve and run recorded:
  {"v":1,"rows":[{"time":"2026-12-01T09:30:12Z","run_id":"3f2a9c1b0d4e",
     "agent":"claude-code","api":"messages","model_asked":"sonnet",
     "model":"claude-sonnet-4.5","status":200|"interrupted"|"in_flight",
     "input_tokens":1200|null,"output_tokens":310|null,"cached_tokens":0|null,
     "credits":0.0425|null,"credits_estimated":false,"duration_ms":2310|null,
     "rewrote":["billing-header"]}],
   "total":{"requests":1,"credits":0.0425}}
and with --by: {"v":1,"groups":[{"key":"2026-12-01","requests":1,"credits":0.0425,
   "input_tokens":1200,"output_tokens":310}],"total":{...}}
Times and days are UTC. "credits_estimated" marks a request's reservation counted
for want of a reported cost (an "interrupted" request's, or an answer cut short).
A missing ledger is an empty history (stderr says so).

\b
--report FILE writes one HTML page (inline CSS and SVG: it fetches nothing, and
opens in any browser without a server): the totals, credits per UTC day by model
and by agent, every day's figures, the costliest runs, the requests that asked
for auto, and the plan's quota and Auto's pool from a live lookup (at most 5 s;
without a login, offline or late it says "not reported"). Its figures are
--history --json's for the same --since. FILE is made 0600; a FIFO, a device,
another user's file or a second name (hard link) of a file is refused, as --log
is.
"""


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


def usage_document(found: CopilotUsage, auto: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "v": JSON_VERSION,
        "login": found.login,
        "plan": found.plan,
        "sku": found.sku,
        "auto_only": found.auto_only,
        "unit": found.unit,
        "reset_at": _iso(found.reset_at),
        "quotas": [
            {
                "id": q.id,
                "entitlement": q.entitlement,
                "remaining": q.remaining,
                "used": q.used,
                "percent_remaining": q.percent_remaining,
                "unlimited": q.unlimited,
                "overage_permitted": q.overage_permitted,
                "overage_count": q.overage_count,
                "overage_in_use": q.overage_in_use,
                "usable": q.usable,
            }
            for q in found.quotas
        ],
        "rate_windows": [
            {
                "id": w.id,
                "entitlement": w.entitlement,
                "percent_remaining": w.percent_remaining,
                "reset_at": _iso(w.reset_at),
            }
            for w in found.rate_windows
        ],
        "auto": auto,
    }


def usage_lines(found: CopilotUsage, auto: dict[str, Any] | None = None) -> list[str]:
    """What ``usage`` prints: a header line, then a table of the quotas, and what Copilot
    Auto picks from."""
    head = plan_head(found)
    rows = [quota_row(q, found.unit) for q in found.quotas]
    rows += [window_row(w) for w in found.rate_windows]
    lines = [head]
    auto_only = found.auto_only_line()
    if auto_only is not None:
        lines.append(auto_only)
    if rows:
        lines += table(("QUOTA", "USED", "AMOUNT", "LEFT"), rows)
    shown = auto_line(auto)
    if shown is not None:
        lines.append(shown)
    if not found.rate_windows:
        lines.append(
            "rate-limit windows: not reported by this lookup "
            "(serve and run warn when a model answer reports one running low)"
        )
    return lines


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--history",
    is_flag=True,
    help="Show what serve and run recorded in the local ledger instead (offline).",
)
@click.option(
    "--report",
    metavar="FILE",
    help="Write what serve and run recorded as one HTML page to FILE instead: totals, "
    "credits per day by model and by agent, the runs, and the plan's quota when logged in.",
)
@click.option(
    "--since",
    metavar="Nd|YYYY-MM-DD",
    help="With --history or --report: the last N UTC days (today included), or from that "
    "UTC day (default: 30d).",
)
@click.option(
    "--by",
    type=click.Choice(["day", "agent", "model", "run"]),
    help="With --history: totals per UTC day, agent, model served or run.",
)
@click.option(
    "--ledger",
    metavar="FILE",
    help="With --history or --report: the ledger to read (default: $COPILOT_HOST_LEDGER, "
    "else ledger.sqlite3 in the store folder).",
)
def usage(
    *,
    as_json: bool,
    history: bool,
    report: str | None,
    since: str | None,
    by: str | None,
    ledger: str | None,
) -> None:
    """Show this account's Copilot plan, quotas and when they reset.

    Asks GitHub (api.github.com, with the stored login) what the account has used of
    each quota: AI credits on usage-billed plans, premium requests on the plans still
    billed by request, and the Copilot Free allowances. With --history, shows instead
    what serve and run recorded in the local ledger, offline; with --report FILE, writes
    it as one HTML page that opens in any browser, without a server.
    """
    out = output()
    no_core_dumps()
    if as_json:
        use_json_errors()
    if report is not None:
        from ._history import write_report

        given = [
            name
            for name, value in (("--history", history), ("--by", by), ("--json", as_json))
            if value
        ]
        if given:
            raise click.UsageError(f"{', '.join(given)}: not with --report")
        write_report(report=report, since=since, ledger=ledger)
        return
    if not history:
        given = [name for name, value in (("--since", since), ("--by", by)) if value]
        if ledger is not None:
            given.append("--ledger")
        if given:
            raise click.UsageError(f"{', '.join(given)}: only with --history or --report")
    else:
        from ._history import show_history

        show_history(since=since, by=by, ledger=ledger, as_json=as_json)
        return

    import copilot_host as ch

    editor = editor_from_environment()
    store = make_store()
    if store.availability() is None:
        raise ch.NotLoggedInError("not logged in: run `copilot-host login` first")
    if out.err_is_tty:
        out.live("Asking GitHub for this account's Copilot usage...")
    with make_host(store, editor) as host:
        found = host.usage()
        auto = auto_now(host)
    if as_json:
        out.json(usage_document(found, auto))
        return
    for line in usage_lines(found, auto):
        out.result(line)
