"""What ``usage --report`` costs over a year of rows, and what Chromium takes to open it.

    python bench/report.py [--rows N] [--runs R]

A ledger of N requests (default 500,000: a year) spread over 365 days (``bench/ledger.py``'s
``_year``: 4 models, 4 agents, 250 runs), then, best of R fresh processes each:

1. ``copilot-host usage --report FILE --since 366d`` (logged out: no quota lookup), and
   ``copilot-host status`` beside it for scale;
2. headless Chromium (Debian's ``chromium``, the tests' switches) opening the page:
   ``--dump-dom``, ``--screenshot`` of 1000x1300, and ``--print-to-pdf``; and Chromium
   opening an empty page the same way, which is its own start-up.

Target (issue: "a year of rows renders in Chromium in under 10 s"): the report's making
plus Chromium's screenshot of it, under 10 s. Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import ledger as ledger_bench  # noqa: E402 - bench/ledger.py, a sibling script

SCRIPT = Path(sys.executable).parent / "copilot-host"
SWITCHES = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)


def _best(
    make: Sequence[str], env: dict[str, str] | None, runs: int, *, check: bool = True
) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            list(make), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check
        )
        best = min(best, time.perf_counter() - started)
    return best


def _chromium(browser: str, folder: Path, *args: str) -> list[str]:
    profile = tempfile.mkdtemp(prefix="profile-", dir=folder)
    return [browser, *SWITCHES, f"--user-data-dir={profile}", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    browser = shutil.which("chromium")
    if browser is None:
        sys.exit("needs Debian's chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        home = folder / "home"
        home.mkdir(mode=0o700)
        started = time.perf_counter()
        ledger_bench._year(home / "ledger.sqlite3", args.rows)
        made = time.perf_counter() - started
        print(f"report benchmark on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        print(f"a ledger of {args.rows:,} rows over 365 days ({made:.0f} s to make)")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("COPILOT_HOST_")},
            "COPILOT_HOST_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        page = folder / "report.html"
        blank = folder / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title>", encoding="utf-8")
        report = [str(SCRIPT), "usage", "--report", str(page), "--since", "366d"]
        # Logged out, status exits 1: what is timed is its start and its store check.
        status = _best([str(SCRIPT), "status"], env, args.runs, check=False)
        writing = _best(report, env, args.runs)
        size = page.stat().st_size
        shot = folder / "report.png"
        opened = {
            "--dump-dom": _chromium(browser, folder, "--dump-dom", page.as_uri()),
            "--screenshot 1000x1300": _chromium(
                browser, folder, "--window-size=1000,1300", f"--screenshot={shot}", page.as_uri()
            ),
            "--print-to-pdf": _chromium(
                browser, folder, f"--print-to-pdf={folder / 'report.pdf'}", page.as_uri()
            ),
            "--screenshot of an empty page": _chromium(
                browser, folder, f"--screenshot={folder / 'blank.png'}", blank.as_uri()
            ),
        }
        times = {label: _best(argv, None, args.runs) for label, argv in opened.items()}
        pages = (folder / "report.pdf").read_bytes().count(b"/Type /Page\n")
        print(f"   copilot-host status (logged out)      {status * 1000:7.0f} ms")
        print(
            f"   usage --report (every row)            {writing * 1000:7.0f} ms  ({size:,} bytes)"
        )
        for label, took in times.items():
            print(f"   chromium {label:29} {took * 1000:7.0f} ms")
        total = writing + times["--screenshot 1000x1300"]
        print(f"   report and screenshot                 {total * 1000:7.0f} ms  (target: < 10 s)")
        if pages:
            print(f"   (the PDF has {pages} pages)")


if __name__ == "__main__":
    main()
