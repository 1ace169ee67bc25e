"""Codex CLI (npm ``@openai/codex``): what the gateway knows of it.

Its built-in provider ignores ``OPENAI_BASE_URL``; it reaches another server only through a
provider its configuration defines, which ``-c`` overrides give without a file. It speaks
OpenAI Responses and sends tools Copilot is reported to refuse, which the gateway's table
changes for it (``quirks``): namespace, custom and web_search tools, ``additional_tools``
items. Its requests carry an ``originator`` header (``codex_exec``, ``codex_cli_rs``) and a
``User-Agent`` starting ``codex_``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .._protocols import RESPONSES
from ._profile import Agent, Profile, Request, Setup, newest, option, prompt_limit, unknown

__all__ = [
    "AGENT",
    "CODEX_BUNDLED",
    "CODEX_COMPACT_SHARE",
    "CODEX_REVIEW_MODEL",
    "PROVIDER",
    "codex_model",
    "names_a_model",
]

PROVIDER = "copilot-host"
# The share of the prompt limit at which Codex is told to compact: room for the answer.
CODEX_COMPACT_SHARE = 0.9
# The models Codex CLI 0.171.0 ships metadata for (`codex debug models`); for any other,
# Codex warns on every run and falls back to metadata that is not the account's.
CODEX_BUNDLED = (
    "gpt-6.2-sol",
    "gpt-6.2-astra",
    "gpt-6-astra",
    "gpt-6.1-sol",
    "gpt-6.1-terra",
    "gpt-6-sol",
    "gpt-6-luna",
    "gpt-5.6-sol",
    "gpt-5.6-terra",
    "gpt-5.6-luna",
    "gpt-5.5",
)
CODEX_REVIEW_MODEL = "codex-auto-review"
_MODEL_SETTING = re.compile(r"\s*model\s*=")


def _identify(headers: Mapping[bytes, bytes]) -> bool:
    return b"originator" in headers or headers.get(b"user-agent", b"").startswith(b"codex_")


def codex_model(
    models: Sequence[tuple[str, Sequence[str]]],
    default: str | None,
    bundled: Sequence[str] = (),
) -> str | None:
    """The model Codex CLI gets when its arguments name none: ``default`` when given, else
    (with ``bundled``) the newest model Codex ships metadata for that speaks Responses,
    else the newest id containing ``codex`` that speaks Responses, else the newest ``gpt-``
    one. ``models`` is (id, gateway endpoints) in the inventory's order, which decides
    among equals."""
    if default is not None:
        return default
    speaking = [model_id for model_id, endpoints in models if RESPONSES.path in endpoints]
    for wanted in (lambda m: m in bundled, lambda m: "codex" in m, lambda m: m.startswith("gpt-")):
        found = newest([model_id for model_id in speaking if wanted(model_id)])
        if found is not None:
            return found
    return None


def _settings(args: Sequence[str]) -> list[str]:
    """Every ``-c``/``--config`` setting in Codex CLI arguments, as written."""
    settings: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("-c", "--config"):
            settings.append(args[index + 1] if index + 1 < len(args) else "")
        elif arg.startswith("--config="):
            settings.append(arg[len("--config=") :])
        elif arg.startswith("-c") and not arg.startswith("--"):
            settings.append(arg[2:])
    return settings


def _model_named(args: Sequence[str]) -> str | None:
    named = option(args, "-m", "--model")
    for setting in _settings(args):
        if _MODEL_SETTING.match(setting):
            named = setting.partition("=")[2].strip().strip("\"'")
    return named


def names_a_model(args: Sequence[str]) -> bool:
    """Whether Codex CLI arguments choose the model themselves (``-m``, ``--model``,
    ``-c model=…``, or a ``--profile``/``-p`` that may)."""
    return _model_named(args) is not None or option(args, "-p", "--profile") is not None


def _sets(args: Sequence[str], key: str) -> bool:
    pattern = re.compile(rf"\s*{re.escape(key)}\s*=")
    return any(pattern.match(setting) for setting in _settings(args))


def _build(request: Request) -> Setup:
    args, facts = request.args, request.facts
    table = f"model_providers.{PROVIDER}"
    overrides = [
        f'{table}.name="copilot-host"',
        f'{table}.base_url="{request.base_url}"',
        f'{table}.wire_api="responses"',
        f'{table}.env_key="COPILOT_HOST_API_KEY"',
        # Responses over WebSocket (the gateway's GET /v1/responses): without it Codex sends
        # the whole conversation each turn over HTTP. One key, no feature flag (measured
        # with Codex CLI 0.171.0: docs/WIRE.md, "Responses over WebSocket").
        f"{table}.supports_websockets=true",
        f'model_provider="{PROVIDER}"',
    ]
    notes: list[str] = []
    aliases: dict[str, str] = {}
    chosen = _model_named(args)
    listed = [(m.model_id, [RESPONSES.path] if RESPONSES.speaks(m) else []) for m in facts.models]
    if not names_a_model(args):
        # A bundled model sends apply_patch as a custom tool, which the gateway's Responses
        # changes serve (gateway/_changes/_tools.py); its metadata is Codex's own.
        chosen = codex_model(listed, facts.default, CODEX_BUNDLED)
        if chosen is not None:
            overrides.append(f'model="{chosen}"')
    model = facts.resolve(chosen, RESPONSES) if chosen else None
    if model is not None:
        # Codex sends its review requests to this name, which no account has.
        aliases[CODEX_REVIEW_MODEL] = model.model_id
        limit = prompt_limit(model)
        if model.context_window is not None and not _sets(args, "model_context_window"):
            overrides.append(f"model_context_window={model.context_window}")
        if limit is not None and not _sets(args, "model_auto_compact_token_limit"):
            overrides.append(f"model_auto_compact_token_limit={int(limit * CODEX_COMPACT_SHARE)}")
    elif facts.missing or not facts.models:
        notes.append(unknown(facts, "Codex's model and limits not set"))
    added: list[str] = []
    for override in overrides:
        added += ["-c", override]
    return Setup(args=(*added, *args), aliases=aliases, notes=tuple(notes))


AGENT = Agent(
    name="codex",
    programs=("codex",),
    identify=_identify,
    quirks=(
        "max_output_tokens",
        "additional-tools",
        "namespaces",
        "web-search",
        "custom-tools",
        "tool_choice",
    ),
    profile=Profile(
        "-c overrides defining a provider at the gateway (wire_api responses over its "
        "WebSocket, key from COPILOT_HOST_API_KEY), a model unless the arguments name one, its "
        "model_context_window and model_auto_compact_token_limit (90% of the prompt "
        "limit), and the alias codex-auto-review for that model",
        (
            "Codex CLI 0.171.0: -c key=value overrides; model_providers.<id> "
            "(name, base_url, wire_api, env_key, supports_websockets)",
            "model_max_output_tokens is left out: Codex 0.171.0 warns "
            "'`model_max_output_tokens` is ignored'",
        ),
        (
            ("model", "-m/--model, -c model=…, --profile/-p"),
            ("model_context_window", "-c model_context_window=…"),
            ("model_auto_compact_token_limit", "-c model_auto_compact_token_limit=…"),
            ("codex-auto-review", "--model-alias codex-auto-review=…"),
        ),
        _build,
    ),
)
