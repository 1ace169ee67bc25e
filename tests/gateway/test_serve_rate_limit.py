"""The service's rate-limit refusal under a real ``copilot-host serve`` process: the client
gets 429 with ``Retry-After``, and stderr gets one readable line with the reset time."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2

from copilot_host.testing import GitHubEmulator, RateWindow, Scenario, Usage
from tests.gateway.test_serve import (
    BOUND,
    CHAT,
    CHILD,
    _env,
    _listening,
    _login,
)

RUN_CHILD = Path(__file__).resolve().parents[1] / "cli" / "run_child.py"


def test_a_spent_weekly_window_is_one_stderr_line_with_the_reset(serve: Any) -> None:
    scenario = Scenario(usage=Usage(weekly_window=RateWindow(remaining=0.0, resets_in=7200)))
    before = datetime.now(UTC)
    served = serve("--port", "0", "--json", scenario=scenario)
    _listening(served)
    answer = httpx2.post(
        f"{served.base_url}/chat/completions",
        json=CHAT,
        headers={"Authorization": f"Bearer {served.key}"},
        timeout=30,
    )
    after = datetime.now(UTC)
    assert answer.status_code == 429
    assert 7000 <= int(answer.headers["retry-after"]) <= 7200
    served.err.wait_for("rate limit is reached")
    code, stdout, stderr = served.stop(signal.SIGTERM)
    assert code == 143
    (line,) = [text for text in stderr.splitlines() if "rate limit" in text]
    # The reset is the emulator's: two hours after it started, to the minute. It reaches
    # the gateway as Retry-After's whole seconds (the emulator drops the fraction), counted
    # from the gateway's clock, so it may read up to a second early: the minute before,
    # when the emulator started in the first second of a minute (seen once in CI).
    shown = {
        (when + timedelta(seconds=7200)).strftime("%Y-%m-%d %H:%M UTC")
        for when in (before - timedelta(seconds=1), before, after)
    }
    assert any(
        line.endswith(
            f"upstream refused: the account's weekly rate limit is reached; it resets at {s}"
        )
        for s in shown
    ), line
    assert "rate limit" not in stdout
    assert served.leaks(stdout, stderr) == []


def test_under_run_the_line_goes_to_the_log_file_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "gateway.log"
    scenario = Scenario(usage=Usage(weekly_window=RateWindow(remaining=0.0, resets_in=7200)))
    with GitHubEmulator(scenario) as emulator:
        _login(emulator, home)
        command = ["--", sys.executable, str(RUN_CHILD), "spend", "1"]
        done = subprocess.run(
            [sys.executable, str(CHILD), str(emulator.port), "run", "--log", str(log), *command],
            capture_output=True,
            text=True,
            env=_env(home),
            timeout=BOUND,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    # The command got the reshaped refusal; the person's terminal got nothing from it.
    assert json.loads(done.stdout)["answers"] == [[429, "user_weekly_rate_limited"]]
    assert done.stderr == ""
    (line,) = [text for text in log.read_text().splitlines() if "rate limit" in text]
    assert "upstream refused: the account's weekly rate limit is reached; it resets at " in line
    assert line.endswith(" UTC")
