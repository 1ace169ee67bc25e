"""The Copilot session exchange: allowlist, deadlines, 401/403/429/5xx, login checks."""

from __future__ import annotations

import email.utils
import json
import secrets

import pytest

import copilot_host as ch
from copilot_host._safety._secret import Secret
from copilot_host.github import KNOWN_NOTIFICATIONS, GitHubCopilotHost
from copilot_host.github._exchange import parse_exchange
from copilot_host.store import CredentialStore
from copilot_host.testing import Faults, GitHubEmulator, Scenario, Session
from tests._clock import FakeClock
from tests.github._support import canary_github_token, response

IDENTITY = ch.LoginIdentity("id-1", "octocat")


def _body(**overrides: object) -> str:
    body: dict[str, object] = {
        "token": f"tid={secrets.token_hex(16)};exp=1:{secrets.token_hex(8)}",
        "expires_at": 1_700_001_800,
        "refresh_in": 1500,
        "endpoints": {"api": "https://api.individual.githubcopilot.com"},
        "sku": "copilot_for_individuals",
    }
    body.update(overrides)
    return json.dumps({k: v for k, v in body.items() if v is not None})


def _date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


def test_session_deadlines_are_measured_from_receipt() -> None:
    session = parse_exchange(response(body=_body(), at=500.0, wall=1_700_000_000.0), IDENTITY)
    assert session.received_monotonic == 500.0
    assert session.expires_monotonic == pytest.approx(500.0 + 1800)
    assert session.refresh_monotonic <= 500.0 + 1500
    assert session.endpoint.origin == "https://api.individual.githubcopilot.com"
    assert session.sku == "copilot_for_individuals"
    assert session.identity == IDENTITY


def test_server_date_corrects_a_skewed_local_clock() -> None:
    # The local wall clock is an hour fast; the server's Date says the token has 30 min.
    answer = response(
        body=_body(expires_at=1_700_001_800, refresh_in=None),
        headers={"Date": _date(1_700_000_000)},
        at=500.0,
        wall=1_700_003_600.0,
    )
    session = parse_exchange(answer, IDENTITY)
    assert session.expires_monotonic == pytest.approx(500.0 + 1800)


@pytest.mark.parametrize(
    "api",
    [
        "https://copilot.attacker.example",
        "https://api.githubcopilot.com.attacker.example",
        "http://api.githubcopilot.com",
        "https://api.githubcopilot.com:8443",
        "https://user@api.githubcopilot.com",
    ],
)
def test_endpoint_off_the_allowlist_fails_the_exchange(api: str) -> None:
    with pytest.raises(ch.OriginError) as caught:
        parse_exchange(response(body=_body(endpoints={"api": api})), IDENTITY)
    assert caught.value.code in ("origin_not_allowed", "invalid_origin")


def test_off_allowlist_endpoint_never_receives_a_request(store: CredentialStore) -> None:
    with GitHubEmulator(
        Scenario(session=Session(api_endpoint="https://copilot.attacker.example"))
    ) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        catalog = ch.Catalog()
        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            with pytest.raises(ch.OriginError) as caught:
                ch.register_models(catalog, host)
            assert caught.value.code == "origin_not_allowed"
            with pytest.raises(ch.OriginError):
                host.exchange(identity)
        assert {r.host for r in emu.requests} == {"api.github.com"}
        assert emu.refused == ()
    assert len(catalog) == 0


@pytest.mark.parametrize(
    "body",
    [
        _body(token=None),
        _body(token=""),
        _body(token="has space"),
        _body(expires_at=None),
        _body(expires_at="soon"),
        _body(endpoints=None),
        _body(endpoints={"api": 5}),
        _body(endpoints=["https://api.githubcopilot.com"]),
        _body(refresh_in="1500"),
        '{"token": "x", "expires_at": NaN}',
        '{"token": "x", "expires_at": 1e999}',
        "[]",
        "<html>",
    ],
)
def test_malformed_exchange_answers(body: str) -> None:
    with pytest.raises(ch.CopilotHostError) as caught:
        parse_exchange(response(body=body), IDENTITY)
    assert isinstance(caught.value, ch.ResponseError | ch.OriginError)


def test_401_means_log_in_again_and_keeps_the_credential(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(session=Session(revoked=True))) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        with (
            GitHubCopilotHost(store=store, transport=emu.transport()) as host,
            pytest.raises(ch.LoginRevokedError) as caught,
        ):
            host.exchange(identity)
    assert caught.value.code == "login_invalid"
    assert "login" in caught.value.message
    assert store.availability() == identity


@pytest.mark.parametrize("notification", sorted(set(KNOWN_NOTIFICATIONS) - {"server_error"}))
def test_403_names_the_specific_refusal(notification: str) -> None:
    body = json.dumps(
        {
            "error_details": {
                "notification_id": notification,
                "message": "You are currently logged in as octocat.",
            },
            "message": "Resource not accessible by integration",
        }
    )
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.code == notification
    assert caught.value.message == KNOWN_NOTIFICATIONS[notification]


def test_403_server_error_is_retryable() -> None:
    body = json.dumps({"error_details": {"notification_id": "server_error", "message": "oops"}})
    with pytest.raises(ch.ServerError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.retryable


def test_not_signed_up_says_how_to_sign_up() -> None:
    body = json.dumps({"error_details": {"notification_id": "not_signed_up", "message": "x"}})
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.code == "not_signed_up"
    assert "sign up" in caught.value.message
    assert "https://github.com/settings/copilot" in caught.value.message


def test_404_means_an_oauth_app_that_is_not_enabled_for_copilot() -> None:
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(404, '{"message": "Not Found"}'), IDENTITY)
    assert caught.value.code == "oauth_app_not_enabled"
    assert "client_id" in caught.value.message
    assert not caught.value.retryable


def test_a_personal_access_token_is_named_as_the_problem() -> None:
    body = '{"message": "Resource not accessible by personal access token"}'
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.code == "personal_access_token"
    assert "copilot-host login" in caught.value.message


def test_403_with_an_unknown_id_keeps_the_id_and_sanitized_text() -> None:
    body = json.dumps(
        {"error_details": {"notification_id": "new_reason", "message": "Ask\x1b[5m an admin"}}
    )
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.code == "new_reason"
    assert "an admin" in caught.value.message
    assert "\x1b" not in caught.value.message


@pytest.mark.parametrize(
    "body", ["", "{}", '{"error_details": 5}', '{"error_details": {"notification_id": "Bad Id!"}}']
)
def test_403_without_a_usable_id_is_still_an_entitlement_error(body: str) -> None:
    with pytest.raises(ch.EntitlementError) as caught:
        parse_exchange(response(403, body), IDENTITY)
    assert caught.value.code == "no_copilot_access"


def test_403_rate_limit_is_a_retryable_server_error() -> None:
    answer = response(403, '{"message": "API rate limit exceeded for user"}')
    with pytest.raises(ch.ServerError) as caught:
        parse_exchange(answer, IDENTITY)
    assert caught.value.code == "rate_limited"
    assert caught.value.retryable


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_one_retry_after_a_429_or_5xx(status: int, store: CredentialStore) -> None:
    slept: list[float] = []
    with GitHubEmulator(
        Scenario(faults=Faults(exchange_failures=(status,), retry_after="2"))
    ) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        with GitHubCopilotHost(store=store, transport=emu.transport(), sleep=slept.append) as host:
            session = host.exchange(identity)
        assert len(emu.requests_to("copilot_token")) == 2
    assert slept == [2.0]
    assert session.identity == identity


def test_retry_without_retry_after_uses_a_short_backoff(store: CredentialStore) -> None:
    slept: list[float] = []
    with GitHubEmulator(Scenario(faults=Faults(exchange_failures=(503,)))) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        with GitHubCopilotHost(store=store, transport=emu.transport(), sleep=slept.append) as host:
            host.exchange(identity)
    assert slept == [1.0]


def test_only_one_retry(store: CredentialStore) -> None:
    slept: list[float] = []
    with GitHubEmulator(Scenario(faults=Faults(exchange_failures=(429, 429, 429)))) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        with (
            GitHubCopilotHost(store=store, transport=emu.transport(), sleep=slept.append) as host,
            pytest.raises(ch.ServerError) as caught,
        ):
            host.exchange(identity)
        assert len(emu.requests_to("copilot_token")) == 2
    assert caught.value.code == "rate_limited"
    assert caught.value.retryable
    assert len(slept) == 1


def test_a_long_retry_after_is_not_slept_through(store: CredentialStore) -> None:
    slept: list[float] = []
    with GitHubEmulator(
        Scenario(faults=Faults(exchange_failures=(429,), retry_after="3600"))
    ) as emu:
        identity = store.save("octocat", Secret(emu.github_token)).identity
        with (
            GitHubCopilotHost(store=store, transport=emu.transport(), sleep=slept.append) as host,
            pytest.raises(ch.ServerError) as caught,
        ):
            host.exchange(identity)
        assert len(emu.requests_to("copilot_token")) == 1
    assert slept == []
    assert "3600" in caught.value.message


def test_retry_after_as_an_http_date() -> None:
    from copilot_host.github._status import retry_delay

    answer = response(
        503,
        headers={"Retry-After": _date(1_700_000_004), "Date": _date(1_700_000_000)},
        wall=1_700_000_900.0,  # the local clock is off; the server's Date decides
    )
    assert retry_delay(answer) == pytest.approx(4.0)


def test_exchange_refuses_a_changed_login(store: CredentialStore) -> None:
    with GitHubEmulator() as emu:
        old = store.save("octocat", Secret(emu.github_token)).identity
        new = store.save("hubot", Secret(emu.github_token)).identity
        with GitHubCopilotHost(store=store, transport=emu.transport()) as host:
            with pytest.raises(ch.LoginChangedError):
                host.exchange(old)
            assert host.exchange(new).identity == new
        assert len(emu.requests_to("copilot_token")) == 1


def test_exchange_when_logged_out(store: CredentialStore) -> None:
    with GitHubEmulator() as emu, GitHubCopilotHost(store=store, transport=emu.transport()) as host:
        with pytest.raises(ch.NotLoggedInError):
            host.exchange(IDENTITY)
        assert emu.requests == ()


@pytest.mark.parametrize("notification", ["no_copilot_access", "subscription_ended"])
def test_login_without_copilot_stores_nothing(
    notification: str, store: CredentialStore, clock: FakeClock
) -> None:
    with GitHubEmulator(Scenario(session=Session(entitlement=notification))) as emu:
        with (
            GitHubCopilotHost(store=store, transport=emu.transport(), clock=clock) as host,
            pytest.raises(ch.EntitlementError) as caught,
        ):
            host.login(sleep=clock.sleep)
        assert emu.requests_to("user") == ()
    assert caught.value.code == notification
    assert store.availability() is None
    assert not store.record_path.exists()


def test_availability_follows_the_store(store: CredentialStore, copilot_home: object) -> None:
    with GitHubCopilotHost(store=store) as host:
        assert host.availability() is None
        identity = (
            CredentialStore(store.home).save("octocat", Secret(canary_github_token())).identity
        )
        assert host.availability() == identity  # another process's login is seen
        assert CredentialStore(store.home).delete()
        assert host.availability() is None


def test_logout_deletes_and_reports(store: CredentialStore) -> None:
    store.save("octocat", Secret(canary_github_token()))
    with GitHubCopilotHost(store=store) as host:
        assert host.logout().removed is True
        assert host.availability() is None
        assert host.logout().removed is False
