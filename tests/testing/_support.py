"""Helpers for the emulator's own tests: a Copilot session and the headers clients send."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai

from copilot_host.testing import GitHubEmulator

EXCHANGE = "https://api.github.com/copilot_internal/v2/token"
# The editor headers VS Code Copilot Chat sends on every Copilot API request.
EDITOR = {
    "Editor-Version": "vscode/1.104.1",
    "Editor-Plugin-Version": "copilot-chat/0.31.0",
    "Copilot-Integration-Id": "vscode-chat",
    "X-GitHub-Api-Version": "2025-05-01",
}
PLAIN = "text/plain; charset=utf-8"
# JSON for the wire, as an application sends it (the SDKs' TypedDicts would demand
# fields such as the Responses API's "strict", which real clients omit).
TOOL: dict[str, Any] = {
    "chat": {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
    "responses": {"type": "function", "name": "get_weather", "parameters": {}},
    "messages": {"name": "get_weather", "input_schema": {"type": "object"}},
}
PATH = {"chat": "/chat/completions", "responses": "/responses", "messages": "/v1/messages"}


def session(emu: GitHubEmulator, client: httpx2.Client) -> tuple[str, str]:
    """Exchange the emulator's GitHub token: (the API origin, the session token)."""
    answer = client.get(EXCHANGE, headers={"Authorization": f"token {emu.github_token}"})
    answer.raise_for_status()
    value = answer.json()
    return value["endpoints"]["api"], value["token"]


def copilot(emu: GitHubEmulator, client: httpx2.Client) -> tuple[str, dict[str, str]]:
    """(the API origin, every header a compliant client sends, bearer included)."""
    origin, token = session(emu, client)
    return origin, {"Authorization": f"Bearer {token}", **EDITOR}


def body(protocol: str, model: str, text: str = "hi", **more: Any) -> dict[str, Any]:
    """The smallest request of ``protocol`` whose last input item is the person's ``text``."""
    if protocol == "responses":
        return {"model": model, "input": text, **more}
    value: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": text}]}
    if protocol == "messages":
        value["max_tokens"] = 64
    return {**value, **more}


def sse(lines: Iterator[str]) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of a Server-Sent Events stream."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif line == "" and data:
            events.append((name, "\n".join(data)))
            name, data = None, []
    if data:
        events.append((name, "\n".join(data)))
    return events


def payloads(events: list[tuple[str | None, str]]) -> list[Any]:
    return [json.loads(data) for _, data in events if data != "[DONE]"]


# A Copilot session at the emulator, as the SDK fixtures take it: (origin, token, client).
Copilot = tuple[str, str, httpx2.Client]


def openai_sdk(copilot: Copilot, *, strict: bool = True) -> openai.OpenAI:
    """The OpenAI SDK on the emulator with the editor headers; ``strict=False`` is its
    default, lenient parsing, as applications use it (Copilot's first chat chunk, Azure's
    prompt-filter results, has an empty ``object`` that strict parsing refuses)."""
    origin, token, http = copilot
    return openai.OpenAI(
        base_url=origin,
        api_key=token,  # becomes the Bearer header
        default_headers=EDITOR,
        http_client=http,
        max_retries=0,
        _strict_response_validation=strict,
    )


def anthropic_sdk(copilot: Copilot) -> anthropic.Anthropic:
    """The Anthropic SDK on the emulator, its response validation strict."""
    origin, token, http = copilot
    return anthropic.Anthropic(
        base_url=origin,
        auth_token=token,
        default_headers=EDITOR,
        http_client=http,
        max_retries=0,
        _strict_response_validation=True,
    )
