"""aider (PyPI ``aider-chat``): what the gateway knows of it.

It goes through litellm, which reads ``OPENAI_API_BASE`` (not ``OPENAI_BASE_URL``) for
``openai/<model>`` names; the profile gives it a main and a weak model unless the user set
them: on the command line, in ``AIDER_*`` variables, or in the files aider reads
(``.aider.conf.yml`` and ``.env`` in the home folder, the git root and the current folder,
or those named by ``--config``/``--env-file``). Those files are read safely
(:mod:`._configs`); one that was skipped could have set either model, so then neither is
added. Its requests are litellm's OpenAI SDK's (``User-Agent: OpenAI/Python …``), which the
gateway cannot tell from another program's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ._configs import Skipped, git_root, read_text
from ._profile import (
    Agent,
    BudgetStop,
    Profile,
    Request,
    Setup,
    cheapest_chat_model,
    default_chat_model,
    option,
    unknown,
)

__all__ = ["AGENT", "AIDER_KNOWN"]

# The OpenAI chat models aider 0.86.2 knows the context window of (the cost map of the
# litellm 1.81.10 it pins, `litellm_provider: openai`, less fine-tunes, audio, realtime and
# search variants): for any other `openai/<id>` it warns at start "Unknown context window
# size and costs, using sane defaults" (measured).
AIDER_KNOWN = frozenset(
    {
        "chatgpt-4o-latest",
        *("gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-0613", "gpt-3.5-turbo-1106"),
        *("gpt-3.5-turbo-16k", "gpt-4", "gpt-4-0125-preview", "gpt-4-0613"),
        *("gpt-4-1106-preview", "gpt-4-32k", "gpt-4-turbo", "gpt-4-turbo-2024-04-09"),
        *("gpt-4-turbo-preview", "gpt-4.1", "gpt-4.1-2025-04-14", "gpt-4.1-mini"),
        *("gpt-4.1-mini-2025-04-14", "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14"),
        *("gpt-4.5-preview", "gpt-4o", "gpt-4o-2024-05-13", "gpt-4o-2024-08-06"),
        *("gpt-4o-2024-11-20", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-5"),
        *("gpt-5-2025-08-07", "gpt-5-chat", "gpt-5-chat-latest", "gpt-5-mini"),
        *("gpt-5-mini-2025-08-07", "gpt-5-nano", "gpt-5-nano-2025-08-07", "gpt-5.1"),
        *("gpt-5.1-2025-11-13", "gpt-5.1-chat-latest", "gpt-5.2", "gpt-5.2-2025-12-11"),
        *("gpt-5.2-chat-latest", "o1", "o1-2024-12-17", "o1-mini", "o1-preview", "o3"),
        *("o3-2025-04-16", "o3-mini", "o3-mini-2025-01-31", "o4-mini", "o4-mini-2025-04-16"),
    }
)

_SETTING = {"--model": "model", "--weak-model": "weak-model"}


def _identify(_headers: Mapping[bytes, bytes]) -> bool:
    return False  # litellm's requests carry nothing of aider's own


def _files(request: Request) -> tuple[list[Path], list[Path]]:
    """The YAML configuration files and the ``.env`` files aider reads."""
    folders = [request.home, *git_root(request.cwd), request.cwd]
    configs = [folder / ".aider.conf.yml" for folder in folders]
    envs = [folder / ".env" for folder in folders]
    named = option(request.args, "-c", "--config")
    if named:
        configs = [request.cwd / named]
    env_file = option(request.args, "--env-file")
    if env_file:
        envs.append(request.cwd / env_file)
    return configs, envs


def _sets(
    request: Request, setting: str, texts: Mapping[Path, str], configs: list[Path], envs: list[Path]
) -> bool:
    """Whether the arguments, the environment, or a file aider reads set ``setting``."""
    if option(request.args, setting) is not None:
        return True
    key = _SETTING[setting]
    variable = "AIDER_" + key.upper().replace("-", "_")
    if variable in request.env:
        return True
    yaml_key = re.compile(rf"^\s*{re.escape(key)}\s*:", re.MULTILINE)
    env_key = re.compile(rf"^\s*(?:export\s+)?{variable}\s*=", re.MULTILINE)
    return any(yaml_key.search(texts.get(p, "")) for p in configs) or any(
        env_key.search(texts.get(p, "")) for p in envs
    )


def _build(request: Request) -> Setup:
    facts = request.facts
    configs, envs = _files(request)
    texts: dict[Path, str] = {}
    skipped: list[Skipped] = []
    for path in dict.fromkeys([*configs, *envs]):
        text = read_text(path)
        if isinstance(text, Skipped):
            skipped.append(text)
        elif text is not None:
            texts[path] = text
    added: list[str] = []
    notes: list[str] = []
    # The weak model: the cheapest aider knows the window of (no warning at start).
    weak = cheapest_chat_model(facts, AIDER_KNOWN.__contains__)
    picks = (("--model", default_chat_model(facts)), ("--weak-model", weak))
    for setting, model in picks:
        if skipped:
            notes += [f"aider's {setting} not set: {file.note()}" for file in skipped]
            continue
        if _sets(request, setting, texts, configs, envs):
            continue
        if model is None:
            notes.append(unknown(facts, f"aider's {setting} not set"))
            continue
        # litellm's OpenAI provider, at OPENAI_API_BASE.
        added += [setting, f"openai/{model.model_id}"]
    return Setup(args=(*added, *request.args), notes=tuple(dict.fromkeys(notes)))


AGENT = Agent(
    name="aider",
    programs=("aider",),
    identify=_identify,
    quirks=("max_tokens",),
    profile=Profile(
        "--model openai/<default chat model> and --weak-model openai/<the chat model "
        "aider knows the window of with the lowest output price, else multiplier>",
        (
            "aider 0.86.2: --model, --weak-model; AIDER_* variables; .aider.conf.yml and "
            ".env in the home folder, the git root and the current folder",
        ),
        (
            (
                "--model",
                "--model, AIDER_MODEL, model: in .aider.conf.yml or --config, AIDER_MODEL in .env",
            ),
            (
                "--weak-model",
                "--weak-model, AIDER_WEAK_MODEL, weak-model: in "
                ".aider.conf.yml or --config, AIDER_WEAK_MODEL in .env",
            ),
        ),
        _build,
    ),
    budget=BudgetStop(
        400,
        "aider 0.86.2 (aider/exceptions.py): litellm's APIError for 402 and 403 and its "
        "RateLimitError are retried for 60 s, a BadRequestError (400) is not: one request, "
        "the message shown (measured in a loopback namespace)",
    ),
)
