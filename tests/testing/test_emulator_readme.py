"""README's "Test with the emulator" section: its examples run, its table of groups builds
scenarios, and it names every endpoint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2

import copilot_host as ch
from copilot_host import testing
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import ENDPOINTS, GitHubEmulator, Inventory, Scenario, chat_model
from tests.testing._support import copilot

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
_PYTHON = r"^```python\n(.*?)^```\n"


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


def _section() -> str:
    (section,) = re.findall(r"^## Test with the emulator\n(.*?)^## ", README, re.S | re.M)
    return str(section)


def test_the_scripting_example_scripts_what_it_says() -> None:
    # README's "Scripting GitHub" example as written, a client's request in place of "...".
    (snippet,) = [b for b in re.findall(_PYTHON, _section(), re.S | re.M) if "Scenario(" in b]
    request_line = "    ...  # your client's requests\n"
    assert snippet.count(request_line) == 1
    snippet = snippet.replace(request_line, "    answer = _a_client_asks(github)\n")
    namespace: dict[str, Any] = {"_a_client_asks": _a_client_asks}
    exec(compile(snippet, "README.md", "exec"), namespace)
    answer: httpx2.Response = namespace["answer"]
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "Read", "arguments": '{"file_path":"notes.txt"}'}
    assert "rem=5.0" in answer.headers["x-usage-ratelimit-weekly"]


def _a_client_asks(github: GitHubEmulator) -> httpx2.Response:
    tools = [{"type": "function", "function": {"name": "Read", "parameters": {}}}]
    request = {"messages": [{"role": "user", "content": "read it"}], "tools": tools}
    with httpx2.Client(transport=github.transport()) as client:
        origin, headers = copilot(github, client)
        return client.post(f"{origin}/chat/completions", json=request, headers=headers)


def test_every_group_in_the_scripting_table_builds_a_scenario() -> None:
    # The first snippet of each row that gives a group (or lenient=) is Scenario's keyword.
    rows = [line for line in _section().splitlines() if line.startswith("| ")]
    given = [
        snippet
        for row in rows
        for snippet in re.findall(r"`([^`]+)`", row.split(" | ")[1])[:1]
        if re.match(r"(login|session|inventory|replies|usage|faults|lenient)=", snippet)
    ]
    assert len(given) >= 20
    names = {name: getattr(testing, name) for name in testing.__all__}
    for snippet in given:
        # ", ..." is the table's "and more like it".
        code = f"Scenario({snippet.replace(', ...', ',')})"
        assert isinstance(eval(code, names), Scenario), snippet  # noqa: S307 - README's text


def test_readme_names_every_endpoint() -> None:
    (listed,) = re.findall(r"^Endpoint names: (.*?)\.$", _section(), re.S | re.M)
    assert set(re.findall(r"`(\w+)`", listed)) == ENDPOINTS
