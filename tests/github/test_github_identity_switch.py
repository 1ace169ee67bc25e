"""The identity switch at inference, end to end over real loopback sockets: an organisation
whose chat identity discovers the models but is answered 400 ``model_not_supported`` on
inference, while the Copilot CLI's identity is served (``Scenario.unserved_models``).

Every test reads the emulator's record: which identity each model request presented, what
it was answered, and that no request went out more than twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping

import httpx2
import openai
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.github._headers import CLI_INTEGRATION_ID
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator, Inventory, Scenario, Session, minimal_models
from tests._clock import FakeClock

CHAT_ID = "vscode-chat"
ENTERPRISE = "https://api.enterprise.githubcopilot.com"
ALL = frozenset({"*"})
INFERENCE = ("chat", "responses", "messages")


def organisation(unserved: Mapping[str, frozenset[str]]) -> Scenario:
    return Scenario(
        session=Session(api_endpoint=ENTERPRISE),
        inventory=Inventory(models=minimal_models(), unserved_models=unserved),
    )


def sends(emu: GitHubEmulator) -> list[tuple[str, int, bytes]]:
    """Each model request the emulator saw, in order: (integration id, status, body)."""
    return [
        (r.headers.get("copilot-integration-id", ""), r.status, r.body)
        for r in emu.requests
        if r.endpoint in INFERENCE
    ]


def seen(emu: GitHubEmulator) -> list[tuple[str, int]]:
    return [(integration, status) for integration, status, _ in sends(emu)]


def assert_at_most_twice(emu: GitHubEmulator) -> None:
    """Every test request carries its own prompt, so a body seen three times is one request
    sent three times."""
    counts = Counter(body for _, _, body in sends(emu))
    assert counts and max(counts.values()) <= 2, counts


def chat(text: str, model: str = "gpt-4.1") -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def integration(host: GitHubCopilotHost | AsyncGitHubCopilotHost) -> str:
    return host.request_headers()["Copilot-Integration-Id"]


# -- (1) and (2): one switch, then the CLI identity at once -----------------------------------


def test_a_listed_model_refused_to_the_chat_identity_is_served_after_one_switch_sync(
    store: CredentialStore,
) -> None:
    with (
        GitHubEmulator(organisation({CHAT_ID: ALL})) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        catalog = ch.Catalog()
        ch.register_models(catalog, host)
        exchanges = len(emu.requests_to("copilot_token"))
        # Discovery was served to the chat identity: nothing switched yet.
        assert [r.headers["copilot-integration-id"] for r in emu.requests_to("models")] == [CHAT_ID]
        assert integration(host) == CHAT_ID
        route = catalog.get("github-copilot/gpt-4.1")
        assert route is not None
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            first = client.post(route.url, json=chat("one"))
            assert first.status_code == 200
            assert first.json()["choices"][0]["message"]["content"] == "echo: one"
            assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 200)]
            assert integration(host) == CLI_INTEGRATION_ID
            # The next request goes as the CLI at once, on any route of the registration.
            second = client.post(route.url, json=chat("two", "claude-sonnet-4"))
            assert second.status_code == 200
        responses = catalog.get("github-copilot/gpt-5-mini")
        assert responses is not None
        with httpx2.Client(transport=emu.transport(), auth=responses.auth) as client:
            third = client.post(responses.url, json={"model": "gpt-5-mini", "input": "three"})
            assert third.status_code == 200
    assert seen(emu) == [
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 200),
        (CLI_INTEGRATION_ID, 200),
        (CLI_INTEGRATION_ID, 200),
    ]
    assert_at_most_twice(emu)
    # The same session carried both sends: an identity is headers, not a login.
    first_two = [r.headers["authorization"] for r in emu.requests if r.endpoint == "chat"][:2]
    assert first_two[0] == first_two[1]
    assert len(emu.requests_to("copilot_token")) == exchanges


def test_a_listed_model_refused_to_the_chat_identity_is_served_after_one_switch_async(
    store: CredentialStore,
) -> None:
    async def run(emu: GitHubEmulator) -> list[int]:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host)
            assert integration(host) == CHAT_ID
            route = catalog.get("github-copilot/gpt-4.1")
            assert route is not None
            async with httpx2.AsyncClient(
                transport=emu.async_transport(), auth=route.auth
            ) as client:
                statuses = [(await client.post(route.url, json=chat("one"))).status_code]
                assert integration(host) == CLI_INTEGRATION_ID
                statuses.append((await client.post(route.url, json=chat("two"))).status_code)
            return statuses

    with GitHubEmulator(organisation({CHAT_ID: ALL})) as emu:
        assert asyncio.run(run(emu)) == [200, 200]
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 200), (CLI_INTEGRATION_ID, 200)]
    assert_at_most_twice(emu)


def test_the_openai_sdk_gets_the_switched_answer_sync(store: CredentialStore) -> None:
    with (
        GitHubEmulator(organisation({CHAT_ID: ALL})) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        catalog = ch.Catalog()
        ch.register_models(catalog, host)
        route = catalog.get("github-copilot/gpt-5-mini")
        assert route is not None
        with httpx2.Client(auth=route.auth, transport=emu.transport()) as http:
            client = openai.OpenAI(base_url=route.origin, api_key="sk-unused", http_client=http)
            reply = client.responses.create(model=route.model_id, input="Hello")
            stream = client.chat.completions.create(
                model=route.model_id,
                messages=[{"role": "user", "content": "again"}],
                stream=True,
            )
            text = "".join(
                chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
            )
    assert reply.output_text == "echo: Hello"
    assert text == "echo: again"
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 200), (CLI_INTEGRATION_ID, 200)]
    assert_at_most_twice(emu)


def test_the_openai_sdk_gets_the_switched_answer_async(store: CredentialStore) -> None:
    async def run(emu: GitHubEmulator) -> str | None:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host)
            route = catalog.get("github-copilot/gpt-4.1")
            assert route is not None
            async with httpx2.AsyncClient(auth=route.auth, transport=emu.async_transport()) as h:
                client = openai.AsyncOpenAI(base_url=route.origin, api_key="sk-x", http_client=h)
                answer = await client.chat.completions.create(
                    model=route.model_id, messages=[{"role": "user", "content": "Hello"}]
                )
            return answer.choices[0].message.content

    with GitHubEmulator(organisation({CHAT_ID: ALL})) as emu:
        assert asyncio.run(run(emu)) == "echo: Hello"
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 200)]


# -- (3): both identities refused --------------------------------------------------------------

BOTH = {CHAT_ID: ALL, CLI_INTEGRATION_ID: ALL}


def test_when_both_identities_are_refused_the_second_400_is_the_answer_sync(
    store: CredentialStore,
) -> None:
    with (
        GitHubEmulator(organisation(BOTH)) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        route = ch.register_models(ch.Catalog(), host).routes[0]
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            answer = client.post(route.url, json=chat("one", route.model_id))
            with pytest.raises(openai.BadRequestError) as refused:
                openai.OpenAI(
                    base_url=route.origin, api_key="sk-unused", http_client=client
                ).chat.completions.create(
                    model=route.model_id, messages=[{"role": "user", "content": "two"}]
                )
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.json()["error"]["code"] == "model_not_supported"
    assert refused.value.code == "model_not_supported"
    # Two sends per request, never a third; each starts from the chat identity again.
    assert seen(emu) == [
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 400),
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 400),
    ]
    assert_at_most_twice(emu)


def test_when_both_identities_are_refused_the_second_400_is_the_answer_async(
    store: CredentialStore,
) -> None:
    async def run(emu: GitHubEmulator) -> httpx2.Response:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            route = (await ch.aregister_models(ch.Catalog(), host)).routes[0]
            async with httpx2.AsyncClient(
                transport=emu.async_transport(), auth=route.auth
            ) as client:
                answer = await client.post(route.url, json=chat("one", route.model_id))
                await answer.aread()
                return answer

    with GitHubEmulator(organisation(BOTH)) as emu:
        answer = asyncio.run(run(emu))
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "model_not_supported"
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 400)]


# -- (4): a model the inventory did not list -----------------------------------------------------


def test_model_not_supported_for_an_unlisted_model_does_not_switch_sync(
    store: CredentialStore,
) -> None:
    with (
        GitHubEmulator(organisation({CHAT_ID: ALL})) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        route = ch.register_models(ch.Catalog(), host).routes[0]
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            # Listed by the service, skipped by validation: not a model the inventory listed.
            skipped = client.post(route.url, json=chat("one", "o3-disabled"))
            unknown = client.post(route.url, json=chat("two", "no-such-model"))
        assert integration(host) == CHAT_ID
    assert (skipped.status_code, unknown.status_code) == (400, 400)
    assert seen(emu) == [(CHAT_ID, 400), (CHAT_ID, 400)]


def test_model_not_supported_for_an_unlisted_model_does_not_switch_async(
    store: CredentialStore,
) -> None:
    async def run(emu: GitHubEmulator) -> int:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            route = (await ch.aregister_models(ch.Catalog(), host)).routes[0]
            async with httpx2.AsyncClient(
                transport=emu.async_transport(), auth=route.auth
            ) as client:
                answer = await client.post(route.url, json=chat("one", "no-such-model"))
            assert integration(host) == CHAT_ID
            return answer.status_code

    with GitHubEmulator(organisation({CHAT_ID: ALL})) as emu:
        assert asyncio.run(run(emu)) == 400
    assert seen(emu) == [(CHAT_ID, 400)]


# -- the stale-session rule comes first ----------------------------------------------------------


def test_a_stale_session_403_is_retried_first_and_the_400_after_it_is_the_answer(
    store: CredentialStore,
) -> None:
    clock = FakeClock()
    with (
        GitHubEmulator(organisation({CHAT_ID: ALL})) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host,
    ):
        host.login(sleep=lambda _s: None)
        route = ch.register_models(ch.Catalog(), host, clock=clock).routes[0]
        exchanges = len(emu.requests_to("copilot_token"))
        clock.advance(2.0)  # past the one-second bound on exchanges
        emu.revoke_sessions()  # the enterprise host answers 403 "forbidden" from now on
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            first = client.post(route.url, json=chat("one", route.model_id))
            second = client.post(route.url, json=chat("two", route.model_id))
    # The 403 took the request's second send (a new session); its 400 is the answer.
    assert first.status_code == 400
    assert second.status_code == 200
    assert seen(emu) == [
        (CHAT_ID, 403),
        (CHAT_ID, 400),
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 200),
    ]
    assert len(emu.requests_to("copilot_token")) == exchanges + 1
    assert_at_most_twice(emu)


# -- a switch that did not work is not kept -------------------------------------------------------


def test_a_switch_the_other_identity_is_refused_too_is_undone_sync(
    store: CredentialStore,
) -> None:
    # An organisation that refuses the CLI outright (403 on every request, as a policy with
    # the Copilot CLI disabled does) and does not serve one listed model to the chat identity.
    scenario = Scenario(
        session=Session(api_endpoint=ENTERPRISE),
        inventory=Inventory(
            models=minimal_models(),
            refused_integration_ids=frozenset({CLI_INTEGRATION_ID}),
            unserved_models={CHAT_ID: frozenset({"gpt-4.1"})},
        ),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        route = ch.register_models(ch.Catalog(), host).routes[0]
        with httpx2.Client(transport=emu.transport(), auth=route.auth) as client:
            refused = client.post(route.url, json=chat("one", "gpt-4.1"))
            # The chat identity serves every other model: they must keep working.
            served = client.post(route.url, json=chat("two", "claude-sonnet-4"))
        assert integration(host) == CHAT_ID
        # A later registration of this login does not start from the CLI identity either.
        ch.register_models(ch.Catalog(), host)
        assert emu.requests_to("models")[-1].headers["copilot-integration-id"] == CHAT_ID
    assert refused.status_code == 403
    assert served.status_code == 200
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 403), (CHAT_ID, 200)]
    assert_at_most_twice(emu)


def test_a_switch_the_other_identity_is_refused_too_is_undone_async(
    store: CredentialStore,
) -> None:
    async def run(emu: GitHubEmulator) -> list[int]:
        async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
            await host.login(sleep=lambda _s: asyncio.sleep(0))
            route = (await ch.aregister_models(ch.Catalog(), host)).routes[0]
            async with httpx2.AsyncClient(
                transport=emu.async_transport(), auth=route.auth
            ) as client:
                statuses = [
                    (await client.post(route.url, json=chat(text, route.model_id))).status_code
                    for text in ("one", "two")
                ]
            assert integration(host) == CHAT_ID
            return statuses

    with GitHubEmulator(organisation(BOTH)) as emu:
        assert asyncio.run(run(emu)) == [400, 400]
    # Each request starts from the chat identity again: two sends each, never a third.
    assert seen(emu) == [
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 400),
        (CHAT_ID, 400),
        (CLI_INTEGRATION_ID, 400),
    ]
    assert_at_most_twice(emu)


def test_a_blocking_hosts_route_switches_in_an_async_client_too(store: CredentialStore) -> None:
    with (
        GitHubEmulator(organisation({CHAT_ID: ALL})) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _s: None)
        route = ch.register_models(ch.Catalog(), host).routes[0]

        async def run() -> list[int]:
            async with httpx2.AsyncClient(
                transport=emu.async_transport(), auth=route.auth
            ) as client:
                return [
                    (await client.post(route.url, json=chat(text, route.model_id))).status_code
                    for text in ("one", "two")
                ]

        assert asyncio.run(run()) == [200, 200]
        assert integration(host) == CLI_INTEGRATION_ID
    assert seen(emu) == [(CHAT_ID, 400), (CLI_INTEGRATION_ID, 200), (CLI_INTEGRATION_ID, 200)]
