"""GitHub's Copilot CLI (npm ``@github/copilot``): what the gateway knows of it.

Its bring-your-own-key mode runs it on any OpenAI-compatible server:
``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE=openai`` (Chat Completions on that base
URL, or Responses with ``COPILOT_PROVIDER_WIRE_API=responses``), ``COPILOT_PROVIDER_API_KEY``,
``COPILOT_OFFLINE=true`` (no GitHub sign-in, no telemetry), ``COPILOT_MODEL`` and the model's
limits (``COPILOT_PROVIDER_MAX_PROMPT_TOKENS``, ``COPILOT_PROVIDER_MAX_OUTPUT_TOKENS``). Its
requests carry the OpenAI SDK's ``User-Agent`` (``OpenAI/JS …``) with the Copilot headers
``x-initiator`` and ``x-interaction-type``, by which the gateway tells them from a plain
SDK's.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._protocols import RESPONSES
from ._profile import (
    Agent,
    BudgetStop,
    Profile,
    Request,
    Setup,
    default_chat_model,
    option,
    prompt_limit,
    unknown,
    unset,
)

__all__ = ["AGENT"]


def _identify(headers: Mapping[bytes, bytes]) -> bool:
    return b"x-interaction-type" in headers


def _build(request: Request) -> Setup:
    env: dict[str, str] = {}
    notes: list[str] = []
    wanted = {
        "COPILOT_PROVIDER_BASE_URL": request.base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        # No GitHub sign-in, no telemetry: the gateway is its only service.
        "COPILOT_OFFLINE": "true",
    }
    env.update({name: value for name, value in wanted.items() if unset(request, name)})
    # The key only ever in the environment, set by run.
    key_env = ("COPILOT_PROVIDER_API_KEY",) if unset(request, "COPILOT_PROVIDER_API_KEY") else ()
    facts = request.facts
    named = option(request.args, "--model") or request.env.get("COPILOT_MODEL")
    model = facts.resolve(named, None) if named else default_chat_model(facts)
    if not named:
        if model is not None:
            env["COPILOT_MODEL"] = model.model_id
        else:
            notes.append(unknown(facts, "COPILOT_MODEL not set"))
    if model is not None:
        openai = request.env.get("COPILOT_PROVIDER_TYPE", "openai") == "openai"
        limits = {
            # As VS Code does: a model that speaks Responses is spoken to on Responses.
            "COPILOT_PROVIDER_WIRE_API": "responses"
            if openai and RESPONSES.speaks(model)
            else None,
            "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": prompt_limit(model),
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS": model.max_output_tokens,
        }
        env.update({k: str(v) for k, v in limits.items() if v is not None and unset(request, k)})
    return Setup(env=env, args=request.args, key_env=key_env, notes=tuple(notes))


AGENT = Agent(
    name="copilot-cli",
    programs=("copilot",),
    identify=_identify,
    quirks=("max_tokens",),
    profile=Profile(
        "COPILOT_PROVIDER_BASE_URL (the /v1 URL), COPILOT_PROVIDER_TYPE=openai, "
        "COPILOT_PROVIDER_API_KEY, COPILOT_OFFLINE=true, COPILOT_MODEL (the default "
        "chat model), COPILOT_PROVIDER_WIRE_API=responses when that model (or the one "
        "--model or COPILOT_MODEL names) speaks Responses, and its "
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS and COPILOT_PROVIDER_MAX_OUTPUT_TOKENS: the "
        "Copilot CLI's own bring-your-own-key mode",
        (
            "Copilot CLI 1.0.102: COPILOT_PROVIDER_* and COPILOT_OFFLINE (verified with the "
            "real agent: tests/agents)",
            "Copilot CLI 1.0.102 `copilot help environment`: COPILOT_PROVIDER_WIRE_API "
            "('completions' or 'responses'; 'Use \"responses\" for GPT-5 series models'), "
            "COPILOT_PROVIDER_MAX_PROMPT_TOKENS and _MAX_OUTPUT_TOKENS ('Overrides both "
            "catalog and default values')",
        ),
        (
            ("each COPILOT_PROVIDER_*, COPILOT_OFFLINE", "the variable set by the user"),
            ("COPILOT_MODEL", "the variable, --model"),
        ),
        _build,
    ),
    budget=BudgetStop(
        402,
        "Copilot CLI 1.0.102: one request, then '402 <message>' and exit 1 (headless) or "
        "its prompt; a 403 is shown as its own 'Authentication failed' without the "
        "message, a 429 without x-should-retry is retried (measured in a loopback "
        "namespace; tests/agents)",
    ),
)
