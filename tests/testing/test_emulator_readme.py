"""The README example for embedding applications, kept runnable."""

from __future__ import annotations

from pathlib import Path

import httpx2

import copilot_host as ch
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    GitHubEmulator,
    Inventory,
    RateWindow,
    Replies,
    Scenario,
    ToolCall,
    Usage,
    chat_model,
)
from tests.testing._support import copilot


def test_my_agent_talks_to_copilot(tmp_path: Path) -> None:
    scenario = Scenario(
        inventory=Inventory(
            models=(chat_model("gpt-4.1"), chat_model("gpt-5", endpoints=("/responses",)))
        )
    )
    with GitHubEmulator(scenario) as github:
        store = CredentialStore(tmp_path / "home", key_file=True)  # a throwaway home
        with GitHubCopilotHost(store=store, transport=github.transport()) as host:
            host.login(sleep=lambda seconds: None)  # the emulated person approves
            catalog = ch.Catalog()
            ch.register_models(catalog, host)
            route = catalog.get("github-copilot/gpt-4.1")
            assert route is not None
            with httpx2.Client(transport=github.transport(), auth=route.auth) as client:
                reply = client.post(
                    route.url,
                    json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]},
                )
            assert reply.json()["choices"][0]["message"]["content"] == "echo: hi"
            assert github.github_token.encode() not in store.record_path.read_bytes()


def test_the_scripting_example_scripts_what_it_says() -> None:
    # README's "Scripting GitHub" example, with a client's request in place of the "...".
    scenario = Scenario(
        replies=Replies(tool_script=(ToolCall(name="Read", arguments={"file_path": "notes.txt"}),)),
        usage=Usage(usage_plan="student", weekly_window=RateWindow(remaining=10, per_request=5)),
    )
    tools = [{"type": "function", "function": {"name": "Read", "parameters": {}}}]
    request = {"messages": [{"role": "user", "content": "read it"}], "tools": tools}
    with GitHubEmulator(scenario) as github, httpx2.Client(transport=github.transport()) as c:
        origin, headers = copilot(github, c)
        answer = c.post(f"{origin}/chat/completions", json=request, headers=headers)
        github.assert_no_refusals()
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "Read", "arguments": '{"file_path":"notes.txt"}'}
    assert "rem=5.0" in answer.headers["x-usage-ratelimit-weekly"]
