"""Which transport carries the gateway's upstream requests, and that the choice changes
nothing on the wire.

``create_app`` with no ``transport=`` sends over httpx2's own (so a suite that mocks httpx2
intercepts it, as README's "Test with the emulator" says); ``serve`` puts such an app on
the aiohttp transport when [fast] is installed; the emulator always sends over httpx2's
own unless given another as ``inner``.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pytest_httpx2 import HTTPXMock

from copilot_host.gateway import GatewayServer, create_app, upstream_transport
from copilot_host.gateway._server._stack import PURE_PYTHON, ServerStack
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator
from copilot_host.testing._transport import AsyncLoopbackTransport
from tests._extras import require
from tests.gateway._support import running_gateway

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
# Set per connection or per request, by neither transport's choice.
_VARYING = frozenset({"x-request-id", "x-interaction-id", "authorization"})


def _login(emulator: GitHubEmulator, home: Path) -> None:
    home.mkdir(mode=0o700)
    with GitHubCopilotHost(
        store=CredentialStore(home, key_file=True), transport=emulator.transport()
    ) as person:
        person.login(sleep=lambda _seconds: None)


# The emulator's own transport rewrites GitHub's names to 127.0.0.1 before httpx2's
# transport sees them: the host's login traffic reaches the emulator, and only the
# gateway's own upstream call (to the Copilot API's real name) meets the mock.
@pytest.mark.httpx2_mock(should_mock=lambda request: request.url.host != "127.0.0.1")
def test_httpx2_pytest_intercepts_a_create_app_apps_upstream_calls(
    httpx2_mock: HTTPXMock, tmp_path: Path
) -> None:
    key = "k-" + secrets.token_hex(16)
    answer = {"id": "mocked", "object": "chat.completion", "choices": []}
    with GitHubEmulator() as emulator:
        _login(emulator, tmp_path / "home")

        async def go() -> tuple[int, Any, str]:
            async with AsyncGitHubCopilotHost(
                store=CredentialStore(tmp_path / "home"), transport=emulator.async_transport()
            ) as host:
                app = create_app(host, api_key=key)  # no transport=
                try:
                    async with httpx2.AsyncClient(
                        transport=httpx2.ASGITransport(app), base_url="http://127.0.0.1:8080"
                    ) as client:
                        # Registers the models (through the emulator), learning the route.
                        await client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
                        route = app.catalog.get("github-copilot/gpt-4.1")
                        assert route is not None
                        httpx2_mock.add_response(
                            method="POST", url=route.url, json=answer, is_reusable=False
                        )
                        got = await client.post(
                            "/v1/chat/completions",
                            json=CHAT,
                            headers={"Authorization": f"Bearer {key}"},
                        )
                        return got.status_code, got.json(), route.url
                finally:
                    await app.aclose()

        status, body, url = asyncio.run(go())
        assert emulator.requests_to("chat") == ()  # it went to the mock, not the emulator
    assert (status, body["id"]) == (200, "mocked")
    [sent] = httpx2_mock.get_requests(url=url)
    assert sent.method == "POST"


def _records(emulator: GitHubEmulator) -> list[tuple[str, str, str, dict[str, str], bytes]]:
    return [
        (
            r.method,
            r.host,
            r.path,
            {k: v for k, v in r.headers.items() if k not in _VARYING},
            r.body,
        )
        for r in emulator.requests_to("chat")
    ]


def test_both_transports_send_the_same_requests_and_relay_the_same_answers(
    tmp_path: Path,
) -> None:
    """One parity test through the emulator: the gateway over httpx2's own transport and
    over the aiohttp one sends the same request upstream and answers its client alike."""
    require("aiohttp")
    from copilot_host.gateway._server._aiotransport import AiohttpTransport

    seen: dict[str, Any] = {}
    for name in ("httpx2", "aiohttp"):
        with GitHubEmulator() as emulator:
            inner = AiohttpTransport() if name == "aiohttp" else None
            transport = emulator.async_transport(inner=inner)
            with running_gateway(emulator, tmp_path / name, transport=transport) as gateway:
                whole = gateway.post("/v1/chat/completions", CHAT)
                streamed = gateway.post("/v1/chat/completions", {**CHAT, "stream": True})
            seen[name] = (
                whole[0],
                {k: v for k, v in whole[2].items() if k not in ("id", "created")},
                streamed[0],
                _records(emulator),
            )
    assert seen["aiohttp"][0] == seen["httpx2"][0] == 200
    assert seen["aiohttp"][1:3] == seen["httpx2"][1:3]
    assert seen["aiohttp"][3] == seen["httpx2"][3]
    assert len(seen["httpx2"][3]) == 2


def test_the_emulator_sends_over_httpx2s_own_transport_unless_given_another() -> None:
    with GitHubEmulator() as emulator:
        default = emulator.async_transport()
        assert isinstance(default, AsyncLoopbackTransport)
        assert type(default._inner) is httpx2.AsyncHTTPTransport
        given = httpx2.AsyncHTTPTransport()
        assert emulator.async_transport(inner=given)._inner is given  # type: ignore[attr-defined]


def test_serve_puts_an_app_made_without_a_transport_on_its_stack(tmp_path: Path) -> None:
    """serve()'s adoption: aiohttp on a [fast] stack, httpx2's own on the pure one, and
    never over a transport the app was given."""
    key = "k-" + secrets.token_hex(16)

    async def client_transport(stack: ServerStack, given: Any = None) -> type:
        async with AsyncGitHubCopilotHost(store=CredentialStore(tmp_path)) as host:
            app = create_app(host, api_key=key, transport=given)
            GatewayServer(stack=stack).adopt(app)
            await app.startup()
            try:
                client = app._client
                assert client is not None
                return type(client._transport)
            finally:
                await app.aclose()

    assert asyncio.run(client_transport(PURE_PYTHON)) is httpx2.AsyncHTTPTransport
    given = httpx2.AsyncHTTPTransport()
    fast = ServerStack(http="h11", transport="aiohttp")
    assert asyncio.run(client_transport(fast, given)) is httpx2.AsyncHTTPTransport
    require("aiohttp")
    from copilot_host.gateway._server._aiotransport import AiohttpTransport

    assert asyncio.run(client_transport(fast)) is AiohttpTransport
    assert isinstance(upstream_transport(fast), AiohttpTransport)
    assert upstream_transport(PURE_PYTHON) is None
