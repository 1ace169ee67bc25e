"""Qwen Code (npm ``@qwen-code/qwen-code``): what the gateway knows of it.

It speaks OpenAI Chat Completions through the OpenAI SDK at ``OPENAI_BASE_URL`` with
``OPENAI_API_KEY`` (``run`` sets both). It picks its OpenAI-compatible auth type by itself,
headless and full-screen with no dialog, when those two and ``OPENAI_MODEL`` are set
(0.24.4: ``getAuthTypeFromEnv``); without a model it would ask the gateway for its own
default, ``qwen3.7-max``. ``QWEN_CODE_MAX_OUTPUT_TOKENS`` sets its ``max_tokens`` (else
32000 for a model it does not know). Its requests carry ``User-Agent: QwenCode/<version>
(<platform>; <arch>)``.
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
    return headers.get(b"user-agent", b"").startswith(b"QwenCode/")


def _build(request: Request) -> Setup:
    env: dict[str, str] = {}
    notes: list[str] = []
    facts = request.facts
    named = option(request.args, "-m", "--model") or request.env.get("OPENAI_MODEL")
    default = default_chat_model(facts)
    if unset(request, "OPENAI_MODEL"):
        if default is not None:
            # Also what makes Qwen Code choose its OpenAI auth type with no dialog.
            env["OPENAI_MODEL"] = default.model_id
        else:
            notes.append(unknown(facts, "OPENAI_MODEL not set for Qwen Code"))
    model = facts.resolve(named, None) if named else default
    limit = model.max_output_tokens if model is not None else None
    if unset(request, "QWEN_CODE_MAX_OUTPUT_TOKENS") and limit is not None:
        env["QWEN_CODE_MAX_OUTPUT_TOKENS"] = str(limit)
    if unset(request, "QWEN_USAGE_STATISTICS_ENABLED"):
        # Its usage statistics would go to Alibaba's servers, not to the gateway.
        env["QWEN_USAGE_STATISTICS_ENABLED"] = "false"
    return Setup(env=env, args=request.args, notes=tuple(notes))


AGENT = Agent(
    name="qwen-code",
    programs=("qwen",),
    identify=_identify,
    quirks=("max_tokens",),
    profile=Profile(
        "OPENAI_MODEL (the default chat model; with it Qwen Code chooses its OpenAI "
        "auth type itself, headless and full-screen), QWEN_CODE_MAX_OUTPUT_TOKENS (that "
        "model's output limit, or the one -m/--model names) and "
        "QWEN_USAGE_STATISTICS_ENABLED=false",
        (
            "Qwen Code 0.24.4: getAuthTypeFromEnv (OPENAI_API_KEY, OPENAI_BASE_URL and "
            "OPENAI_MODEL select the openai auth type), applyOutputTokenLimit "
            "(QWEN_CODE_MAX_OUTPUT_TOKENS), QWEN_USAGE_STATISTICS_ENABLED (verified with "
            "the real agent: tests/agents)",
            "its context window (model.generationConfig.contextWindowSize) and its "
            "per-turn memory request (memory.enableManagedAutoMemory) are settings only, "
            "in ~/.qwen/settings.json: left to the user",
        ),
        (
            ("OPENAI_MODEL", "the variable; -m/--model and settings model.name win in Qwen"),
            ("QWEN_CODE_MAX_OUTPUT_TOKENS", "the variable set by the user"),
            ("QWEN_USAGE_STATISTICS_ENABLED", "the variable set by the user"),
        ),
        _build,
    ),
    budget=BudgetStop(
        402,
        "Qwen Code 0.24.4: one request, then '[API Error: 402 <message>]' and exit 1 "
        "(headless) or its prompt; its retryWithBackoff retries 429 and 5xx whatever "
        "x-should-retry says (measured in a loopback namespace; tests/agents)",
    ),
)
