"""The README example for embedding applications, kept runnable."""

from __future__ import annotations

import httpx2

import copilot_host as ch
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Scenario, chat_model


def test_my_agent_talks_to_copilot(tmp_path):
    scenario = Scenario(
        models=(chat_model("gpt-4.1"), chat_model("gpt-5", endpoints=("/responses",)))
    )
    with GitHubEmulator(scenario) as github:
        store = CredentialStore(tmp_path / "home", key_file=True)  # a throwaway home
        with GitHubCopilotHost(store=store, transport=github.transport()) as host:
            host.login(sleep=lambda seconds: None)  # the emulated person approves
            catalog = ch.Catalog()
            ch.register_models(catalog, host)
            route = catalog.get("github-copilot/gpt-4.1")
            with httpx2.Client(transport=github.transport(), auth=route.auth) as client:
                reply = client.post(
                    route.url,
                    json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]},
                )
            assert reply.json()["choices"][0]["message"]["content"] == "echo: hi"
            assert github.github_token.encode() not in store.record_path.read_bytes()
