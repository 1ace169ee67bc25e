"""What the CLI (``copilot_host_cli``) uses of the gateway beyond its public names: one
reviewed list, importable by the CLI alone (an import-linter contract in pyproject.toml).
Nothing here is public API: it may change in any release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._agents import AGENTS, NAMES, agent_for, agent_of, home_of
from ._agents._profile import Agent, Facts, Profile, Request, Setup
from ._protocols import Api, converses
from ._server import GRACE, STOP_SIGNALS, Hardening, ServerStack, bind, write_stderr_line

if TYPE_CHECKING:
    from ._app import GatewayApp
    from ._ledger import Recorder


def record_with(app: GatewayApp, recorder: Recorder) -> None:
    """Have ``app`` record each model request in ``recorder`` (the ledger ``serve`` and
    ``run`` open), before it serves."""
    app._record_with(recorder)


__all__ = [
    # the coding agents: their profiles for `run`, and who sent a request
    "AGENTS",
    "NAMES",
    "Agent",
    "Api",
    "Facts",
    "Profile",
    "Request",
    "Setup",
    "agent_for",
    "agent_of",
    "converses",
    "home_of",
    # the ledger, as serve and run record into it
    "record_with",
    # the server's plumbing: the CLI's listening socket, its stderr, its signals
    "GRACE",
    "STOP_SIGNALS",
    "Hardening",
    "ServerStack",
    "bind",
    "write_stderr_line",
]
