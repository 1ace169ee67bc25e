"""A signal while a poll is still in flight: the CLI does not promise what it cannot know."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from copilot_host.testing import DeviceFlow, Faults, Scenario
from tests.cli.conftest import Cli


def test_a_worker_still_busy_after_the_grace_period_gets_an_honest_message(
    cli: Cli, emulate: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import copilot_host_cli._wait as wait

    monkeypatch.setattr(wait, "_CANCEL_GRACE", 0.1)
    # Polls stall 3 s at the emulator; the signal is sent once one has arrived there, so it
    # lands while that poll is in flight however slow the machine is.
    env: Any = None

    def interrupt_during_a_poll() -> None:
        for _ in range(1000):
            if env.emulator.requests_to("access_token"):
                os.kill(os.getpid(), signal.SIGINT)
                return
            threading.Event().wait(0.01)

    env = emulate(
        Scenario(
            login=DeviceFlow(auto_approve=False, interval=1),
            faults=Faults(slow={"access_token": 3.0}),
        ),
        sleep=None,
        tick=0.02,
        on_waiting=lambda: threading.Thread(target=interrupt_during_a_poll).start(),
    )
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 130
    last = result.stderr.splitlines()[-1]
    assert "may have been stored" in last
    assert "copilot-host status" in last
