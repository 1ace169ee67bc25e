"""End to end over real loopback sockets: login -> register_models -> a chat and a
responses request through route.auth -> logout, blocking and asyncio."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, GitHubEmulator, Inventory, Scenario, minimal_models
from tests._clock import FakeClock

SCENARIO = Scenario(
    login=DeviceFlow(pending_polls=1, interval=1), inventory=Inventory(models=minimal_models())
)
ORIGIN = "https://api.individual.githubcopilot.com"


def _chat_body(model: str) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "ping"}]}


def test_sync_end_to_end(store: CredentialStore) -> None:
    clock = FakeClock()
    with (
        GitHubEmulator(SCENARIO) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host,
    ):
        shown: list[str] = []
        identity = host.login(
            on_code=lambda login: shown.append(login.user_code), sleep=lambda s: None
        )
        assert shown == ["WDJB-MJHT"]
        assert identity.account == "octocat"
        assert host.availability() == identity

        catalog = ch.Catalog()
        result = ch.register_models(catalog, host, clock=clock)
        assert result.origin == ORIGIN
        assert set(catalog.routes()) == {
            "github-copilot/gpt-4.1",
            "github-copilot/gpt-5-mini",
            "github-copilot/claude-sonnet-4",
            "github-copilot/claude-messages-only",
            "github-copilot/auto",
        }
        assert {(s.model_id, s.reason) for s in result.skipped} == {
            ("text-embedding-3-small", "not_chat"),
            ("o3-disabled", "policy_not_enabled"),
        }
        chat = catalog.get("github-copilot/gpt-4.1")
        responses = catalog.get("github-copilot/gpt-5-mini")
        assert chat is not None and responses is not None
        assert chat.url == f"{ORIGIN}/chat/completions"
        assert responses.protocol is ch.ApiProtocol.OPENAI_RESPONSES

        with httpx2.Client(transport=emu.transport(), auth=chat.auth) as client:
            # An SDK's placeholder key is replaced, never sent.
            answer = client.post(
                chat.url, json=_chat_body("gpt-4.1"), headers={"Authorization": "Bearer unused"}
            )
            assert answer.status_code == 200
            assert answer.json()["choices"][0]["message"]["content"] == "echo: ping"
            answer = client.post(responses.url, json={"model": "gpt-5-mini", "input": "hello"})
            assert answer.status_code == 200
            assert answer.json()["output"][0]["content"][0]["text"] == "echo: hello"

            # The server drops every session: one 401, a fresh exchange, the retry succeeds
            # (the session is from the cache by now, so a new exchange is worth it).
            exchanges = len(emu.requests_to("copilot_token"))
            clock.advance(2.0)
            emu.revoke_sessions()
            assert client.post(chat.url, json=_chat_body("gpt-4.1")).status_code == 200
            assert len(emu.requests_to("copilot_token")) == exchanges + 1

            inference = emu.requests_to("chat") + emu.requests_to("responses")
            assert all(r.headers["authorization"].startswith("Bearer tid=") for r in inference)
            assert all(r.headers["copilot-integration-id"] == "vscode-chat" for r in inference)
            assert all(r.headers["authorization"] != "Bearer unused" for r in inference)

            assert host.logout().removed is True
            assert host.availability() is None
            before = len(emu.requests)
            with pytest.raises(ch.LoginError):
                client.post(chat.url, json=_chat_body("gpt-4.1"))
            assert len(emu.requests) == before  # nothing sent with the old session
        assert emu.refused == ()
    assert store.availability() is None


def test_async_end_to_end(store: CredentialStore) -> None:
    async def main() -> None:
        with GitHubEmulator(SCENARIO) as emu:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:

                async def no_wait(seconds: float) -> None:
                    return None

                identity = await host.login(sleep=no_wait)
                assert host.availability() == identity

                catalog = ch.Catalog()
                result = await ch.aregister_models(catalog, host)
                assert len(result.routes) == 5  # the four models and Copilot Auto
                chat = catalog.get("github-copilot/claude-sonnet-4")
                responses = catalog.get("github-copilot/gpt-5-mini")
                assert chat is not None and responses is not None

                async with httpx2.AsyncClient(transport=emu.async_transport()) as client:
                    answer = await client.post(
                        chat.url, json=_chat_body("claude-sonnet-4"), auth=chat.auth
                    )
                    assert answer.status_code == 200
                    assert answer.json()["object"] == "chat.completion"
                    answer = await client.post(
                        responses.url,
                        json={"model": "gpt-5-mini", "input": "hi"},
                        auth=responses.auth,
                    )
                    assert answer.json()["status"] == "completed"

                    # Many concurrent requests share one session: one exchange serves them.
                    exchanges = len(emu.requests_to("copilot_token"))
                    answers = await asyncio.gather(
                        *(
                            client.post(
                                chat.url, json=_chat_body("claude-sonnet-4"), auth=chat.auth
                            )
                            for _ in range(20)
                        )
                    )
                    assert {a.status_code for a in answers} == {200}
                    assert len(emu.requests_to("copilot_token")) == exchanges

                    assert (await host.logout()).removed is True
                    with pytest.raises(ch.LoginError):
                        await client.post(
                            chat.url, json=_chat_body("claude-sonnet-4"), auth=chat.auth
                        )
                assert emu.refused == ()

    asyncio.run(asyncio.wait_for(main(), timeout=30))
    assert store.availability() is None


def test_route_auth_refuses_to_carry_the_session_elsewhere(store: CredentialStore) -> None:
    with (
        GitHubEmulator(SCENARIO) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda s: None)
        catalog = ch.Catalog()
        ch.register_models(catalog, host)
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        before = len(emu.requests)
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            for url in ("https://api.github.com/user", "https://api.githubcopilot.com/models"):
                with pytest.raises(ch.OriginError):
                    client.get(url)
        assert len(emu.requests) == before


def test_emulator_refuses_hosts_that_are_not_githubs() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        for url in ("https://example.com/", "http://github.com/login/device/code"):
            with pytest.raises(httpx2.ConnectError):
                client.get(url)
        assert emu.refused == ("https://example.com/", "http://github.com/login/device/code")
        assert emu.requests == ()
