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
    Facts,
    Profile,
    Request,
    Setup,
    agent_for,
    converses,
    home_of,
)

__all__ = ["Facts", "Request", "Setup", "converses", "home_of", "profile_for"]


def profile_for(command: str) -> Profile | None:
    """The profile of a command, by its file name (``/usr/bin/codex`` is ``codex``)."""
    agent = agent_for(command)
    return agent.profile if agent is not None else None
