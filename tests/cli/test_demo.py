"""demo in-process: the journey, and that it never touches the real keyring or home."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import pytest
from copilot_host_cli._demo import _first, _reply_text, _Steps
from copilot_host_cli._failure import CliFailure, Problem
from copilot_host_cli._output import Output

from copilot_host import ApiProtocol, TransportError
from tests._keyring_base import TypedBackend

from .conftest import Cli


class _ForbiddenKeyring(TypedBackend):
    def get_password(self, service: str, username: str) -> str | None:
        raise AssertionError("the demo touched the keyring")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise AssertionError("the demo touched the keyring")

    def delete_password(self, service: str, username: str) -> None:
        raise AssertionError("the demo touched the keyring")


def test_demo_runs_the_journey_without_keyring_or_home(cli: Cli, copilot_home: Path) -> None:
    keyring.set_keyring(_ForbiddenKeyring())
    before = sorted(os.listdir(copilot_home))
    result = cli("demo")
    assert result.exit_code == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if line.startswith("ok [")]
    assert [s.split("] ", 1)[1].rsplit("  (", 1)[0] for s in steps] == [
        "started the loopback GitHub emulator",
        "GitHub issued a device code",
        "authorization simulated",
        "Copilot access verified, login stored encrypted",
        "registered the account's models",
        "read the account's Copilot usage",
        "Chat Completions request through route.auth",
        "Responses request through route.auth",
        "Anthropic Messages request through route.auth",
        "logged out",
    ]
    assert "WDJB-MJHT at https://github.com/login/device" in result.stdout
    assert "mode 0600, no plain token in it" in result.stdout
    assert "36 routes from https://api.individual.githubcopilot.com" in result.stdout
    assert "10 inventory entries skipped (" in result.stdout
    assert result.stdout.count("sent with X-Initiator: user") == 3
    assert "octocat: plan individual_pro, billed in AI credits" in result.stdout
    assert result.stdout.count("the answer reported its cost: 0.0425 AI credits") == 3
    assert result.stdout.rstrip().splitlines()[-1].startswith("Done in ")
    assert sorted(os.listdir(copilot_home)) == before


def test_a_failing_step_is_named_in_one_line() -> None:
    steps = _Steps(Output(), total=2)
    with pytest.raises(CliFailure) as caught, steps.step("registered the models"):
        raise TransportError("the emulator went away")
    assert caught.value.problem.code == "demo_failed"
    assert str(caught.value) == (
        "demo step 1 (registered the models) failed: the emulator went away"
    )
    other: Any = ValueError("no secret text shown")
    with pytest.raises(CliFailure) as caught, steps.step("logged out"):
        raise other
    assert str(caught.value) == "demo step 2 (logged out) failed: ValueError"


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"choices": [{"message": {"content": "hi from chat"}}]}, "hi from chat"),
        (
            {"type": "message", "content": [{"type": "tool_use"}, {"type": "text", "text": "hi"}]},
            "hi",
        ),
        ({"output": [{"content": [{"type": "reasoning"}, {"text": "hi there"}]}]}, "hi there"),
        ({"output": [], "output_text": "plain"}, "plain"),
        ({"choices": [{"message": {"content": "\x1b[31mred\x1b[0m"}}]}, "[31mred[0m"),
        ({"choices": []}, "(no text in the answer)"),
        ({"type": "message", "content": [{"type": "tool_use"}]}, "(no text in the answer)"),
        ({"output": ["not a message"]}, "(no text in the answer)"),
        ({}, "(no text in the answer)"),
    ],
)
def test_the_demo_shows_the_answers_text_whatever_its_shape(body: Any, text: str) -> None:
    assert _reply_text(body) == text


def test_the_demo_fails_plainly_when_no_route_speaks_a_protocol() -> None:
    with pytest.raises(CliFailure) as caught:
        _first((), ApiProtocol.ANTHROPIC_MESSAGES)
    assert caught.value.problem == Problem(
        "demo_failed", "the emulator offered no anthropic-messages model"
    )
