"""GitHub's Copilot CLI (npm ``@github/copilot``): what the gateway knows of it.

Its bring-your-own-key mode runs it on any OpenAI-compatible server:
``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE=openai`` (Chat Completions on that base
URL), ``COPILOT_PROVIDER_API_KEY``, ``COPILOT_OFFLINE=true`` (no GitHub sign-in, no telemetry)
and ``COPILOT_MODEL``. Its requests carry the OpenAI SDK's ``User-Agent`` (``OpenAI/JS …``)
with the Copilot headers ``x-initiator`` and ``x-interaction-type``, by which the gateway
tells them from a plain SDK's.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._profile import (
    Agent,
    BudgetStop,
    Profile,
    Request,
    Setup,
    default_chat_model,
    option,
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
    if unset(request, "COPILOT_MODEL") and option(request.args, "--model") is None:
        model = default_chat_model(request.facts)
        if model is not None:
            env["COPILOT_MODEL"] = model.model_id
        else:
            notes.append(unknown(request.facts, "COPILOT_MODEL not set"))
    return Setup(env=env, args=request.args, key_env=key_env, notes=tuple(notes))


AGENT = Agent(
    name="copilot-cli",
    programs=("copilot",),
    identify=_identify,
    quirks=("max_tokens",),
    profile=Profile(
        "COPILOT_PROVIDER_BASE_URL (the /v1 URL), COPILOT_PROVIDER_TYPE=openai, "
        "COPILOT_PROVIDER_API_KEY, COPILOT_OFFLINE=true and COPILOT_MODEL (the default "
        "chat model): the Copilot CLI's own bring-your-own-key mode",
        (
            "Copilot CLI 1.0.102: COPILOT_PROVIDER_* and COPILOT_OFFLINE (verified with the "
            "real agent: tests/agents)",
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
