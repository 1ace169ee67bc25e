"""What an agent module declares, and the model choices several agents share.

An :class:`Agent` is one coding agent as the gateway knows it: the name it is recorded
under (a closed vocabulary, :data:`copilot_host.gateway._agents.NAMES`), the commands that
start it, how its requests are told from others', the changes of the gateway's table that
exist for shapes it sends (``quirks``), and its :class:`Profile`: what ``copilot-host run``
adds to its environment and arguments so that it works against the gateway with no setup.

A profile is declarative: what it adds, where that is documented (``sources``), a precedence
table (for each setting, what the user may set that wins), and ``build``. Rules every
profile keeps:

* a variable or argument the user set is never changed; what the user set wins;
* the key is never on a command line or in a file: profiles name it by reference
  (``COPILOT_HOST_API_KEY``, ``{env:COPILOT_HOST_API_KEY}``) or put it in the environment;
* what cannot be known (no login, no model for an API, a failed registration, a
  configuration file that could not be read) is left out, and :class:`Setup` says why in
  ``notes``, which ``run`` prints in its one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import copilot_host as ch

from .._protocols import CHAT, Api

__all__ = [
    "Agent",
    "BudgetStop",
    "Facts",
    "PAYMENT_REQUIRED",
    "Profile",
    "Request",
    "Setup",
    "cheapest",
    "cheapest_chat_model",
    "default_chat_model",
    "newest",
    "option",
    "prompt_limit",
    "unknown",
    "unset",
]


@dataclass(frozen=True)
class Facts:
    """What the gateway's catalog says at start. ``models`` in the inventory's order (empty
    when nothing is known); ``resolve(name, api)`` is the model the gateway serves ``name``
    with on that API's endpoint (its naming rules; None: any endpoint), None for none;
    ``default`` is ``--default-model``; ``missing`` says why nothing is known (None when
    it is)."""

    models: tuple[ch.ModelSpec, ...] = ()
    resolve: Callable[[str, Api | None], ch.ModelSpec | None] = lambda _n, _a: None
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
    """What ``run`` adds for one agent: ``adds`` (README's wording), ``sources`` (where the
    agent documents or implements what is used), ``precedence`` ((setting, what of the
    user's wins over it) rows), and ``build``."""

    adds: str
    sources: tuple[str, ...]
    precedence: tuple[tuple[str, str], ...]
    build: Callable[[Request], Setup]


@dataclass(frozen=True)
class BudgetStop:
    """The status a spent budget's refusal takes for one agent: the one the real agent
    stops on at once (one request, no retry) showing the message, and the evidence."""

    status: int
    evidence: str


# What an agent the gateway cannot name gets: HTTP's own status for it, on which the
# stainless SDKs (OpenAI's, Anthropic's) and the agents built on them do not retry.
PAYMENT_REQUIRED = BudgetStop(
    402,
    "the openai and anthropic SDKs (Python and JavaScript) retry 408, 409, 429 and 5xx, "
    "not 402 (a 402 answered once each in tests/gateway/test_spend.py)",
)


@dataclass(frozen=True)
class Agent:
    """One coding agent (see the module docstring). ``identify`` tells its requests from
    their headers (lower-case names, as sent), ``quirks`` names the gateway's changes that
    exist for shapes it sends, ``budget`` the status a spent budget is refused with."""

    name: str
    programs: tuple[str, ...]
    identify: Callable[[Mapping[bytes, bytes]], bool]
    quirks: tuple[str, ...]
    profile: Profile
    budget: BudgetStop = PAYMENT_REQUIRED


# -- model choice ----------------------------------------------------------------------------


def _numbers(model_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", model_id))


def newest(ids: Sequence[str]) -> str | None:
    """The newest id (the numbers in it, as a tuple; among equals the first listed)."""
    if not ids:
        return None
    return max(ids, key=lambda m: (_numbers(m), -ids.index(m)))


def chat_models(facts: Facts) -> list[ch.ModelSpec]:
    return [model for model in facts.models if CHAT.speaks(model)]


def default_chat_model(facts: Facts) -> ch.ModelSpec | None:
    """``--default-model`` if given, else the inventory's ``is_chat_default`` model if it
    serves Chat Completions, else the newest ``gpt-`` model that does."""
    by_id = {m.model_id: m for m in facts.models}
    if facts.default is not None and facts.default in by_id:
        return by_id[facts.default]
    chat = chat_models(facts)
    for model in chat:
        if model.chat_default:
            return model
    found = newest([m.model_id for m in chat if m.model_id.startswith("gpt-")])
    return by_id.get(found) if found is not None else None


def cheapest_chat_model(
    facts: Facts, among: Callable[[str], bool] = lambda _id: True
) -> ch.ModelSpec | None:
    """The Chat Completions model (of those whose id ``among`` takes) with the lowest
    output price, else the lowest multiplier (among equals, the inventory's first); else
    the default chat model."""
    found = cheapest([model for model in chat_models(facts) if among(model.model_id)])
    return found if found is not None else default_chat_model(facts)


def cheapest(models: Sequence[ch.ModelSpec]) -> ch.ModelSpec | None:
    """Of ``models``, the one with the lowest output price, else the lowest multiplier
    (among equals, the first); None when none has either."""

    def output_price(m: ch.ModelSpec) -> float | None:
        prices = m.billing.prices if m.billing is not None else None
        return prices.per_million(prices.output) if prices is not None else None

    def multiplier(m: ch.ModelSpec) -> float | None:
        return m.billing.multiplier if m.billing is not None else None

    for measure in (output_price, multiplier):
        priced = [
            (value, index, m) for index, m in enumerate(models) if (value := measure(m)) is not None
        ]
        if priced:
            return min(priced, key=lambda entry: (entry[0], entry[1]))[2]
    return None


def prompt_limit(model: ch.ModelSpec) -> int | None:
    """The largest prompt the service takes: ``max_prompt_tokens``, else the window."""
    return model.max_prompt_tokens or model.context_window


# -- arguments and notes ---------------------------------------------------------------------


def option(args: Sequence[str], *names: str) -> str | None:
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


def unset(request: Request, *names: str) -> bool:
    return all(name not in request.env for name in names)


def unknown(facts: Facts, what: str) -> str:
    return f"{what}: {facts.missing or 'no Chat Completions model on this account'}"
