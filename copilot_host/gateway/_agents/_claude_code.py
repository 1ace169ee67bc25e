"""Claude Code (npm ``@anthropic-ai/claude-code``): what the gateway knows of it.

It speaks Anthropic Messages (``ANTHROPIC_BASE_URL``, the key as ``ANTHROPIC_AUTH_TOKEN``),
names models its own way (``claude-opus-5-5`` by default: :mod:`.._app._names` reads them),
and sends shapes Copilot is reported to refuse, which the gateway's table changes for it
(``quirks``): a billing block in ``system``, fields whose betas are not served, a
``role: "system"`` message inside ``messages``, output caps above the model's, server tools,
and count_tokens calls. Its requests carry ``User-Agent: claude-cli/<version>`` (or
``claude-code/<version>`` for model discovery) and ``x-app: cli``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .._protocols import MESSAGES
from ._profile import (
    Agent,
    BudgetStop,
    Profile,
    Request,
    Setup,
    cheapest,
    option,
    prompt_limit,
    unset,
)

__all__ = ["AGENT", "CLAUDE_DEFAULT_MODEL"]

# Claude Code 2.1.332's main model when neither ANTHROPIC_MODEL nor --model names one (the
# name its bundle sends; tests/agents shows it asked for).
CLAUDE_DEFAULT_MODEL = "claude-opus-5-5"
# The ids Claude Code keeps of a gateway's model list (2.1.332's discovery filter).
_CLAUDE = re.compile(r"claude|anthropic", re.IGNORECASE)


def _identify(headers: Mapping[bytes, bytes]) -> bool:
    agent = headers.get(b"user-agent", b"")
    return agent.startswith((b"claude-cli/", b"claude-code/")) or headers.get(b"x-app") == b"cli"


def _build(request: Request) -> Setup:
    env: dict[str, str] = {}
    notes: list[str] = []
    if unset(request, "CLAUDE_CODE_ATTRIBUTION_HEADER"):
        # The billing header Claude Code puts first in `system` changes with every prompt,
        # so nothing the gateway relays could be cached; 0 leaves it out.
        env["CLAUDE_CODE_ATTRIBUTION_HEADER"] = "0"
    if unset(request, "CLAUDE_CODE_AUTO_COMPACT_WINDOW"):
        name = (
            request.env.get("ANTHROPIC_MODEL")
            or option(request.args, "--model")
            or CLAUDE_DEFAULT_MODEL
        )
        model = request.facts.resolve(name, MESSAGES)
        limit = prompt_limit(model) if model is not None else None
        if limit is not None:
            env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(limit)
        else:
            notes.append(
                f"Claude Code's compaction window not set: {request.facts.missing}"
                if request.facts.missing
                else f"Claude Code's compaction window not set: no model serves {name!r}"
            )
    # Its background calls (WebFetch's summary, titles) go to the main model behind a
    # gateway unless these name another; the haiku alias and /model's Haiku follow the
    # first. The cheapest Claude model the account serves on Messages.
    claude = [m for m in request.facts.models if MESSAGES.speaks(m) and _CLAUDE.search(m.model_id)]
    small = cheapest(claude)
    for name in ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"):
        if small is not None and unset(request, name):
            env[name] = small.model_id
    if unset(request, "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY"):
        # /model then lists the account's Claude models, from GET /v1/models.
        env["CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY"] = "1"
    return Setup(env=env, args=request.args, notes=tuple(notes))


AGENT = Agent(
    name="claude-code",
    programs=("claude",),
    identify=_identify,
    quirks=(
        "betas",
        "billing-header",
        "beta-fields",
        "system-message",
        "max_tokens",
        "thinking-budget",
        "server-tools",
        "tool_choice",
        "count-tokens",
        "system",
    ),
    profile=Profile(
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW (the prompt limit of the model serving "
        "ANTHROPIC_MODEL, --model, else Claude Code's default name), "
        "CLAUDE_CODE_ATTRIBUTION_HEADER=0, ANTHROPIC_DEFAULT_HAIKU_MODEL and "
        "ANTHROPIC_SMALL_FAST_MODEL (the cheapest Claude model the account serves on "
        "Messages: its background calls) and CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1 "
        "(/model lists the account's Claude models)",
        (
            "Claude Code 2.1.332: CLAUDE_CODE_AUTO_COMPACT_WINDOW sets /context's "
            "'Auto-compact window' (verified with the real agent: tests/agents)",
            f"its default main model name: {CLAUDE_DEFAULT_MODEL} (its bundle)",
            "Claude Code 2.1.332's binary: the small/fast model is ANTHROPIC_SMALL_FAST_MODEL, "
            "else ANTHROPIC_DEFAULT_HAIKU_MODEL, else (behind a custom base URL) the main "
            "model, measured on WebFetch's summary request; discovery with "
            "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY reads GET /v1/models?limit=1000 in "
            "Anthropic's shape and keeps ids matching claude|anthropic (/model verified "
            "with the real agent: tests/agents)",
        ),
        (
            ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "the variable set by the user"),
            ("CLAUDE_CODE_ATTRIBUTION_HEADER", "the variable set by the user"),
            ("ANTHROPIC_DEFAULT_HAIKU_MODEL, ANTHROPIC_SMALL_FAST_MODEL", "each variable set"),
            ("CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY", "the variable set by the user"),
            ("the model sized", "ANTHROPIC_MODEL, then --model, then the default name"),
        ),
        _build,
    ),
    budget=BudgetStop(
        402,
        "Claude Code 2.1.332, headless and full-screen: one request, then 'API Error: 402 "
        "<message>' and its prompt (headless: exit 1) at once; a 400 is retried six times "
        "with fewer betas, a 429 without x-should-retry up to ten times, and a 403 reads "
        "'Failed to authenticate' (measured in a loopback namespace; tests/agents)",
    ),
)
