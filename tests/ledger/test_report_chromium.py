"""The report in a real browser: headless Chromium (Debian's package) opens the page
``usage --report`` wrote from a ledger of a few hundred rows across models, agents and
days, and from an empty one.

* ``--dump-dom`` shows the totals table equal to ``usage --history --json`` for the same
  ``--since``; and, read through Chromium's own layout (``innerText`` of the page in a frame
  390 px wide, a phone's width), that table is rendered, and the page is no wider than the
  frame (the wide tables scroll inside their own box).
* Screenshots in light and dark ``prefers-color-scheme``: their pixels show the page's own
  background and, with rows, the chart's first colour of that scheme.
* ``--print-to-pdf`` makes a PDF.

The screenshots are kept in ``$COPILOT_HOST_SCREENSHOTS`` when set (CI sets it and lists
them after the tests; the suite's summary names them too).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copilot_host.gateway._ledger import LEDGER_NAME
from tests._png import read_png
from tests.cli.conftest import child_env, console_script

from ._chromium import dump_dom, print_pdf, screenshot, screenshots_folder
from ._page import parse
from .test_report_cli import expected_totals
from .test_summary import seed_mixed

pytestmark = pytest.mark.slow

MODELS = (
    "claude-sonnet-4.5",
    "gpt-5",
    "gpt-4.1",
    "claude-haiku-4.5",
    "gemini-2.5-pro",
    "claude-opus-4.1",
    "gpt-5-mini",
    "o4-mini",
    "grok-code-fast-1",
)
AGENTS = ("claude-code", "codex", "aider", "opencode", "copilot-cli", "qwen-code")
# The page's background and first chart colour in each scheme (cli/_report.py's CSS).
BACKGROUND = {"light": (255, 255, 255), "dark": (13, 17, 23)}
FIRST_SERIES = {"light": (0, 114, 178), "dark": (74, 163, 224)}
PHONE = 390


@dataclass(frozen=True)
class Made:
    name: str
    since: str
    page: Path
    rows: list[dict[str, Any]]
    total: dict[str, Any]


def _copilot_host(home: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(
        [str(console_script()), *args],
        capture_output=True,
        text=True,
        env=child_env({"COPILOT_HOST_HOME": str(home)}),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module", params=["rows", "empty"])
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Made:
    """A report of 300 requests over 30 days (9 models, 6 agents, 3 runs), or of none,
    and ``usage --history --json`` for the same range."""
    name = str(request.param)
    folder = tmp_path_factory.mktemp(f"report-{name}")
    home = folder / "home"
    home.mkdir(mode=0o700)
    now = time.time()
    if name == "rows":
        seed_mixed(home / LEDGER_NAME, rows=300, now=now, days=29.5, models=MODELS, agents=AGENTS)
    since = time.strftime("%Y-%m-%d", time.gmtime(now - 29 * 86_400))
    page = folder / "report.html"
    _copilot_host(home, "usage", "--report", str(page), "--since", since)
    document = json.loads(_copilot_host(home, "usage", "--history", "--json", "--since", since))
    if name == "rows":
        assert document["total"]["requests"] > 200
    return Made(name, since, page, document["rows"], document["total"])


def test_dump_dom_shows_the_totals_of_history_json(made: Made) -> None:
    page = parse(dump_dom(made.page))
    assert page.pairs("totals") == expected_totals(made.rows, made.total)
    if made.name == "empty":
        assert page.words("empty").startswith("No model requests recorded since ")
        assert "days" not in page.tables
    else:
        assert "empty" not in page.ids
        assert len(page.rows("days")) == len({row["time"][:10] for row in made.rows})


# Loads the report in a frame a phone's width wide and writes what Chromium rendered of its
# totals table (innerText: only what is shown), and the page's width, into the DOM.
_HARNESS = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="report" src="report.html" style="width:{width}px;height:900px;border:0"></iframe>
<pre id="seen"></pre>
<script>
window.addEventListener("load", () => {{
  const doc = document.getElementById("report").contentDocument;
  const table = doc.getElementById("totals");
  const box = table.getBoundingClientRect();
  document.getElementById("seen").textContent = JSON.stringify({{
    text: table.innerText,
    width: box.width,
    height: box.height,
    pageWidth: doc.documentElement.scrollWidth,
    frameWidth: doc.documentElement.clientWidth,
  }});
}});
</script></body></html>
"""


def test_the_totals_table_is_rendered_and_the_page_fits_a_phone(made: Made) -> None:
    harness = made.page.with_name(f"harness-{made.name}.html")
    harness.write_text(_HARNESS.format(width=PHONE), encoding="utf-8")
    # File pages are of one origin only with this switch (so the frame can be read).
    page = parse(dump_dom(harness, "--allow-file-access-from-files"))
    seen = json.loads(page.words("seen"))
    assert seen["height"] > 100 and seen["width"] > 100
    lines = [line.split("\t") for line in seen["text"].strip().splitlines()]
    assert lines[0] == [f"Since {made.since} (UTC)"]
    shown = {row[0].strip(): row[1].strip() for row in lines[1:]}
    assert shown == expected_totals(made.rows, made.total)
    assert seen["frameWidth"] == PHONE
    assert seen["pageWidth"] <= PHONE, seen


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_in_light_and_dark(made: Made, scheme: str, tmp_path: Path) -> None:
    folder = screenshots_folder(tmp_path)
    shot = screenshot(
        made.page, folder / f"report-{made.name}-{scheme}.png", scheme=scheme, size=(1000, 1300)
    )
    image = read_png(shot)
    assert (image.width, image.height) == (1000, 1300)
    background = BACKGROUND[scheme]
    assert image.pixel(2, 2) == background
    assert image.pixel(image.width - 3, image.height - 3) == background
    # Text is drawn: pixels far from the background in the header's rows.
    header = range(10, 60)
    far = sum(
        1
        for y in header
        for x in range(0, 600, 2)
        if sum(abs(a - b) for a, b in zip(image.pixel(x, y), background, strict=True)) > 300
    )
    assert far > 50
    colours = image.colours()
    chart = colours[FIRST_SERIES[scheme]]
    other = colours[FIRST_SERIES["dark" if scheme == "light" else "light"]]

    if made.name == "rows":
        assert chart > 200, chart  # the bars of the costliest model, in this scheme's colour
        assert other == 0
    else:
        assert chart == 0
    phone = screenshot(
        made.page,
        folder / f"report-{made.name}-{scheme}-phone.png",
        scheme=scheme,
        size=(PHONE, 900),
    )
    assert read_png(phone, rows=3).pixel(2, 2) == background


def test_print_to_pdf_succeeds(made: Made, tmp_path: Path) -> None:
    pdf = print_pdf(made.page, tmp_path / f"report-{made.name}.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page\b", data))
    assert pages >= (2 if made.name == "rows" else 1), pages
