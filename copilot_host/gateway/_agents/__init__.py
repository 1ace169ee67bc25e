"""The coding agents the gateway knows, one module each: its profile and the quirks it has.

Each agent's module (:mod:`._claude_code`, :mod:`._codex`, :mod:`._opencode`, :mod:`._aider`,
:mod:`._copilot_cli`, :mod:`._qwen_code`) holds everything the gateway knows of that agent:
how its requests are told from others' (``identify``), which of the table's changes exist
for shapes it sends (``quirks``, each a name in :data:`copilot_host.gateway._changes.TABLE`),
the status a spent budget is refused with (``budget``), and the profile ``copilot-host run``
applies (:class:`._profile.Profile`). The CLI only calls them.

Who sent a request is one word of a closed vocabulary (:data:`NAMES`), never the raw
``User-Agent``: the ledger and the access line can hold it without holding anything a client
chose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePath

from . import _aider, _claude_code, _codex, _copilot_cli, _opencode, _qwen_code
from ._profile import PAYMENT_REQUIRED, Agent

__all__ = ["AGENTS", "NAMES", "TOLD_BY", "agent_for", "agent_of", "budget_status", "home_of"]

# In the order requests are matched: the more specific headers first (the Copilot CLI
# sends an SDK's User-Agent, told apart by its own headers).
AGENTS: tuple[Agent, ...] = (
    _codex.AGENT,
    _claude_code.AGENT,
    _opencode.AGENT,
    _qwen_code.AGENT,
    _copilot_cli.AGENT,
    _aider.AGENT,
)
_BY_PROGRAM = {program: agent for agent in AGENTS for program in agent.programs}
_BY_NAME = {agent.name: agent for agent in AGENTS}
# The SDKs' own User-Agents (the openai and anthropic packages, Python and JavaScript).
_SDKS = ((b"OpenAI/", "openai-sdk"), (b"Anthropic/", "anthropic-sdk"))
NAMES: tuple[str, ...] = (*(agent.name for agent in AGENTS), "openai-sdk", "anthropic-sdk", "other")


# The headers an agent is told by (each module's ``identify`` reads no other: the gateway
# reads no other for it), and what their values were found to say: a client sends the
# same ones on every request, and looking them up costs a tenth of asking each agent.
TOLD_BY = (b"user-agent", b"x-app", b"originator", b"x-interaction-type")
_SEEN: dict[tuple[bytes | str | None, ...], str] = {}
# Values are the client's to choose: a client inventing new ones empties the memo rather
# than growing it.
_SEEN_MAX = 256


def agent_of(headers: Mapping[bytes, bytes], default: str = "other") -> str:
    """Who sent a request, from its headers (lower-case names): an agent's name, an SDK's,
    else ``default`` (``run`` passes the agent it started)."""
    key = (*map(headers.get, TOLD_BY), default)
    found = _SEEN.get(key)
    if found is None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        found = _SEEN[key] = _identify(headers, default)
    return found


def _identify(headers: Mapping[bytes, bytes], default: str) -> str:
    for agent in AGENTS:
        if agent.identify(headers):
            return agent.name
    user_agent = headers.get(b"user-agent", b"")
    for prefix, name in _SDKS:
        if user_agent.startswith(prefix):
            return default if default != "other" else name
    return default


def budget_status(name: str) -> int:
    """The status a spent budget is refused with for the agent ``name`` (a name of
    :data:`NAMES`): the one it stops on at once (each module says why); 402 for others."""
    found = _BY_NAME.get(name)
    return (found.budget if found is not None else PAYMENT_REQUIRED).status


def agent_for(command: str) -> Agent | None:
    """The agent a command starts, by its file name (``/usr/bin/codex`` is ``codex``)."""
    return _BY_PROGRAM.get(PurePath(command).name)


def home_of(env: Mapping[str, str]) -> Path:
    """The home folder agents read their files from."""
    return Path(env.get("HOME") or os.path.expanduser("~"))
