"""Hostile answers from every endpoint, served over a real loopback socket: each surfaces as
a typed error, stores nothing and registers nothing."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

import copilot_host as ch
from copilot_host._safety._secret import Secret
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    RawAnswer,
    Scenario,
    Session,
    chat_model,
)
from tests._clock import FakeClock
from tests.github._support import REALISTIC_ROUTES

LOGIN_ENDPOINTS = ("device_code", "access_token", "copilot_token", "user")


def _login(emu: GitHubEmulator, store: CredentialStore, clock: FakeClock, **kw: Any) -> None:
    with GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock, **kw) as host:
        host.login(sleep=clock.sleep)


def _register(
    emu: GitHubEmulator, store: CredentialStore, catalog: ch.Catalog, **kw: Any
) -> ch.RegistrationResult:
    with GitHubCopilotHost(
        store=store, transport=emu.transport(), sleep=lambda s: None, **kw
    ) as host:
        return ch.register_models(catalog, host)


@pytest.mark.parametrize("endpoint", LOGIN_ENDPOINTS)
def test_malformed_login_answers(endpoint: str, store: CredentialStore, clock: FakeClock) -> None:
    with (
        GitHubEmulator(Scenario(faults=Faults(malformed=frozenset({endpoint})))) as emu,
        pytest.raises(ch.ResponseError) as caught,
    ):
        _login(emu, store, clock)
    assert caught.value.code == "bad_response"
    assert store.availability() is None


@pytest.mark.parametrize("endpoint", LOGIN_ENDPOINTS)
def test_oversized_login_answers(endpoint: str, store: CredentialStore, clock: FakeClock) -> None:
    with (
        GitHubEmulator(Scenario(faults=Faults(oversized=frozenset({endpoint})))) as emu,
        pytest.raises(ch.ResponseError) as caught,
    ):
        _login(emu, store, clock)
    assert caught.value.code == "response_too_large"
    assert store.availability() is None


@pytest.mark.parametrize("endpoint", LOGIN_ENDPOINTS)
def test_slow_login_answers_time_out(
    endpoint: str, store: CredentialStore, clock: FakeClock
) -> None:
    with (
        GitHubEmulator(Scenario(faults=Faults(slow={endpoint: 2.0}))) as emu,
        pytest.raises(ch.TransportError) as caught,
    ):
        _login(emu, store, clock, timeout=httpx2.Timeout(0.2))
    assert caught.value.code == "timeout"
    assert store.availability() is None


@pytest.mark.parametrize(
    "answer",
    [
        RawAnswer(200, b'{"device_code": "x", "user_code": 7}'),
        RawAnswer(200, b'{"a": ' * 50_000 + b"1" + b"}" * 50_000),
        RawAnswer(200, b'{"expires_in": ' + b"9" * 5000 + b"}"),
        RawAnswer(200, b'{"expires_in": NaN}'),
        RawAnswer(200, b"\xff\xfe\x00garbage"),
        RawAnswer(200, b""),
        RawAnswer(500, b"<html>oops</html>", (("Content-Type", "text/html"),)),
        RawAnswer(
            200,
            b'{"device_code": "x", "user_code": "AB-CD", '
            b'"verification_uri": "https://evil.example/login/device", "expires_in": 900}',
        ),
    ],
)
def test_hostile_device_code_answers(
    answer: RawAnswer, store: CredentialStore, clock: FakeClock
) -> None:
    with (
        GitHubEmulator(Scenario(faults=Faults(answers={"device_code": answer}))) as emu,
        pytest.raises(ch.CopilotHostError) as caught,
    ):
        _login(emu, store, clock)
    assert isinstance(caught.value, ch.ResponseError | ch.ServerError)
    assert "evil" not in str(caught.value)


def test_models_malformed_oversized_and_slow(store: CredentialStore) -> None:
    for scenario, code in [
        (Scenario(faults=Faults(malformed=frozenset({"models"}))), "bad_response"),
        (Scenario(faults=Faults(oversized=frozenset({"models"}))), "response_too_large"),
        # Odd entries are skipped; with nothing left to register, registration fails whole.
        (
            Scenario(inventory=Inventory(models=({"id": 5}, chat_model("e", kind="embeddings")))),
            "no_models",
        ),
        (Scenario(inventory=Inventory(models=(chat_model("ok"), chat_model("ok")))), "no_models"),
        (Scenario(inventory=Inventory(models=(chat_model("bad id with spaces"),))), "no_models"),
        (Scenario(inventory=Inventory(models=())), "no_models"),
        (Scenario(faults=Faults(models_failures=(503, 503))), "server_error"),
        (Scenario(faults=Faults(models_failures=(429, 429))), "rate_limited"),
    ]:
        with GitHubEmulator(scenario) as emu:
            store.save("octocat", Secret(emu.github_token))
            catalog = ch.Catalog()
            with pytest.raises(ch.CopilotHostError) as caught:
                _register(emu, store, catalog)
            assert caught.value.code == code, scenario
            assert len(catalog) == 0


def test_models_retried_once_after_a_503(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(faults=Faults(models_failures=(503,)))) as emu:
        store.save("octocat", Secret(emu.github_token))
        catalog = ch.Catalog()
        _register(emu, store, catalog)
        assert len(emu.requests_to("models")) == 2
    assert len(catalog) == REALISTIC_ROUTES


def test_slow_models_time_out(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(faults=Faults(slow={"models": 2.0}))) as emu:
        store.save("octocat", Secret(emu.github_token))
        catalog = ch.Catalog()
        with pytest.raises(ch.TransportError) as caught:
            _register(emu, store, catalog, timeout=httpx2.Timeout(0.2))
    assert caught.value.code == "timeout"
    assert len(catalog) == 0


def test_a_token_shaped_model_is_skipped_without_echoing(store: CredentialStore) -> None:
    """Not this login's credential, but shaped like one: skipped, its id never shown."""
    with GitHubEmulator() as probe:
        pass
    shaped = "x" + probe.github_token[4:]
    scenario = Scenario(
        inventory=Inventory(models=(chat_model("fine"), chat_model(shaped, name=f"Model {shaped}")))
    )
    with GitHubEmulator(scenario) as emu:
        store.save("octocat", Secret(emu.github_token))
        catalog = ch.Catalog()
        result = _register(emu, store, catalog)
    assert set(catalog.routes()) == {"github-copilot/fine", "github-copilot/auto"}
    assert [(s.model_id, s.reason, s.display_name) for s in result.skipped] == [
        ("", "credential_like", "")
    ]
    assert shaped not in repr(result)


def test_async_hostile_answers_are_typed_too(store: CredentialStore) -> None:
    import asyncio

    async def main() -> None:
        for scenario, error in [
            (Scenario(faults=Faults(malformed=frozenset({"copilot_token"}))), ch.ResponseError),
            (Scenario(faults=Faults(oversized=frozenset({"models"}))), ch.ResponseError),
            (Scenario(session=Session(revoked=True)), ch.LoginRevokedError),
            (Scenario(session=Session(api_endpoint="https://evil.example")), ch.OriginError),
        ]:
            with GitHubEmulator(scenario) as emu:
                store.save("octocat", Secret(emu.github_token))
                async with AsyncGitHubCopilotHost(
                    store=store, transport=emu.async_transport()
                ) as host:
                    with pytest.raises(error):
                        await ch.aregister_models(ch.Catalog(), host)
                assert emu.refused == ()

    asyncio.run(main())


def test_connection_refused_is_a_network_error(store: CredentialStore) -> None:
    emu = GitHubEmulator()
    transport = emu.transport()  # points at a port nobody listens on once stopped
    emu.start()
    emu.stop()
    with (
        GitHubCopilotHost(store=store, transport=transport) as host,
        pytest.raises(ch.TransportError) as caught,
    ):
        host.begin_device_login()
    assert caught.value.code == "network_error"


def test_non_ascii_digits_in_headers_are_not_numbers() -> None:
    """str.isdigit() accepts superscripts and other scripts' digits; int() does not."""
    from copilot_host.github._http import _declared_too_large
    from copilot_host.github._status import retry_after
    from copilot_host.github._wire import WireRequest, WireResponse

    for raw in ("¹", "٣", "²⁵"):
        assert retry_after(WireResponse(429, {"retry-after": raw}, b"", 0.0, 0.0)) is None
        response = httpx2.Response(200, headers=[(b"content-length", raw.encode())])
        request = WireRequest("GET", "https://api.github.com/user", "test", (), limit=10)
        assert _declared_too_large(response, request) is False
