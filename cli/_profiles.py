"""What ``copilot-host run`` adds for agents that take no base URL from the environment.

Most agents read ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` or ``ANTHROPIC_BASE_URL``/
``ANTHROPIC_AUTH_TOKEN``, which ``run`` sets for every command. A few do not; each gets a
profile here, chosen by the command's file name, and README lists every profile with what
it adds and how to give the same by hand (for ``npx`` or a wrapper script).

* ``codex`` (Codex CLI): its built-in provider ignores ``OPENAI_BASE_URL``; a provider
  defined with ``-c`` configuration overrides (``wire_api = "responses"``, the key read
  from ``COPILOT_HOST_API_KEY``) points it at the gateway without a file. Its default
  model is not one a Copilot account has, so when the arguments name none, ``run`` names
  one that speaks Responses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

__all__ = ["PROFILES", "Profile", "codex_model", "names_a_model", "profile_for"]

PROVIDER = "copilot-host"
_MODEL_SETTING = re.compile(r"\s*model\s*=")


@dataclass(frozen=True)
class Profile:
    """Extra arguments for one agent: ``arguments(args, base_url, model)`` returns the
    arguments the command runs with; ``model`` is called only when one must be chosen."""

    program: str
    adds: str
    arguments: Callable[[Sequence[str], str, Callable[[], str | None]], list[str]]


def names_a_model(args: Sequence[str]) -> bool:
    """Whether Codex CLI arguments choose the model themselves (``-m``, ``--model``,
    ``-c model=…``, or a ``--profile``/``-p`` that may)."""
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        if arg in ("-m", "--model", "-p", "--profile") or arg.startswith(
            ("--model=", "--profile=")
        ):
            return True
        if arg in ("-c", "--config"):
            setting = args[index + 1] if index + 1 < len(args) else ""
        elif arg.startswith("--config="):
            setting = arg[len("--config=") :]
        elif arg.startswith("-c"):
            setting = arg[2:]
        else:
            continue
        if _MODEL_SETTING.match(setting):
            return True
    return False


def _codex(args: Sequence[str], base_url: str, model: Callable[[], str | None]) -> list[str]:
    table = f"model_providers.{PROVIDER}"
    overrides = [
        f'{table}.name="copilot-host"',
        f'{table}.base_url="{base_url}"',
        f'{table}.wire_api="responses"',
        f'{table}.env_key="COPILOT_HOST_API_KEY"',
        f'model_provider="{PROVIDER}"',
    ]
    if not names_a_model(args):
        chosen = model()
        if chosen is not None:
            overrides.append(f'model="{chosen}"')
    added: list[str] = []
    for override in overrides:
        added += ["-c", override]
    return [*added, *args]


PROFILES: dict[str, Profile] = {
    "codex": Profile(
        "codex",
        "-c overrides defining a provider at the gateway (wire_api responses, key from "
        "COPILOT_HOST_API_KEY) and, unless the arguments name one, a model",
        _codex,
    ),
}


def profile_for(command: str) -> Profile | None:
    """The profile of a command, by its file name (``/usr/bin/codex`` is ``codex``)."""
    return PROFILES.get(PurePath(command).name)


def _numbers(model_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", model_id))


def codex_model(models: Sequence[tuple[str, Sequence[str]]], default: str | None) -> str | None:
    """The model Codex CLI gets when its arguments name none: ``default`` when given, else
    the newest id containing ``codex`` that speaks Responses, else the newest ``gpt-`` one
    (newest: the numbers in the id, compared as a tuple; among equals the first listed).
    ``models`` is (id, endpoints) of what ``GET /v1/models`` lists, in the inventory's
    order (the listing itself is by id), so the inventory decides among equals."""
    if default is not None:
        return default
    speaking = [model_id for model_id, endpoints in models if "/v1/responses" in endpoints]
    for wanted in (lambda m: "codex" in m, lambda m: m.startswith("gpt-")):
        found = [model_id for model_id in speaking if wanted(model_id)]
        if found:
            return max(found, key=lambda m: (_numbers(m), -found.index(m)))
    return None
