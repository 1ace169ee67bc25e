"""Helpers for the emulator's own tests: a Copilot session and the headers clients send."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2

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
