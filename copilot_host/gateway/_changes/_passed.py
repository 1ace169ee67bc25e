"""The shapes agents send that the gateway passes on as they came, each with the reason.

An explicit list, so a shape is never passed by oversight: each is one a first-party Copilot
client sends (then Copilot takes it) or one no refusal was ever reported for while a peer
forwards it; docs/WIRE.md ("Shapes no tested agent sends yet") has the rows and the
emulator takes each (docs/EMULATOR.md). Keys are ``api: field`` as docs/WIRE.md names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["PASSED"]

_VSC = "microsoft/vscode-copilot-chat (commit 31acd00a86424e2ee6e980e54919cf31fbf88030)"

PASSED: Mapping[str, str] = MappingProxyType(
    {
        "messages: tool search with advanced-tool-use": (
            "VS Code sends tool_search_tool_regex_20251119 and defer_loading with "
            "advanced-tool-use-2025-11-20 to the models that list supports.tool_search ("
            + _VSC
            + " src/platform/endpoint/node/messagesApi.ts); without the beta they go "
            "(the tool-search change)"
        ),
        "messages: cache_control ttl with extended-cache-ttl": (
            "VS Code sends ttl 1h with extended-cache-ttl-2025-04-11 (microsoft/vscode "
            "extensions/copilot/src/platform/endpoint/node/messagesApi.ts, commit "
            "0293dff79f2aa659a2276590d5c2be810908d925); without the beta it goes"
        ),
        "chat: temperature and max_tokens to other models": (
            "VS Code sends temperature, top_p and max_tokens on /chat/completions "
            "(" + _VSC + " src/platform/networking/common/networking.ts, "
            "createCapiRequestBody); only the GPT-5 and o-series models are reported "
            "to refuse them (the sampling change)"
        ),
        "messages: thinking.type adaptive": (
            "VS Code sends {type: adaptive} to the models whose inventory entry lists "
            "supports.adaptive_thinking (" + _VSC + " src/platform/endpoint/node/"
            "messagesApi.ts); Claude Code sends it only to the models it knows adaptive"
        ),
        "messages: metadata": (
            "VS Code's Claude Code bridge forwards Claude Code's body, metadata.user_id "
            "included (" + _VSC + " src/extension/chatSessions/claude/node/"
            "claudeLanguageModelServer.ts, createRequestBody); no refusal reported"
        ),
        "messages: output_config": (
            "VS Code sends output_config.effort with thinking on (microsoft/vscode "
            "extensions/copilot/src/platform/endpoint/node/messagesApi.ts, commit "
            "0293dff79f2aa659a2276590d5c2be810908d925); an effort above high is lowered "
            "(the effort change)"
        ),
        "responses: compaction input items": (
            "Copilot produces compaction items for VS Code's context_management and takes "
            "them back as input (" + _VSC + " src/platform/endpoint/node/responsesApi.ts); "
            "they are only ever Copilot's own"
        ),
        "responses: tool_search tool": (
            "the Copilot CLI runs a hosted tool search on Responses (its 1.0.102 runtime: "
            "tool_search_call, tool_search_output); no refusal reported; unverified"
        ),
        "responses: client_metadata": (
            "caozhiyuan/copilot-api forwards Codex's bodies with it and no refusal is "
            "reported in its tracker; unverified (it carries only ids: dropping it loses "
            "nothing if one is)"
        ),
        "responses: text.verbosity": (
            "VS Code sends {verbosity: low} for gpt-5.1 and gpt-5-mini (" + _VSC + " "
            "src/platform/endpoint/node/responsesApi.ts)"
        ),
        "responses: prompt_cache_key": (
            "VS Code sends it behind an experiment (" + _VSC + " src/platform/endpoint/node/"
            "responsesApi.ts)"
        ),
    }
)
