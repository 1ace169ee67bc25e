"""What ``copilot-host run`` tells each coding agent about the account's models.

Every command gets the gateway's address and key in its environment (``OPENAI_*``,
``ANTHROPIC_*``, ``COPILOT_HOST_*``; :func:`copilot_host_cli._run.child_environment`). A
profile, chosen by the command's file name, adds what one agent needs beyond that: the
provider it cannot take from the environment, the model to use, and the limits of that
model as the account's inventory lists them (the gateway's catalog at start), so the agent
compacts before Copilot refuses its prompt.

Each profile is declarative: what it adds, where that is documented (``sources``), and a
precedence table (``precedence``: for each setting, what the user may set that wins).
Rules every profile keeps:

* a variable or argument the user set is never changed; what the user set wins;
* the key is never on a command line or in a file: profiles name it by reference
  (``COPILOT_HOST_API_KEY``, ``{env:COPILOT_HOST_API_KEY}``) or put it in the environment;
* what cannot be known (no login, no Chat Completions model, a failed registration) is left
  out, and :class:`Setup` says why in ``notes``, which ``run`` prints in its one line.

README ("Use it with coding agents") lists every profile with what it adds and how to give
the same by hand; ``run --print-profile -- AGENT …`` prints it for this account.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from copilot_host import ApiProtocol, ModelSpec

__all__ = [
    "CLAUDE_DEFAULT_MODEL",
    "PROFILES",
    "Facts",
    "Profile",
    "Request",
    "Setup",
    "cheapest_chat_model",
    "codex_model",
    "default_chat_model",
    "deep_merge",
    "names_a_model",
    "profile_for",
    "strip_jsonc",
]

PROVIDER = "copilot-host"
# Claude Code 2.1.332's main model when neither ANTHROPIC_MODEL nor --model names one (the
# name its bundle sends; tests/agents shows it asked for).
CLAUDE_DEFAULT_MODEL = "claude-opus-5-5"
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
# Whether the gateway serves Codex's custom tools (apply_patch) on Responses, which a model
# from CODEX_BUNDLED needs; until it does, the profile keeps the rule of 0.3.0.
CODEX_CUSTOM_TOOLS_SERVED = False
_MODEL_SETTING = re.compile(r"\s*model\s*=")


# -- what a profile knows and gives ----------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What the gateway's catalog says at start. ``models`` in the inventory's order (empty
    when nothing is known); ``resolve(name, protocol)`` is the model the gateway serves
    ``name`` with on that protocol's endpoint (its naming rules), None for none; ``default``
    is ``--default-model``; ``missing`` says why nothing is known (None when it is)."""

    models: tuple[ModelSpec, ...] = ()
    resolve: Callable[[str, ApiProtocol | None], ModelSpec | None] = lambda _n, _p: None
    default: str | None = None
    missing: str | None = None


@dataclass(frozen=True)
class Request:
    """One command to set up: its arguments (after the program), the user's environment
    (before ``run`` adds to it), the gateway's ``/v1`` URL, the catalog's facts, and where
    the agent looks for its own configuration (``cwd``, ``home``)."""

    args: tuple[str, ...]
    env: Mapping[str, str]
    base_url: str
    facts: Facts
    cwd: Path
    home: Path


@dataclass(frozen=True)
class Setup:
    """What a profile adds: ``env`` (only names the user did not set), ``args`` (the
    command's arguments as they will run), ``aliases`` for the gateway (model names the
    agent sends that no rule finds), and ``notes``: what was left out and why. ``key_env``
    names variables ``run`` sets to the gateway's key (a profile never holds it)."""

    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    key_env: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """One agent: ``program`` (the command's file name), ``adds`` (README's wording),
    ``sources`` (where the agent documents or implements what is used), ``precedence``
    ((setting, what of the user's wins over it) rows), and ``build``."""

    program: str
    adds: str
    sources: tuple[str, ...]
    precedence: tuple[tuple[str, str], ...]
    build: Callable[[Request], Setup]


# -- model choice ----------------------------------------------------------------------------


def _numbers(model_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", model_id))


def _newest(ids: Sequence[str]) -> str | None:
    """The newest id (the numbers in it, as a tuple; among equals the first listed)."""
    if not ids:
        return None
    return max(ids, key=lambda m: (_numbers(m), -ids.index(m)))


def _chat(facts: Facts) -> list[ModelSpec]:
    return [m for m in facts.models if ApiProtocol.OPENAI_CHAT in m.protocols]


def default_chat_model(facts: Facts) -> ModelSpec | None:
    """``--default-model`` if given, else the inventory's ``is_chat_default`` model if it
    serves Chat Completions, else the newest ``gpt-`` model that does."""
    by_id = {m.model_id: m for m in facts.models}
    if facts.default is not None and facts.default in by_id:
        return by_id[facts.default]
    chat = _chat(facts)
    for model in chat:
        if model.chat_default:
            return model
    newest = _newest([m.model_id for m in chat if m.model_id.startswith("gpt-")])
    return by_id.get(newest) if newest is not None else None


def cheapest_chat_model(facts: Facts) -> ModelSpec | None:
    """The Chat Completions model with the lowest output price, else the lowest
    multiplier (among equals, the inventory's first); else the default chat model."""
    chat = _chat(facts)

    def output_price(m: ModelSpec) -> float | None:
        prices = m.billing.prices if m.billing is not None else None
        return prices.per_million(prices.output) if prices is not None else None

    def multiplier(m: ModelSpec) -> float | None:
        return m.billing.multiplier if m.billing is not None else None

    for measure in (output_price, multiplier):
        priced = [
            (value, index, m) for index, m in enumerate(chat) if (value := measure(m)) is not None
        ]
        if priced:
            return min(priced, key=lambda entry: (entry[0], entry[1]))[2]
    return default_chat_model(facts)


def prompt_limit(model: ModelSpec) -> int | None:
    """The largest prompt the service takes: ``max_prompt_tokens``, else the window."""
    return model.max_prompt_tokens or model.context_window


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
    speaking = [model_id for model_id, endpoints in models if "/v1/responses" in endpoints]
    for wanted in (lambda m: m in bundled, lambda m: "codex" in m, lambda m: m.startswith("gpt-")):
        found = _newest([model_id for model_id in speaking if wanted(model_id)])
        if found is not None:
            return found
    return None


# -- argument and file readers ---------------------------------------------------------------


def _option(args: Sequence[str], *names: str) -> str | None:
    """The value of the last ``--name VALUE`` / ``--name=VALUE`` before ``--``, else None
    (``""`` when the option ends the arguments)."""
    found: str | None = None
    for index, arg in enumerate(args):
        if arg == "--":
            break
        for name in names:
            if arg == name:
                found = args[index + 1] if index + 1 < len(args) else ""
            elif name.startswith("--") and arg.startswith(name + "="):
                found = arg[len(name) + 1 :]
    return found


def names_a_model(args: Sequence[str]) -> bool:
    """Whether Codex CLI arguments choose the model themselves (``-m``, ``--model``,
    ``-c model=…``, or a ``--profile``/``-p`` that may)."""
    return _codex_model_named(args) is not None or _option(args, "-p", "--profile") is not None


def _codex_settings(args: Sequence[str]) -> list[str]:
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


def _codex_model_named(args: Sequence[str]) -> str | None:
    named = _option(args, "-m", "--model")
    for setting in _codex_settings(args):
        if _MODEL_SETTING.match(setting):
            named = setting.partition("=")[2].strip().strip("\"'")
    return named


def _codex_sets(args: Sequence[str], key: str) -> bool:
    pattern = re.compile(rf"\s*{re.escape(key)}\s*=")
    return any(pattern.match(setting) for setting in _codex_settings(args))


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (opencode's ``.jsonc``) made plain JSON."""
    out: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < size and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = size if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = size if close < 0 else close + 2
        else:
            out.append(char)
            index += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(strip_jsonc(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in, object by object; ``over`` wins elsewhere."""
    merged: dict[str, Any] = dict(base)
    for key, value in over.items():
        kept = merged.get(key)
        if isinstance(kept, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(kept, value)
        else:
            merged[key] = value
    return merged


def _without_set(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """``ours`` less every leaf ``theirs`` sets (objects are pruned key by key)."""
    kept: dict[str, Any] = {}
    for key, value in ours.items():
        if key not in theirs:
            kept[key] = value
        elif isinstance(value, Mapping) and isinstance(theirs[key], Mapping):
            inner = _without_set(value, theirs[key])
            if inner:
                kept[key] = inner
    return kept


def _upward(start: Path, names: Sequence[str]) -> list[Path]:
    """Each of ``names`` in ``start`` and every folder above it, nearest first."""
    found: list[Path] = []
    for folder in (start, *start.parents):
        found += [folder / name for name in names if (folder / name).is_file()]
    return found


def _unset(request: Request, *names: str) -> bool:
    return all(name not in request.env for name in names)


def _unknown(facts: Facts, what: str) -> str:
    return f"{what}: {facts.missing or 'no Chat Completions model on this account'}"


# -- the profiles ----------------------------------------------------------------------------


def _claude(request: Request) -> Setup:
    env: dict[str, str] = {}
    notes: list[str] = []
    if _unset(request, "CLAUDE_CODE_ATTRIBUTION_HEADER"):
        # The billing header Claude Code puts first in `system` changes with every prompt,
        # so nothing the gateway relays could be cached; 0 leaves it out.
        env["CLAUDE_CODE_ATTRIBUTION_HEADER"] = "0"
    if _unset(request, "CLAUDE_CODE_AUTO_COMPACT_WINDOW"):
        name = (
            request.env.get("ANTHROPIC_MODEL")
            or _option(request.args, "--model")
            or CLAUDE_DEFAULT_MODEL
        )
        model = request.facts.resolve(name, ApiProtocol.ANTHROPIC_MESSAGES)
        limit = prompt_limit(model) if model is not None else None
        if limit is not None:
            env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(limit)
        else:
            notes.append(
                f"Claude Code's compaction window not set: {request.facts.missing}"
                if request.facts.missing
                else f"Claude Code's compaction window not set: no model serves {name!r}"
            )
    return Setup(env=env, args=request.args, notes=tuple(notes))


def _codex(request: Request) -> Setup:
    args, facts = request.args, request.facts
    table = f"model_providers.{PROVIDER}"
    overrides = [
        f'{table}.name="copilot-host"',
        f'{table}.base_url="{request.base_url}"',
        f'{table}.wire_api="responses"',
        f'{table}.env_key="COPILOT_HOST_API_KEY"',
        f'model_provider="{PROVIDER}"',
    ]
    notes: list[str] = []
    aliases: dict[str, str] = {}
    named = _codex_model_named(args)
    listed = [
        (m.model_id, ["/v1/responses"] if ApiProtocol.OPENAI_RESPONSES in m.protocols else [])
        for m in facts.models
    ]
    chosen = named
    if not names_a_model(args):
        bundled = CODEX_BUNDLED if CODEX_CUSTOM_TOOLS_SERVED else ()
        chosen = codex_model(listed, facts.default, bundled)
        if chosen is not None:
            overrides.append(f'model="{chosen}"')
    model = facts.resolve(chosen, ApiProtocol.OPENAI_RESPONSES) if chosen else None
    if model is not None:
        # Codex sends its review requests to this name, which no account has.
        aliases[CODEX_REVIEW_MODEL] = model.model_id
        limit = prompt_limit(model)
        if model.context_window is not None and not _codex_sets(args, "model_context_window"):
            overrides.append(f"model_context_window={model.context_window}")
        if limit is not None and not _codex_sets(args, "model_auto_compact_token_limit"):
            overrides.append(f"model_auto_compact_token_limit={int(limit * CODEX_COMPACT_SHARE)}")
    elif facts.missing or not facts.models:
        notes.append(_unknown(facts, "Codex's model and limits not set"))
    added: list[str] = []
    for override in overrides:
        added += ["-c", override]
    return Setup(args=(*added, *args), aliases=aliases, notes=tuple(notes))


def _opencode_files(request: Request) -> dict[str, Any]:
    """What the user's own opencode files set, merged in opencode's order (1.18.33's
    bundle: the global config, ``OPENCODE_CONFIG``, the project's files from the root
    down, then ``.opencode`` folders)."""
    env = request.env
    config_home = Path(env.get("XDG_CONFIG_HOME") or request.home / ".config")
    files = [
        config_home / "opencode" / n for n in ("config.json", "opencode.json", "opencode.jsonc")
    ]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(env["OPENCODE_CONFIG"]))
    if not env.get("OPENCODE_DISABLE_PROJECT_CONFIG"):
        files += reversed(_upward(request.cwd, ("opencode.jsonc", "opencode.json")))
        files += reversed(
            _upward(request.cwd, (".opencode/opencode.jsonc", ".opencode/opencode.json"))
        )
    files += [request.home / ".opencode" / n for n in ("opencode.jsonc", "opencode.json")]
    if env.get("OPENCODE_CONFIG_DIR"):
        files += [Path(env["OPENCODE_CONFIG_DIR"]) / n for n in ("opencode.jsonc", "opencode.json")]
    merged: dict[str, Any] = {}
    for path in files:
        value = _read_json(path) if path.is_file() else None
        if value is not None:
            merged = deep_merge(merged, value)
    return merged


def _opencode(request: Request) -> Setup:
    facts = request.facts
    chat = _chat(facts)
    notes: list[str] = []
    ours: dict[str, Any] = {}
    if chat:
        models: dict[str, Any] = {}
        for model in chat:
            entry: dict[str, Any] = {"name": model.display_name}
            context, output = prompt_limit(model), model.max_output_tokens
            # opencode's schema needs both; it compacts when a prompt nears limit.context
            # (less the output) and asks for at most limit.output.
            if context is not None and output is not None:
                entry["limit"] = {"context": context, "output": output}
            models[model.model_id] = entry
        ours["provider"] = {
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
        default = default_chat_model(facts)
        if default is not None and _option(request.args, "-m", "--model") is None:
            ours["model"] = f"{PROVIDER}/{default.model_id}"
    else:
        notes.append(_unknown(facts, "opencode's provider not set"))
    theirs_text = request.env.get("OPENCODE_CONFIG_CONTENT")
    theirs: dict[str, Any] = {}
    if theirs_text is not None:
        try:
            parsed = json.loads(strip_jsonc(theirs_text))
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            notes.append("OPENCODE_CONFIG_CONTENT left as it is: it is not a JSON object")
            return Setup(args=request.args, notes=tuple(notes))
        theirs = parsed
    # opencode merges OPENCODE_CONFIG_CONTENT over the user's files; ours gives way to both.
    content = deep_merge(_without_set(ours, deep_merge(_opencode_files(request), theirs)), theirs)
    env = {"OPENCODE_CONFIG_CONTENT": json.dumps(content, separators=(",", ":"))} if content else {}
    return Setup(env=env, args=request.args, notes=tuple(notes))


_AIDER_SETTING = {"--model": "model", "--weak-model": "weak-model"}


def _aider_sets(request: Request, option: str) -> bool:
    """Whether the arguments, the environment, or a file aider reads (``.aider.conf.yml``
    and ``.env`` in the home folder, the git root and the current folder, or ``--config``
    / ``--env-file``) set ``option``."""
    if _option(request.args, option) is not None:
        return True
    key = _AIDER_SETTING[option]
    variable = "AIDER_" + key.upper().replace("-", "_")
    if variable in request.env:
        return True
    folders = [request.home, *_git_root(request.cwd), request.cwd]
    configs = [f / ".aider.conf.yml" for f in folders]
    envs = [f / ".env" for f in folders]
    named = _option(request.args, "-c", "--config")
    if named:
        configs = [request.cwd / named]
    env_file = _option(request.args, "--env-file")
    if env_file:
        envs.append(request.cwd / env_file)
    yaml_key = re.compile(rf"^\s*{re.escape(key)}\s*:", re.MULTILINE)
    env_key = re.compile(rf"^\s*(?:export\s+)?{variable}\s*=", re.MULTILINE)
    return any(_text_matches(p, yaml_key) for p in configs) or any(
        _text_matches(p, env_key) for p in envs
    )


def _git_root(start: Path) -> list[Path]:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return [folder]
    return []


def _text_matches(path: Path, pattern: re.Pattern[str]) -> bool:
    try:
        return pattern.search(path.read_text(encoding="utf-8")) is not None
    except (OSError, UnicodeDecodeError):
        return False


def _aider(request: Request) -> Setup:
    facts = request.facts
    added: list[str] = []
    notes: list[str] = []
    picks = (("--model", default_chat_model(facts)), ("--weak-model", cheapest_chat_model(facts)))
    for option, model in picks:
        if _aider_sets(request, option):
            continue
        if model is None:
            notes.append(_unknown(facts, f"aider's {option} not set"))
            continue
        # litellm's OpenAI provider, at OPENAI_API_BASE.
        added += [option, f"openai/{model.model_id}"]
    return Setup(args=(*added, *request.args), notes=tuple(dict.fromkeys(notes)))


def _copilot(request: Request) -> Setup:
    env: dict[str, str] = {}
    notes: list[str] = []
    wanted = {
        "COPILOT_PROVIDER_BASE_URL": request.base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        # No GitHub sign-in, no telemetry: the gateway is its only service.
        "COPILOT_OFFLINE": "true",
    }
    env.update({name: value for name, value in wanted.items() if _unset(request, name)})
    # The key only ever in the environment, set by run.
    key_env = ("COPILOT_PROVIDER_API_KEY",) if _unset(request, "COPILOT_PROVIDER_API_KEY") else ()
    if _unset(request, "COPILOT_MODEL") and _option(request.args, "--model") is None:
        model = default_chat_model(request.facts)
        if model is not None:
            env["COPILOT_MODEL"] = model.model_id
        else:
            notes.append(_unknown(request.facts, "COPILOT_MODEL not set"))
    return Setup(env=env, args=request.args, key_env=key_env, notes=tuple(notes))


PROFILES: dict[str, Profile] = {
    profile.program: profile
    for profile in (
        Profile(
            "claude",
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW (the prompt limit of the model serving "
            "ANTHROPIC_MODEL, --model, else Claude Code's default name) and "
            "CLAUDE_CODE_ATTRIBUTION_HEADER=0",
            (
                "Claude Code 2.1.332: CLAUDE_CODE_AUTO_COMPACT_WINDOW sets /context's "
                "'Auto-compact window' (issue 26, verified)",
                f"its default main model name: {CLAUDE_DEFAULT_MODEL} (its bundle)",
            ),
            (
                ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "the variable set by the user"),
                ("CLAUDE_CODE_ATTRIBUTION_HEADER", "the variable set by the user"),
                ("the model sized", "ANTHROPIC_MODEL, then --model, then the default name"),
            ),
            _claude,
        ),
        Profile(
            "codex",
            "-c overrides defining a provider at the gateway (wire_api responses, key from "
            "COPILOT_HOST_API_KEY), a model unless the arguments name one, its "
            "model_context_window and model_auto_compact_token_limit (90% of the prompt "
            "limit), and the alias codex-auto-review for that model",
            (
                "Codex CLI 0.171.0: -c key=value overrides; model_providers.<id> "
                "(name, base_url, wire_api, env_key)",
                "model_max_output_tokens is left out: Codex 0.171.0 warns "
                "'`model_max_output_tokens` is ignored'",
            ),
            (
                ("model", "-m/--model, -c model=…, --profile/-p"),
                ("model_context_window", "-c model_context_window=…"),
                ("model_auto_compact_token_limit", "-c model_auto_compact_token_limit=…"),
                ("codex-auto-review", "--model-alias codex-auto-review=…"),
            ),
            _codex,
        ),
        Profile(
            "opencode",
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
            _opencode,
        ),
        Profile(
            "aider",
            "--model openai/<default chat model> and --weak-model openai/<the chat model "
            "with the lowest output price, else multiplier>",
            (
                "aider 0.86.2: --model, --weak-model; AIDER_* variables; .aider.conf.yml and "
                ".env in the home folder, the git root and the current folder",
            ),
            (
                (
                    "--model",
                    "--model, AIDER_MODEL, model: in .aider.conf.yml or --config, "
                    "AIDER_MODEL in .env",
                ),
                (
                    "--weak-model",
                    "--weak-model, AIDER_WEAK_MODEL, weak-model: in "
                    ".aider.conf.yml or --config, AIDER_WEAK_MODEL in .env",
                ),
            ),
            _aider,
        ),
        Profile(
            "copilot",
            "COPILOT_PROVIDER_BASE_URL (the /v1 URL), COPILOT_PROVIDER_TYPE=openai, "
            "COPILOT_PROVIDER_API_KEY, COPILOT_OFFLINE=true and COPILOT_MODEL (the default "
            "chat model): the Copilot CLI's own bring-your-own-key mode",
            ("Copilot CLI 1.0.102: COPILOT_PROVIDER_* and COPILOT_OFFLINE (issue 26, verified)",),
            (
                ("each COPILOT_PROVIDER_*, COPILOT_OFFLINE", "the variable set by the user"),
                ("COPILOT_MODEL", "the variable, --model"),
            ),
            _copilot,
        ),
    )
}


def profile_for(command: str) -> Profile | None:
    """The profile of a command, by its file name (``/usr/bin/codex`` is ``codex``)."""
    return PROFILES.get(PurePath(command).name)


def home_of(env: Mapping[str, str]) -> Path:
    """The home folder agents read their files from."""
    return Path(env.get("HOME") or os.path.expanduser("~"))
