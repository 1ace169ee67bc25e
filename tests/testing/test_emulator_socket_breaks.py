"""``Sockets(breaks=N)``: the emulator's socket breaks an answer off with an error frame after
its first frame, for the first N socket requests (the gateway's side is in
tests/gateway/test_socket_upstream_edges.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from copilot_host.testing import GitHubEmulator, Scenario, Sockets
from tests.testing.test_emulator_sockets import USER, _routes, _run


def test_a_scripted_break_ends_an_answer_with_an_error_frame(tmp_path: Path) -> None:
    with (
        GitHubEmulator(Scenario(sockets=Sockets(breaks=1))) as emulator,
        _routes(emulator, tmp_path / "home") as found,
    ):
        request = {"model": "gpt-5.5", "input": [USER]}
        broken, served = _run(emulator, found["gpt-5.5"], request, request)
    assert [frame["type"] for frame in broken] == ["response.created", "error"]
    assert broken[-1]["error"]["code"] == "internal_error"
    assert "copilot_quota_snapshots" in broken[-1]
    # The socket goes on; only the first answer breaks.
    assert served[-1]["type"] == "response.completed"


def test_breaks_is_a_count() -> None:
    with pytest.raises(ValueError, match="counts are 0 or more"):
        Sockets(breaks=-1)
