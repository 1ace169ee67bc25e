"""Copilot Auto's two calls answered in the ways the happy path never sees, over real
loopback sockets to the emulator: a Copilot session the pool call refuses (401), every
other refusal and malformed answer of either call, and what the routing call carries when
the request has an image or the caller chooses a tier."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import openai
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import Auto, Faults, GitHubEmulator, RawAnswer, Scenario, Usage
from tests._clock import FakeClock
from tests.github.test_github_auto import AUTO, FREE, hello, registered, sdk

# The routing call alone answers (the pool call is gated off for this login).
ROUTED = Auto(gated=frozenset({"pool"}))
# A pool session that is due for renewal 101 s after it was issued.
SHORT = Auto(pool_lifetime=400)
DUE = 101
EXPIRES_AT = 4_000_000_000


def _json(status: int, value: object, *extra: tuple[str, str]) -> RawAnswer:
    return RawAnswer(
        status, json.dumps(value).encode(), (("Content-Type", "application/json"), *extra)
    )


def _refused(scenario: Scenario, store: CredentialStore) -> tuple[BaseException, GitHubEmulator]:
    """What one chat request naming ``auto`` raises on a free plan under ``scenario``."""
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            client = sdk(catalog.routes()[AUTO], emu)
            with pytest.raises(ch.CopilotHostError) as raised:
                hello(client)
            client.close()
    return raised.value, emu


# -- a Copilot session the pool call refuses --------------------------------------------------


def test_a_session_the_pool_call_refuses_is_replaced_before_the_next_request(
    store: CredentialStore, clock: FakeClock
) -> None:
    """GitHub revoked the Copilot session (as it does on a plan change): the pool call
    answers 401. The request fails with "try again", and trying again works: the refused
    session is never sent again (before the fix, every retry sent it until it expired on
    this machine's clock, up to 30 minutes later)."""
    with GitHubEmulator(Scenario(usage=FREE, auto=SHORT)) as emu:
        host, catalog, _result = registered(emu, store, clock)
        with host:
            client = sdk(catalog.routes()[AUTO], emu)
            clock.advance(DUE)
            emu.revoke_sessions()
            emu.clear_requests()
            with pytest.raises(ch.SessionError) as refused:
                hello(client)
            clock.advance(2)  # past the second a failure is told to every caller
            assert hello(client) == "gpt-5-mini"
            client.close()
        calls = [(r.endpoint, r.status) for r in emu.requests]
    assert (refused.value.code, refused.value.retryable) == ("session_expired", True)
    assert "the Copilot Auto session request was refused (HTTP 401)" in refused.value.message
    assert calls == [
        ("auto_session", 401),
        ("copilot_token", 200),
        ("auto_session", 200),
        ("chat", 200),
    ]


def test_an_async_host_replaces_a_session_the_pool_call_refuses(
    store: CredentialStore, clock: FakeClock
) -> None:
    async def twice(emu: GitHubEmulator) -> tuple[BaseException, str]:
        host = AsyncGitHubCopilotHost(store=store, transport=emu.async_transport(), clock=clock)
        async with host:
            catalog = ch.Catalog()
            await ch.aregister_models(catalog, host, clock=clock)
            route = catalog.routes()[AUTO]
            async with httpx2.AsyncClient(auth=route.auth, transport=emu.async_transport()) as http:
                client = openai.AsyncOpenAI(base_url=route.origin, api_key="x", http_client=http)
                clock.advance(DUE)
                emu.revoke_sessions()
                with pytest.raises(ch.SessionError) as refused:
                    await client.chat.completions.create(
                        model="auto", messages=[{"role": "user", "content": "hi"}]
                    )
                clock.advance(2)
                answer = await client.chat.completions.create(
                    model="auto", messages=[{"role": "user", "content": "hi"}]
                )
        return refused.value, answer.model

    with GitHubEmulator(Scenario(usage=FREE, auto=SHORT)) as emu:
        with GitHubCopilotHost(store=store, transport=emu.transport()) as person:
            person.login(sleep=lambda _s: None)
        error, model = asyncio.run(twice(emu))
        statuses = [r.status for r in emu.requests_to("auto_session")]
    assert getattr(error, "code", None) == "session_expired"
    assert model == "gpt-5-mini"
    assert statuses == [200, 401, 200]


# -- the pool call's other refusals and malformed answers -------------------------------------


def test_a_pool_call_refused_by_the_service_says_auto_is_unavailable_and_why(
    store: CredentialStore,
) -> None:
    answer = _json(403, {"message": "Copilot Auto is turned off for this organization"})
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": answer}))
    error, emu = _refused(scenario, store)
    assert isinstance(error, ch.EntitlementError)
    assert error.code == "auto_unavailable"
    assert error.message.startswith(
        "the Copilot Auto session request was refused (HTTP 403): Copilot Auto is turned off "
        "for this organization; Copilot Auto is not available to this login now"
    )
    assert emu.requests_to("chat") == ()


def test_a_pool_call_refusing_the_client_as_too_old_names_the_version(
    store: CredentialStore,
) -> None:
    too_old = RawAnswer(
        466,
        b"bad request: the VS Code version you are using is no longer supported. "
        b"Please upgrade VS Code to version 1.200.0+.",
        (("Content-Type", "text/plain"),),
    )
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": too_old}))
    error, _emu = _refused(scenario, store)
    assert isinstance(error, ch.ClientOutdatedError)
    assert "the Copilot Auto session request was refused (HTTP 466)" in error.message
    # Each caller raises its own copy of the shared failure: the copy keeps what the
    # refusal named (it was dropped before the fix).
    assert error.minimum_version == "1.200.0"


def test_a_pool_call_refused_for_a_used_up_quota_says_when_it_resets(
    store: CredentialStore,
) -> None:
    spent = _json(
        402,
        {"message": "quota exceeded"},
        ("X-Quota-Snapshot-Premium_interactions", "ent=300&rem=0&rst=2030-01-01T00:00:00Z"),
    )
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": spent}))
    error, _emu = _refused(scenario, store)
    assert isinstance(error, ch.QuotaExceededError)
    assert "it resets on 2030-01-01 00:00 UTC" in error.message
    assert error.reset_at is not None and error.reset_at.year == 2030


def test_a_failing_pool_call_is_retried_once_then_reported_as_the_services_failure(
    store: CredentialStore,
) -> None:
    busy = _json(503, {"message": "upstream busy"}, ("Retry-After", "0"))
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": busy}))
    error, emu = _refused(scenario, store)
    assert isinstance(error, ch.ServerError)
    assert "HTTP 503" in error.message
    # Registration's look and the request's call, each sent twice (one retry each).
    assert [r.status for r in emu.requests_to("auto_session")] == [503] * 4


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"available_models": "gpt-5-mini", "session_token": "ast_x", "expires_at": EXPIRES_AT},
            "answered without a list of models",
        ),
        (
            {"available_models": ["gpt-5-mini"], "expires_at": EXPIRES_AT},
            "answered without a session token",
        ),
    ],
    ids=["models-not-a-list", "no-token"],
)
def test_a_malformed_pool_answer_is_a_response_error(
    store: CredentialStore, body: dict[str, object], said: str
) -> None:
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": _json(200, body)}))
    error, emu = _refused(scenario, store)
    assert isinstance(error, ch.ResponseError)
    assert f"the Copilot Auto session request {said}" in error.message
    assert emu.requests_to("chat") == ()


def _pool_session(store: CredentialStore, body: dict[str, object]) -> Any:
    """The session the host reads from a pool answer of ``body`` (the call made directly,
    as ``AutoChooser`` makes it)."""
    scenario = Scenario(usage=FREE, faults=Faults(answers={"auto_session": _json(200, body)}))
    with GitHubEmulator(scenario) as emu:
        host = GitHubCopilotHost(store=store, transport=emu.transport())
        with host:
            identity = host.login(sleep=lambda _s: None)
            return host.auto_session(host.exchange(identity), prompt="hi")


@pytest.mark.parametrize(
    ("discounts", "kept"),
    [
        # Not an object: no discount at all (it only ever lowers a shown price).
        (["gpt-5-mini", 0.5], ()),
        # Each entry that is not a model id and a fraction from 0 to 1 is left out.
        (
            {
                "gpt-5-mini": 0.25,
                "claude-opus-4.6": 1.5,
                "gpt-4.1": True,
                "o3": "0.1",
                "not a model id": 0.1,
                "gpt-5.4": -0.1,
                "gpt-5.5": 1,
            },
            (("gpt-5-mini", 0.25), ("gpt-5.5", 1.0)),
        ),
    ],
    ids=["not-an-object", "entries"],
)
def test_discounts_that_are_not_fractions_of_model_ids_are_left_out(
    store: CredentialStore, discounts: object, kept: tuple[tuple[str, float], ...]
) -> None:
    body = {
        "available_models": ["gpt-5-mini", "bad id!", 7, "gpt-5-mini"],
        "session_token": "ast_" + "a" * 40,
        "expires_at": EXPIRES_AT,
        "discounted_costs": discounts,
    }
    session = _pool_session(store, body)
    assert session.discounts == kept
    # Ids that are not model ids, and repeats, are left out of the pool.
    assert session.models == ("gpt-5-mini",)


# -- the routing call -------------------------------------------------------------------------


def test_a_request_with_an_image_asks_the_routing_call_for_a_model_that_takes_images(
    store: CredentialStore,
) -> None:
    pool = ("gemini-3.6-flash", "claude-haiku-4.5")  # the first takes no images
    scenario = Scenario(usage=FREE, auto=Auto(pool=pool, gated=frozenset({"pool"})))
    picture = "data:image/png;base64,iVBORw0KGgo="
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        with host:
            client = sdk(catalog.routes()[AUTO], emu)
            answer = client.chat.completions.create(
                model="auto",
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "what is this?"},
                            {"type": "image_url", "image_url": {"url": picture}},
                        ],
                    }
                ],
            )
            client.close()
        (routing,) = emu.requests_to("auto")
        (sent,) = emu.requests_to("chat")
    assert json.loads(routing.body) == {"prompt": "what is this?", "has_image": True}
    assert answer.model == sent.model == "claude-haiku-4.5"
    assert sent.headers["copilot-vision-request"] == "true"


def test_a_tier_the_caller_chooses_goes_with_the_routing_call(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(usage=FREE, auto=ROUTED)) as emu:
        host = GitHubCopilotHost(store=store, transport=emu.transport())
        with host:
            session = host.exchange(host.login(sleep=lambda _s: None))
            found = host.auto_session(session, prompt="plan the release", tier="intelligence")
        (routing,) = emu.requests_to("auto")
    # VS Code's routing profiles (docs/WIRE.md): sent only when chosen.
    assert json.loads(routing.body) == {"prompt": "plan the release", "tier": "intelligence"}
    assert (found.models, found.chosen) == (("gpt-5-mini",), True)


@pytest.mark.parametrize(
    ("answer", "kind", "said"),
    [
        (
            _json(403, {"error": "auto_not_allowed"}),
            ch.EntitlementError,
            "the Copilot Auto routing request was refused (HTTP 403)",
        ),
        (
            _json(200, {"session_token": "ast_x", "expires_at": EXPIRES_AT}),
            ch.ResponseError,
            "the Copilot Auto routing request answered without a selected model",
        ),
        (
            _json(
                200,
                {
                    "session_token": "ast_x",
                    "expires_at": EXPIRES_AT,
                    "selected_model": {"id": "gpt-5-mini; rm -rf"},
                },
            ),
            ch.ResponseError,
            "the Copilot Auto routing request answered with a malformed model id",
        ),
    ],
    ids=["refused", "no-model", "malformed-id"],
)
def test_a_refused_or_malformed_routing_answer_is_a_typed_error(
    store: CredentialStore, answer: RawAnswer, kind: type[ch.CopilotHostError], said: str
) -> None:
    scenario = Scenario(usage=FREE, auto=ROUTED, faults=Faults(answers={"auto": answer}))
    error, emu = _refused(scenario, store)
    assert isinstance(error, kind)
    assert error.message.startswith(said)
    assert emu.requests_to("chat") == ()


def test_a_paid_plan_keeps_its_models_when_auto_is_refused(store: CredentialStore) -> None:
    """Registration's look at Auto never raises: a refusal leaves Auto out on a plan that
    can name models."""
    refusal = _json(403, {"message": "no"})
    scenario = Scenario(usage=Usage(), faults=Faults(answers={"auto_session": refusal}))
    with GitHubEmulator(scenario) as emu:
        host, catalog, _result = registered(emu, store)
        host.close()
    assert AUTO not in catalog.routes()
    assert "github-copilot/gpt-5-mini" in catalog.routes()
