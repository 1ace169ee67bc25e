"""Which agent sent a request, as one word of :data:`AGENTS` (never the header itself).

``run`` knows: it started the agent, and records its profile's word. ``serve`` reads the
request's ``User-Agent`` with :func:`agent_from_user_agent`, whose prefixes come from what
each client sends:

* Claude Code: ``claude-cli/2.1.332 (external, sdk-cli)`` (captured; docs/WIRE.md).
* Codex: ``<originator>/<version> (<os>; <arch>) <terminal>``, the originator
  ``codex_cli_rs`` by default and ``codex_exec`` for ``codex exec`` (openai/codex,
  ``codex-rs/core/src/default_client.rs``, ``get_codex_user_agent``).
* Copilot CLI: ``copilot/1.0.102 (linux v24.11.1) term/xterm-256color`` (captured;
  docs/WIRE.md, "The Copilot CLI's identity").
* Qwen Code: ``QwenCode/<version> (<platform>; <arch>)`` (npm ``@qwen-code/qwen-code``
  0.24.4, ``chunks/chunk-7I63HEBQ.js``, its OpenAI content generator's headers).
* opencode: ``opencode/<version>`` on the requests it makes itself (npm
  ``opencode-linux-x64`` 1.18.33, the bundled source); to an OpenAI-compatible provider it
  may send only the AI SDK's ``ai-sdk/openai-compatible/<version>``, which is "other".
* The official SDKs: ``OpenAI/Python 3.63.0`` (``AsyncOpenAI/Python`` from the asyncio
  client: openai-python ``_base_client.py``, ``user_agent`` is the class name, ``/Python``
  and the version), ``OpenAI/JS``; ``Anthropic/Python``, ``AsyncAnthropic/Python``,
  ``Anthropic/JS``. aider talks through litellm and the OpenAI SDK, so under ``serve`` it
  is ``openai-sdk``; under ``run`` it is ``aider``.
"""

from __future__ import annotations

from ._records import AGENTS

__all__ = ["AGENTS", "agent_from_user_agent"]

# (prefix, word): the first whose prefix starts the User-Agent wins.
_PREFIXES = (
    (b"claude-cli/", "claude-code"),
    (b"codex_", "codex"),
    (b"copilot/", "copilot-cli"),
    (b"qwencode/", "qwen-code"),
    (b"opencode/", "opencode"),
    (b"openai/", "openai-sdk"),
    (b"asyncopenai/", "openai-sdk"),
    (b"anthropic/", "anthropic-sdk"),
    (b"asyncanthropic/", "anthropic-sdk"),
)


def agent_from_user_agent(value: bytes | None) -> str:
    """The agent word for a request's ``User-Agent`` (``other`` when none fits)."""
    if not value:
        return "other"
    head = value[:32].lower()
    for prefix, word in _PREFIXES:
        if head.startswith(prefix):
            return word
    return "other"
