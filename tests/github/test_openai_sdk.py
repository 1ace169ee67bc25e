"""route.auth in the official OpenAI SDK, as it is: both protocols, sync and async."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import openai

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator

PLACEHOLDER = "sk-placeholder-never-sent"


def _assert_bearer_replaced(emulator: GitHubEmulator) -> None:
    for endpoint in ("chat", "responses"):
        (request,) = emulator.requests_to(endpoint)
        authorization = request.headers["authorization"]
        assert PLACEHOLDER not in authorization
        assert authorization.removeprefix("Bearer ") in emulator.session_tokens
        assert request.headers["editor-version"]


def test_sync_openai_client_speaks_both_protocols(tmp_path: Path) -> None:
    with GitHubEmulator() as emulator:
        store = CredentialStore(tmp_path / "home", key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as host:
            host.login(sleep=lambda _seconds: None)
            catalog = ch.Catalog()
            ch.register_models(catalog, host)
            chat = catalog.get("github-copilot/gpt-4.1")
            responses = catalog.get("github-copilot/gpt-5-mini")
            assert chat is not None
            assert responses is not None
            assert chat.protocol is ch.ApiProtocol.OPENAI_CHAT
            assert responses.protocol is ch.ApiProtocol.OPENAI_RESPONSES
            with httpx2.Client(auth=chat.auth, transport=emulator.transport()) as http:
                client = openai.OpenAI(base_url=chat.origin, api_key=PLACEHOLDER, http_client=http)
                answer = client.chat.completions.create(
                    model=chat.model_id, messages=[{"role": "user", "content": "Hello"}]
                )
                reply = client.responses.create(model=responses.model_id, input="Hi there")
        _assert_bearer_replaced(emulator)
    assert answer.choices[0].message.content == "echo: Hello"
    assert reply.output_text == "echo: Hi there"


def test_async_openai_client_speaks_both_protocols(tmp_path: Path) -> None:
    async def main(emulator: GitHubEmulator) -> tuple[str | None, str]:
        store = CredentialStore(tmp_path / "home", key_file=True)
        async with AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport()
        ) as host:
            await host.login(sleep=lambda _seconds: asyncio.sleep(0))
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host)
            chat = catalog.get("github-copilot/gpt-4.1")
            assert chat is not None
            async with httpx2.AsyncClient(
                auth=chat.auth, transport=emulator.async_transport()
            ) as http:
                client = openai.AsyncOpenAI(
                    base_url=chat.origin, api_key=PLACEHOLDER, http_client=http
                )
                answer = await client.chat.completions.create(
                    model=chat.model_id, messages=[{"role": "user", "content": "Hello"}]
                )
                reply = await client.responses.create(model="gpt-5-mini", input="Hi there")
        return answer.choices[0].message.content, reply.output_text

    with GitHubEmulator() as emulator:
        content, text = asyncio.run(main(emulator))
        _assert_bearer_replaced(emulator)
    assert content == "echo: Hello"
    assert text == "echo: Hi there"
