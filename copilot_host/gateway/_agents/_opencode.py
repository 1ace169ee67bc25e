"""opencode (npm ``opencode-ai``): what the gateway knows of it.

It takes a provider from ``opencode.json`` or from ``OPENCODE_CONFIG_CONTENT``, whose values
may read the environment (``{env:NAME}``); the profile gives it a provider at the gateway
(Chat Completions, through ``@ai-sdk/openai-compatible``) listing the account's chat models
with their limits, merged under whatever the user's own files and variable set. Its
requests carry ``User-Agent: opencode/<version>``; the gateway caps its ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._configs import Skipped, deep_merge, parse_json, read_json, upward
from ._profile import (
    Agent,
    BudgetStop,
    Profile,
    Request,
    Setup,
    chat_models,
    default_chat_model,
    option,
    prompt_limit,
    unknown,
)

__all__ = ["AGENT", "PROVIDER"]

PROVIDER = "copilot-host"


def _identify(headers: Mapping[bytes, bytes]) -> bool:
    return headers.get(b"user-agent", b"").startswith(b"opencode/")


def _files(request: Request) -> list[Path]:
    """The user's own opencode files, in opencode's order (1.18.33's bundle: the global
    config, ``OPENCODE_CONFIG``, the project's files from the root down, then
    ``.opencode`` folders)."""
    env = request.env
    config_home = Path(env.get("XDG_CONFIG_HOME") or request.home / ".config")
    files = [
        config_home / "opencode" / n for n in ("config.json", "opencode.json", "opencode.jsonc")
    ]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(env["OPENCODE_CONFIG"]))
    if not env.get("OPENCODE_DISABLE_PROJECT_CONFIG"):
        files += reversed(upward(request.cwd, ("opencode.jsonc", "opencode.json")))
        files += reversed(
            upward(request.cwd, (".opencode/opencode.jsonc", ".opencode/opencode.json"))
        )
    files += [request.home / ".opencode" / n for n in ("opencode.jsonc", "opencode.json")]
    if env.get("OPENCODE_CONFIG_DIR"):
        files += [Path(env["OPENCODE_CONFIG_DIR"]) / n for n in ("opencode.jsonc", "opencode.json")]
    return files


def _theirs(request: Request) -> tuple[dict[str, Any], list[Skipped]]:
    """What the user's own files set, merged in opencode's order, and the files skipped."""
    merged: dict[str, Any] = {}
    skipped: list[Skipped] = []
    for path in _files(request):
        value = read_json(path)
        if isinstance(value, Skipped):
            skipped.append(value)
        elif value is not None:
            merged = deep_merge(merged, value)
    return merged, skipped


def _without_set(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """``ours`` less every leaf ``theirs`` sets (objects are pruned key by key). It recurses
    only as deep as ``ours`` nests, which the profile builds (four levels)."""
    kept: dict[str, Any] = {}
    for key, value in ours.items():
        if key not in theirs:
            kept[key] = value
        elif isinstance(value, Mapping) and isinstance(theirs[key], Mapping):
            inner = _without_set(value, theirs[key])
            if inner:
                kept[key] = inner
    return kept


def _ours(request: Request) -> tuple[dict[str, Any], list[str]]:
    facts = request.facts
    chat = chat_models(facts)
    if not chat:
        return {}, [unknown(facts, "opencode's provider not set")]
    models: dict[str, Any] = {}
    for model in chat:
        context, output = prompt_limit(model), model.max_output_tokens
        # opencode's schema needs both; it compacts when a prompt nears limit.context
        # (less the output) and asks for at most limit.output. A model listing neither is
        # no model to chat with (the inventory's trajectory-compaction, output 0).
        if context and output:
            limit = {"context": context, "output": output}
            models[model.model_id] = {"name": model.display_name, "limit": limit}
    ours: dict[str, Any] = {
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "copilot-host",
                # By reference: opencode reads both from run's environment.
                "options": {
                    "baseURL": "{env:COPILOT_HOST_BASE_URL}",
                    "apiKey": "{env:COPILOT_HOST_API_KEY}",
                },
                "models": models,
            }
        }
    }
    default = default_chat_model(facts)
    if default is not None and option(request.args, "-m", "--model") is None:
        ours["model"] = f"{PROVIDER}/{default.model_id}"
    return ours, []


def _build(request: Request) -> Setup:
    ours, notes = _ours(request)
    theirs_text = request.env.get("OPENCODE_CONFIG_CONTENT")
    theirs: dict[str, Any] = {}
    if theirs_text is not None:
        parsed = parse_json(theirs_text, "OPENCODE_CONFIG_CONTENT")
        if parsed is None:
            notes.append("OPENCODE_CONFIG_CONTENT left as it is: it is not a JSON object")
            return Setup(args=request.args, notes=tuple(notes))
        theirs = parsed
    files, skipped = _theirs(request)
    if skipped:
        # A file that could not be read could have set anything: add nothing.
        notes += [f"opencode's provider not set: {file.note()}" for file in skipped]
        return Setup(args=request.args, notes=tuple(notes))
    # opencode merges OPENCODE_CONFIG_CONTENT over the user's files; ours gives way to both.
    content = deep_merge(_without_set(ours, deep_merge(files, theirs)), theirs)
    env = {"OPENCODE_CONFIG_CONTENT": json.dumps(content, separators=(",", ":"))} if content else {}
    return Setup(env=env, args=request.args, notes=tuple(notes))


AGENT = Agent(
    name="opencode",
    programs=("opencode",),
    identify=_identify,
    quirks=("max_tokens",),
    profile=Profile(
        "OPENCODE_CONFIG_CONTENT: a copilot-host provider (@ai-sdk/openai-compatible, "
        "base URL and key by {env:…} reference) listing the account's Chat Completions "
        "models with limit.context and limit.output, and a default model",
        (
            "opencode 1.18.33's bundle: the global config, OPENCODE_CONFIG, the "
            "project's opencode.json[c], .opencode folders, then OPENCODE_CONFIG_CONTENT "
            "are deep-merged in that order, the later winning",
        ),
        (
            ("any key", "the user's OPENCODE_CONFIG_CONTENT, then their opencode files"),
            ("model", "-m/--model"),
        ),
        _build,
    ),
    budget=BudgetStop(
        402,
        "opencode 1.18.33: a 402 is not retried (its AI SDK retries 408, 409, 429 and "
        "5xx; its session retries a message or body matching 429, 500, 502, 503, 504, "
        "524, 'rate limit', 'try again later' and similar, which the message avoids); "
        "one request each for the title and the turn, then 'Error: <message>' (measured "
        "in a loopback namespace; tests/agents)",
    ),
)
