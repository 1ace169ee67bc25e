"""The refusals by policy through ``route.auth`` and the official SDKs: the answer reaches
the SDK as it is, sent once (a policy 403 is no stale session), and
``route.auth.refusal(exc.response)`` words it plainly with the identity or app refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import copilot_host as ch
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    Scenario,
    minimal_models,
)
from tests._refusals import POLICY

HI: Any = [{"role": "user", "content": "hi"}]


def _routes(emulator: GitHubEmulator, home: Path) -> tuple[GitHubCopilotHost, ch.Catalog]:
    host = GitHubCopilotHost(
        store=CredentialStore(home, key_file=True), transport=emulator.transport()
    )
    host.login(sleep=lambda _seconds: None)
    catalog = ch.Catalog()
    # No bound on new exchanges: a refused cached session would be replaced at once.
    ch.register_models(catalog, host, policy=ch.RefreshPolicy(min_refresh_interval=0))
    return host, catalog


def _auth(route: ch.ModelRoute) -> ch.CopilotAuth:
    # A route's auth is typed httpx2.Auth; registration always makes a CopilotAuth.
    assert isinstance(route.auth, ch.CopilotAuth)
    return route.auth


def test_a_policy_refusal_is_sent_once_and_read_plainly(tmp_path: Path) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()), faults=Faults(answers={"chat": POLICY})
    )
    with GitHubEmulator(scenario) as emulator:
        host, catalog = _routes(emulator, tmp_path / "home")
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        with host, httpx2.Client(auth=route.auth, transport=emulator.transport()) as http:
            client = openai.OpenAI(
                base_url=route.origin, api_key="unused", http_client=http, max_retries=0
            )
            with pytest.raises(openai.PermissionDeniedError):
                client.chat.completions.create(model=route.model_id, messages=HI)
            exchanges = len(emulator.requests_to("copilot_token"))
            with pytest.raises(openai.PermissionDeniedError) as raised:
                client.chat.completions.create(model=route.model_id, messages=HI)
        # The second request's session came from the cache; its refusal asked for no new one.
        assert len(emulator.requests_to("copilot_token")) == exchanges
        assert len(emulator.requests_to("chat")) == 2
    error = _auth(route).refusal(raised.value.response)
    assert isinstance(error, ch.EntitlementError)
    assert error.code == "policy_refused"
    assert error.message.startswith("the Copilot API request was refused: ")
    assert "does not allow VS Code's Copilot Chat (vscode-chat)" in error.message
    assert "administrator" in error.message


def test_an_integrator_refusal_is_read_plainly_from_the_anthropic_sdk(tmp_path: Path) -> None:
    inventory = Inventory(models=minimal_models(), integrator_models=frozenset({"gpt-4.1"}))
    with GitHubEmulator(Scenario(inventory=inventory)) as emulator:
        host, catalog = _routes(emulator, tmp_path / "home")
        route = catalog.get("github-copilot/claude-messages-only")
        assert route is not None
        with host, httpx2.Client(auth=route.auth, transport=emulator.transport()) as http:
            claude = anthropic.Anthropic(
                base_url=route.origin, auth_token="unused", http_client=http, max_retries=0
            )
            with pytest.raises(anthropic.BadRequestError) as raised:
                claude.messages.create(model=route.model_id, max_tokens=8, messages=HI)
    error = _auth(route).refusal(raised.value.response)
    assert error is not None
    assert error.code == "integrator_refused"
    assert 'integrator "vscode-chat"' in error.message
    assert "it serves gpt-4.1;" in error.message


def test_other_answers_are_no_refusal_by_policy(tmp_path: Path) -> None:
    with GitHubEmulator(Scenario(inventory=Inventory(models=minimal_models()))) as emulator:
        host, catalog = _routes(emulator, tmp_path / "home")
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        with host, httpx2.Client(auth=route.auth, transport=emulator.transport()) as http:
            served = http.post(route.url, json={"model": route.model_id, "messages": HI})
            unknown = http.post(route.url, json={"model": "no-such-model", "messages": HI})
    assert _auth(route).refusal(served) is None
    assert unknown.status_code == 400
    assert _auth(route).refusal(unknown) is None
