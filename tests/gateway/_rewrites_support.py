"""What the Messages and Responses rewrite tests share: a gateway per module over the
loopback emulator, each test's view of it checked for leaks and refusals, and readers of
what came back (stream events, the access line's ``rewrote=`` field)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from copilot_host.testing import GitHubEmulator, Scenario
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

__all__ = ["checked", "events_of", "module_gateway", "rewrote"]


def module_gateway(
    tmp_path_factory: pytest.TempPathFactory, name: str, scenario: Scenario | None = None
) -> Iterator[Gateway]:
    """A gateway over an emulator of ``scenario``, for a module-scoped fixture to yield from."""
    home = tmp_path_factory.mktemp(name) / "home"
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, home) as running,
    ):
        yield running


def checked(started: Gateway) -> Iterator[Gateway]:
    """``started`` with its records cleared, for one test; after it, nothing leaked and
    what the gateway sent passed every refusal rule of the emulator (none is lenient)."""
    started.emulator.clear_requests()
    started.seen.clear()
    started.access.lines.clear()
    yield started
    assert_no_leaks(started)
    started.emulator.assert_no_refusals()


def events_of(text: str) -> list[dict[str, Any]]:
    """The data of each event of a Server-Sent Events text, in order."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                found.append(json.loads(line[5:]))
    return found


def rewrote(gateway: Gateway) -> list[str]:
    """The names in the ``rewrote=`` field of the one access line."""
    (line,) = gateway.access.lines
    for field in line.split():
        if field.startswith("rewrote="):
            return field.removeprefix("rewrote=").split(",")
    return []
