"""Headless Chromium (Debian's package, /usr/bin/chromium) as the tests drive it: its own
command-line switches only, each run with a fresh profile and nothing from the network.

Where Chromium is not installed the tests that need it skip, except under ``CI`` (.ci/run
installs Debian's ``chromium``), where that is a failure. The light and dark renderings
are asked for with ``--blink-settings=preferredColorScheme=`` (0 dark, 1 light: Blink's
``PreferredColorScheme``), which this headless mode honours for
``prefers-color-scheme``; the tests check the screenshots' pixels rather than trust it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

__all__ = ["SCHEMES", "chromium", "dump_dom", "print_pdf", "screenshot", "screenshots_folder"]

# Blink's PreferredColorScheme values.
SCHEMES = {"dark": 0, "light": 1}
# Where the screenshots go: CI names a folder and prints what is in it after the tests.
SCREENSHOTS_VARIABLE = "COPILOT_HOST_SCREENSHOTS"
# What keeps a headless start quiet and local: no background fetches, no profile sync, no
# first-run work (without them Chromium tries hosts this machine cannot reach, and waits).
_SWITCHES = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
)
_TIMEOUT = 90


def chromium() -> str:
    """The Chromium to run; skips (fails under CI) when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed: .ci/run installs Debian's chromium package")
    pytest.skip("chromium is not installed here (apt-get install chromium); CI runs this test")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run(
            [chromium(), *_SWITCHES, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def dump_dom(page: Path, *extra: str) -> str:
    """The page's DOM once loaded (``--dump-dom``), serialised."""
    return _run(*extra, "--dump-dom", page.as_uri()).stdout


def screenshot(page: Path, target: Path, *, scheme: str, size: tuple[int, int]) -> Path:
    _run(
        f"--blink-settings=preferredColorScheme={SCHEMES[scheme]}",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={target}",
        page.as_uri(),
    )
    assert target.is_file() and target.stat().st_size > 0
    return target


def print_pdf(page: Path, target: Path) -> Path:
    _run("--no-pdf-header-footer", f"--print-to-pdf={target}", page.as_uri())
    return target


def screenshots_folder(fallback: Path) -> Path:
    """The folder CI names in ``COPILOT_HOST_SCREENSHOTS``, else ``fallback``."""
    named = os.environ.get(SCREENSHOTS_VARIABLE)
    folder = Path(named) if named else fallback
    folder.mkdir(parents=True, exist_ok=True)
    return folder
