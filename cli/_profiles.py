"""What ``copilot-host run`` tells each coding agent: the agents' own modules decide.

Every command gets the gateway's address and key in its environment (``OPENAI_*``,
``ANTHROPIC_*``, ``COPILOT_HOST_*``; :func:`copilot_host_cli._run.child_environment`). A
profile, chosen by the command's file name, adds what one agent needs beyond that; each
agent's profile lives in its module of ``copilot_host.gateway._agents`` (with what else the
gateway knows of that agent), and this module only finds it. README ("Use it with coding
agents") lists every profile; ``run --print-profile -- AGENT …`` prints it for this account.
"""

from __future__ import annotations

from copilot_host.gateway._plumbing import (
    Agent,
    Facts,
    Request,
    Setup,
    agent_for,
    converses,
    home_of,
)

__all__ = ["Agent", "Facts", "Request", "Setup", "agent_for", "converses", "home_of"]
