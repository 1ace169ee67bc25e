"""The identity fallback for organisations: discovery on a business or enterprise host that
refuses the chat identity is retried once as the Copilot CLI, the identity that works is
kept for that login (in memory), and ``switch_identity`` hands over the other identity."""

from __future__ import annotations

import asyncio
import sys

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.github._headers import CLI_INTEGRATION_ID
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Inventory, Scenario, Session, minimal_models
from tests._clock import FakeClock

ENTERPRISE = "https://api.enterprise.githubcopilot.com"
BUSINESS = "https://api.business.githubcopilot.com"


def _ids(emu: GitHubEmulator) -> list[str]:
    return [r.headers.get("copilot-integration-id", "") for r in emu.requests_to("models")]


@pytest.mark.parametrize("origin", [ENTERPRISE, BUSINESS])
def test_an_organisation_that_refuses_the_chat_identity_gets_the_cli_one(
    store: CredentialStore, origin: str
) -> None:
    scenario = Scenario(
        session=Session(api_endpoint=origin),
        inventory=Inventory(
            models=minimal_models(), refused_integration_ids=frozenset({"vscode-chat"})
        ),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        result = ch.register_models(ch.Catalog(), host)
        assert result.routes
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID]
        cli = emu.requests_to("models")[-1].headers
        # Exactly what @github/copilot 1.0.102 sends (docs/WIRE.md), copilot-host named last.
        assert cli["editor-version"] == "copilot/1.0.102"
        platform = sys.platform if sys.platform in ("linux", "darwin", "win32") else "linux"
        assert cli["user-agent"] == (
            f"copilot/1.0.102 ({platform} v24.20.0) term/unknown copilot-host/{ch.__version__}"
        )
        assert cli["copilot-integration-id"] == "copilot-developer-cli"
        assert "editor-plugin-version" not in cli
        assert "copilot-harness-id" not in cli
        assert host.request_headers()["Copilot-Integration-Id"] == CLI_INTEGRATION_ID
        # Kept for this login: the next discovery goes straight to the identity that works.
        ch.register_models(ch.Catalog(), host)
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID, CLI_INTEGRATION_ID]
        # A model request under the kept identity is served.
        route = result.routes[0]
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            answer = client.post(
                route.url,
                json={"model": route.model_id, "messages": [{"role": "user", "content": "x"}]},
            )
        assert answer.status_code == 200


def test_the_individual_host_and_a_cli_refusal_are_not_retried(store: CredentialStore) -> None:
    # The individual host: a 403 there is no organisation policy.
    scenario = Scenario(
        inventory=Inventory(
            models=minimal_models(), refused_integration_ids=frozenset({"vscode-chat"})
        )
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        with pytest.raises(ch.CopilotHostError):
            ch.register_models(ch.Catalog(), host)
        assert _ids(emu) == ["vscode-chat"]


def test_both_identities_refused_is_one_retry_and_the_chat_identity_stays(
    store: CredentialStore,
) -> None:
    scenario = Scenario(
        session=Session(api_endpoint=ENTERPRISE),
        inventory=Inventory(
            models=minimal_models(),
            refused_integration_ids=frozenset({"vscode-chat", CLI_INTEGRATION_ID}),
        ),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        with pytest.raises(ch.CopilotHostError):
            ch.register_models(ch.Catalog(), host)
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID]
        assert host.request_headers()["Copilot-Integration-Id"] == "vscode-chat"


def test_a_stale_session_on_the_enterprise_host_is_not_an_identity_refusal(
    store: CredentialStore,
) -> None:
    clock = FakeClock()
    scenario = Scenario(
        session=Session(api_endpoint=ENTERPRISE), inventory=Inventory(models=minimal_models())
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host,
    ):
        identity = host.login(sleep=lambda _s: None)
        session = host.exchange(identity)
        emu.revoke_sessions()  # the host answers 403 "forbidden" from now on
        clock.advance(session.refresh_monotonic - clock.monotonic() + 1)
        with pytest.raises(ch.CopilotHostError):
            host.inventory(session)
        assert _ids(emu) == ["vscode-chat"]


def test_async_host_falls_back_and_keeps_the_identity(store: CredentialStore) -> None:
    scenario = Scenario(
        session=Session(api_endpoint=ENTERPRISE),
        inventory=Inventory(
            models=minimal_models(), refused_integration_ids=frozenset({"vscode-chat"})
        ),
    )

    async def run(emu: GitHubEmulator) -> None:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            result = await ch.aregister_models(ch.Catalog(), host)
            assert result.routes
            assert host.request_headers()["Copilot-Integration-Id"] == CLI_INTEGRATION_ID

    with GitHubEmulator(scenario) as emu:
        asyncio.run(run(emu))
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID]


def test_a_switch_made_for_inference_is_kept_at_the_next_discovery(
    store: CredentialStore,
) -> None:
    with (
        GitHubEmulator(Scenario(inventory=Inventory(models=minimal_models()))) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        ch.register_models(ch.Catalog(), host)
        assert host.switch_identity(host.request_headers()) is not None
        ch.register_models(ch.Catalog(), host)
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID]
        assert host.request_headers()["Copilot-Integration-Id"] == CLI_INTEGRATION_ID


def _hands_over(host: GitHubCopilotHost | AsyncGitHubCopilotHost) -> None:
    chat = dict(host.request_headers())
    other = host.switch_identity(chat)
    assert other is not None
    assert other["Copilot-Integration-Id"] == CLI_INTEGRATION_ID
    assert host.request_headers() == other
    back = host.switch_identity({"copilot-integration-id": CLI_INTEGRATION_ID})
    assert back == chat and host.request_headers() == chat
    # A header set that is neither identity has no "other" one.
    assert host.switch_identity({"Copilot-Integration-Id": "someone-else"}) is None
    assert host.switch_identity({}) is None
    assert host.request_headers() == chat


def test_switch_identity_hands_over_the_other_one_sync(store: CredentialStore) -> None:
    with GitHubCopilotHost(store=store) as host:
        _hands_over(host)


def test_switch_identity_hands_over_the_other_one_async(store: CredentialStore) -> None:
    async def run() -> None:
        async with AsyncGitHubCopilotHost(store=store) as host:
            _hands_over(host)

    asyncio.run(run())


@pytest.mark.parametrize("origin", [ENTERPRISE, BUSINESS])
def test_a_kept_cli_identity_the_organisation_now_refuses_falls_back_to_chat_sync(
    store: CredentialStore, origin: str
) -> None:
    # A switch made for inference earlier (the organisation served the CLI then), and now
    # its policy refuses the CLI: discovery must not be locked out for the host's life.
    scenario = Scenario(
        session=Session(api_endpoint=origin),
        inventory=Inventory(
            models=minimal_models(), refused_integration_ids=frozenset({CLI_INTEGRATION_ID})
        ),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        ch.register_models(ch.Catalog(), host)
        assert host.switch_identity(host.request_headers()) is not None
        result = ch.register_models(ch.Catalog(), host)
        assert result.routes
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID, "vscode-chat"]
        assert host.request_headers()["Copilot-Integration-Id"] == "vscode-chat"
        # Kept: the next discovery goes straight to the chat identity.
        ch.register_models(ch.Catalog(), host)
        assert _ids(emu)[-1] == "vscode-chat"
        assert len(_ids(emu)) == 4


def test_a_kept_cli_identity_the_organisation_now_refuses_falls_back_to_chat_async(
    store: CredentialStore,
) -> None:
    scenario = Scenario(
        session=Session(api_endpoint=ENTERPRISE),
        inventory=Inventory(
            models=minimal_models(), refused_integration_ids=frozenset({CLI_INTEGRATION_ID})
        ),
    )

    async def run(emu: GitHubEmulator) -> None:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            await ch.aregister_models(ch.Catalog(), host)
            assert host.switch_identity(host.request_headers()) is not None
            assert (await ch.aregister_models(ch.Catalog(), host)).routes
            assert host.request_headers()["Copilot-Integration-Id"] == "vscode-chat"

    with GitHubEmulator(scenario) as emu:
        asyncio.run(run(emu))
        assert _ids(emu) == ["vscode-chat", CLI_INTEGRATION_ID, "vscode-chat"]
