"""``copilot-host usage --report FILE``: the page holds ``--history --json``'s figures, fetches
nothing, shows the plan's quota when a live lookup answers in time, and its FILE is checked
as ``--log``'s is. (tests/ledger/test_report_chromium.py opens it in a browser.)"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from copilot_host_cli._context import CliSeam

from copilot_host.gateway._ledger import LEDGER_NAME, End
from copilot_host.testing import Faults, Inventory, RawAnswer, Scenario, Usage, minimal_models
from tests.cli.conftest import Cli, Proc

from ._page import Page, parse
from ._support import NOON, begun, clock_at, ledger_at, newer_ledger, start
from .test_summary import seed_mixed

SINCE = "7d"


def shown(credits: float) -> str:
    """Credits as the page shows them: up to four decimals, no trailing zeros."""
    text = f"{credits:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _seam(**fields: Any) -> CliSeam:
    return CliSeam(clock=clock_at(), **fields)


def history(cli: Cli, *args: str) -> Any:
    result = cli("usage", "--history", "--json", "--since", SINCE, *args, seam=_seam())
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def report(cli: Cli, target: Path, *args: str, seam: CliSeam | None = None) -> Page:
    result = cli("usage", "--report", str(target), "--since", SINCE, *args, seam=seam or _seam())
    assert result.exit_code == 0, result.stderr
    return parse(target.read_text(encoding="utf-8"))


def expected_totals(rows: list[dict[str, Any]], total: dict[str, Any]) -> dict[str, str]:
    """The totals table as ``--history --json``'s rows and total make it."""
    days = {row["time"][:10] for row in rows}
    return {
        "Model requests": f"{total['requests']:,}",
        "AI credits": shown(total["credits"]),
        "of which estimated": shown(sum(r["credits"] or 0 for r in rows if r["credits_estimated"])),
        "Input tokens": f"{sum(r['input_tokens'] or 0 for r in rows):,}",
        "Output tokens": f"{sum(r['output_tokens'] or 0 for r in rows):,}",
        "Days with requests": f"{len(days):,}",
        "Runs": f"{len({r['run_id'] for r in rows}):,}",
    }


def expected_groups(document: dict[str, Any]) -> list[list[str]]:
    return [
        [
            g["key"],
            f"{g['requests']:,}",
            shown(g["credits"]),
            f"{g['input_tokens']:,}",
            f"{g['output_tokens']:,}",
        ]
        for g in document["groups"]
    ]


def _breakdown(rows: list[dict[str, Any]], day: str, field: str) -> str:
    spent: dict[str, float] = {}
    for row in rows:
        if row["time"].startswith(day):
            spent[row[field]] = spent.get(row[field], 0.0) + (row["credits"] or 0.0)
    ordered = sorted(spent.items(), key=lambda item: -item[1])
    return " ".join(f"{name} {shown(value)}" for name, value in ordered if value)


def _utc(text: str) -> str:
    return text[:16].replace("T", " ")


def test_the_page_holds_what_history_json_holds(
    cli: Cli, copilot_home: Path, tmp_path: Path
) -> None:
    seed_mixed(copilot_home / LEDGER_NAME)
    target = tmp_path / "spend.html"
    result = cli("usage", "--report", str(target), "--since", SINCE, seam=_seam())
    assert result.exit_code == 0, result.stderr
    page = parse(target.read_text(encoding="utf-8"))
    document = history(cli)
    rows, total = document["rows"], document["total"]
    assert total["requests"] > 40
    assert page.pairs("totals") == expected_totals(rows, total)
    assert page.rows("models") == expected_groups(history(cli, "--by", "model"))
    assert page.rows("agents") == expected_groups(history(cli, "--by", "agent"))
    days = history(cli, "--by", "day")
    assert [row[:3] for row in page.rows("days")] == [group[:3] for group in expected_groups(days)]
    for row in page.rows("days"):
        assert row[3] == _breakdown(rows, row[0], "model"), row[0]
        assert row[4] == _breakdown(rows, row[0], "agent"), row[0]
    runs = history(cli, "--by", "run")["groups"]
    assert len(runs) == 3
    expected_runs = []
    for group in runs:
        mine = [row for row in rows if row["run_id"] == group["key"]]
        expected_runs.append(
            [
                group["key"],
                _utc(mine[0]["time"]),
                _utc(mine[-1]["time"]),
                ", ".join(sorted({row["agent"] for row in mine})),
                f"{group['requests']:,}",
                shown(group["credits"]),
            ]
        )
    assert page.rows("runs") == expected_runs
    auto = [row for row in rows if row["model_asked"] == "auto"]
    assert page.pairs("auto") == {
        "Requests that asked for auto": f"{len(auto):,}",
        "Their AI credits": shown(sum(row["credits"] or 0 for row in auto)),
        "Saved by Auto's discount": "not reported (the ledger records no discount)",
    }
    assert page.words("plan-status") == "Quota: not reported (not logged in)."
    day = time.strftime("%Y-%m-%d", time.gmtime(NOON - 6 * 86_400))
    assert result.stdout == (
        f"{target}: {total['requests']:,} model requests since {day} (UTC), "
        f"{shown(total['credits'])} AI credits; the plan's quota not reported (not logged in)\n"
    )
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_the_page_fetches_nothing_and_names_its_charts(
    cli: Cli, copilot_home: Path, tmp_path: Path
) -> None:
    seed_mixed(copilot_home / LEDGER_NAME)
    hostile = '</td><script>alert(1)</script><img src="https://example.com/x">'
    with ledger_at(copilot_home / LEDGER_NAME, clock=clock_at()) as ledger:
        row = begun(ledger, start(model=hostile, model_asked=hostile))
        ledger.end(End(row, 200, 1, 1, 0, 100.0, False, 3))
    target = tmp_path / "spend.html"
    page = report(cli, target)
    html = target.read_text(encoding="utf-8")
    # A model name is text, whatever it holds: the costliest model, shown as written.
    assert page.rows("models")[0][0] == hostile
    # Nothing that loads: no script, link, image, frame, font, import or url().
    for tag, attrs in page.tags:
        assert tag not in {"script", "link", "img", "iframe", "object", "embed", "base", "form"}
        assert not {"src", "href", "srcset", "action", "xlink:href"} & set(attrs), tag
    styles = re.findall(r"<style>(.*?)</style>", html, re.DOTALL)
    assert len(styles) == 1 and not re.search(r"url\(|@import|@font-face", styles[0])
    policy = next(
        a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert policy is not None and policy.startswith("default-src 'none';")
    # Each chart is an image with a title and a description; each bar part has a title.
    charts = [a for t, a in page.tags if t == "svg" and a.get("class") == "chart"]
    assert [a["aria-labelledby"] for a in charts] == [
        "chart-model-t chart-model-d",
        "chart-agent-t chart-agent-d",
    ]
    assert all(a["role"] == "img" for a in charts)
    assert page.words("chart-model-t") == "AI credits per UTC day by model"
    bars = len(re.findall(r'<rect x="', html))
    assert bars > 10 and html.count("</title></rect>") == bars
    # Tables have column or row headers.
    for table in ("totals", "models", "agents", "days", "runs", "auto"):
        assert page.tables[table], table
    assert "@media (prefers-color-scheme:dark)" in html.replace("screen and ", "")
    assert "@media print" in html and 'name="viewport"' in html


def test_an_empty_ledger_makes_a_page_that_says_so(
    cli: Cli, copilot_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "spend.html"
    result = cli("usage", "--report", str(target), seam=_seam())
    assert result.exit_code == 0, result.stderr
    assert f"No ledger at {copilot_home / LEDGER_NAME} yet" in result.stderr
    page = parse(target.read_text(encoding="utf-8"))
    assert page.pairs("totals")["Model requests"] == "0"
    assert page.pairs("totals")["AI credits"] == "0"
    day = time.strftime("%Y-%m-%d", time.gmtime(NOON - 29 * 86_400))
    assert page.words("empty") == (
        f"No model requests recorded since {day} (UTC) (there is no ledger at that path yet)."
    )
    assert "models" not in page.tables and "chart-model-t" not in page.ids
    assert not (copilot_home / LEDGER_NAME).exists()
    # A ledger that exists but holds nothing in the range says so without the aside.
    with ledger_at(copilot_home / LEDGER_NAME, clock=clock_at()) as ledger:
        row = begun(ledger, start(time=NOON - 40 * 86_400))
        ledger.end(End(row, 200, 1, 1, 0, 0.5, False, 3))
    page = report(cli, target)
    week = time.strftime("%Y-%m-%d", time.gmtime(NOON - 6 * 86_400))
    assert page.words("empty") == f"No model requests recorded since {week} (UTC)."


def _logged_in(cli: Cli, emulate: Any, scenario: Scenario) -> Any:
    env = emulate(scenario)
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    return env


def _inventory() -> Inventory:
    return Inventory(models=minimal_models())


def test_the_quota_comes_from_a_live_lookup_when_logged_in(
    cli: Cli, emulate: Any, copilot_home: Path, tmp_path: Path
) -> None:
    scenario = Scenario(inventory=_inventory(), usage=Usage(quota_entitlement=1500, quota_used=375))
    env = _logged_in(cli, emulate, scenario)
    seed_mixed(copilot_home / LEDGER_NAME)
    target = tmp_path / "spend.html"
    result = cli("usage", "--report", str(target), seam=env.seam._replace(clock=clock_at()))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith("; the plan's quota as GitHub reports it\n")
    page = parse(target.read_text(encoding="utf-8"))
    assert page.words("plan-status").startswith(
        "octocat: plan individual_pro, billed in AI credits"
    )
    quota = {row[0]: row for row in page.rows("quota")}
    premium = quota["premium_interactions"]
    assert premium[2:] == ["375 used, 1,125 left of 1,500 credits", "75.0% left"]
    assert quota["chat"][2] == "unlimited"
    # The bar says what it draws.
    assert any(a.get("aria-label") == "25% used" for t, a in page.tags if t == "svg")
    # What Copilot Auto picks from now, and its discount: usage --json's "auto".
    auto = json.loads(cli("usage", "--json", seam=env.seam).stdout)["auto"]
    assert len(auto["pool"]) > 1
    picks = [f"{m} ({auto['discounts'][m] * 100:g}% off)" for m in auto["pool"]]
    assert page.words("auto-now") == f"Copilot Auto picks from: {', '.join(picks)}."


@pytest.mark.parametrize(
    ("faults", "seconds", "why"),
    [
        (
            Faults(answers={"copilot_user": RawAnswer(503, b'{"message":"down"}')}),
            None,
            "not reported (the Copilot usage lookup failed on GitHub's side (HTTP 503): down;",
        ),
        (
            Faults(slow={"copilot_user": 3.0}),
            0.3,
            "not reported (GitHub did not answer within 0.3 s)",
        ),
    ],
    ids=["the lookup fails", "the lookup is late"],
)
def test_the_quota_is_not_reported_when_the_lookup_fails_or_is_late(
    cli: Cli, emulate: Any, tmp_path: Path, faults: Faults, seconds: float | None, why: str
) -> None:
    env = _logged_in(cli, emulate, Scenario(inventory=_inventory(), faults=faults))
    target = tmp_path / "spend.html"
    began = time.monotonic()
    seam = env.seam._replace(clock=clock_at(), lookup_seconds=seconds)
    result = cli("usage", "--report", str(target), seam=seam)
    assert result.exit_code == 0, result.stderr
    if seconds is not None:
        assert time.monotonic() - began < 2.5  # the 3 s answer was not waited for
    page = parse(target.read_text(encoding="utf-8"))
    status = page.words("plan-status")
    assert status.startswith("Quota: " + why), status
    assert "auto-now" not in page.ids


def test_report_options_go_alone(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "spend.html"
    for extra, word in (
        (("--by", "day"), "--by"),
        (("--json",), "--json"),
        (("--history",), "--history"),
    ):
        result = cli("usage", "--report", str(target), *extra)
        assert result.exit_code == 2, extra
        assert f"{word}: not with --report" in result.stderr
    result = cli("usage", "--report", str(target), "--since", "yesterday")
    assert result.exit_code == 2
    assert "--since" in result.stderr
    assert not target.exists()


# -- the file ------------------------------------------------------------------------------


def _refused(cli: Cli, target: Path) -> str:
    result = cli("usage", "--report", str(target), seam=_seam())
    assert result.exit_code == 1, result.stdout
    return result.stderr


NOT_YOURS = "is not a regular file of yours with one name"


def test_an_own_file_is_replaced_and_made_0600(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "spend.html"
    target.write_text("x" * 200_000)
    target.chmod(0o644)
    report(cli, target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_fifo_is_refused_without_blocking(proc: Proc, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    # Nobody reads it: an open that blocked would hold the command until the timeout.
    done = proc.script("usage", "--report", str(fifo), timeout=30)
    assert done.returncode == 1
    assert f"the report file {fifo} {NOT_YOURS}" in done.stderr
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = proc.script("usage", "--report", str(fifo), timeout=30)
    finally:
        os.close(reader)
    assert done.returncode == 1
    assert NOT_YOURS in done.stderr


def test_a_device_a_hard_link_and_a_symbolic_link_are_refused(cli: Cli, tmp_path: Path) -> None:
    assert NOT_YOURS in _refused(cli, Path("/dev/null"))
    victim = tmp_path / "victim"
    victim.write_text("keep")
    second = tmp_path / "second-name.html"
    os.link(victim, second)
    assert NOT_YOURS in _refused(cli, second)
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    assert (
        _refused(cli, link)
        == f"error: cannot write the report file {link}: it is a symbolic link\n"
    )
    assert victim.read_text() == "keep"


def test_another_users_file_is_refused(cli: Cli, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, which can give a file to another user")
        pytest.skip("only root can give a file to another user")
    target = tmp_path / "theirs.html"
    target.write_text("theirs")
    os.chown(target, 65534, 65534)
    assert NOT_YOURS in _refused(cli, target)
    assert target.read_text() == "theirs"


def test_a_ledger_that_cannot_be_read_leaves_no_new_file(
    cli: Cli, copilot_home: Path, tmp_path: Path
) -> None:
    newer_ledger(copilot_home / LEDGER_NAME)
    target = tmp_path / "spend.html"
    result = cli("usage", "--report", str(target), seam=_seam())
    assert result.exit_code == 1
    assert "newer copilot-host" in result.stderr
    assert not target.exists()
    kept = tmp_path / "kept.html"
    kept.write_text("before")
    assert cli("usage", "--report", str(kept), seam=_seam()).exit_code == 1
    assert kept.read_text() == "before"
