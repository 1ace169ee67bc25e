"""``usage()``: the account's plan and quotas from ``/copilot_internal/user``, sync and
async, against the strict emulator and as a sans-IO parse of real answer shapes."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import httpx2
import pytest

import copilot_host as ch
from copilot_host._safety._secret import Secret
from copilot_host.github import AsyncGitHubCopilotHost, EditorIdentity, GitHubCopilotHost
from copilot_host.github._headers import DEFAULT_EDITOR, TOKEN_API_VERSION
from copilot_host.github._usage import build_usage_request, parse_usage
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    RawAnswer,
    Scenario,
    Usage,
    minimal_models,
)

from ._support import canary_github_token, response


def _login(host: GitHubCopilotHost) -> None:
    host.login(sleep=lambda _seconds: None)


def _premium(usage: ch.CopilotUsage) -> ch.Quota:
    return next(q for q in usage.quotas if q.id == "premium_interactions")


def test_credit_billed_account_sync(store: CredentialStore) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()),
        usage=Usage(quota_entitlement=1500, quota_used=1499.5, overage_permitted=False),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        _login(host)
        usage = host.usage()
        sent = emu.requests_to("copilot_user")
    assert usage.login == "octocat"
    assert usage.plan == "individual_pro"
    assert usage.unit == "credits"
    assert usage.reset_at is not None and usage.reset_at.tzinfo is not None
    assert (usage.reset_at.day, usage.reset_at.hour) == (1, 0)
    premium = _premium(usage)
    assert (premium.entitlement, premium.remaining, premium.used) == (1500.0, 0.5, 1499.5)
    assert premium.percent_remaining == pytest.approx(0.5 / 1500 * 100)
    assert (premium.unlimited, premium.overage_permitted) == (False, False)
    chat = next(q for q in usage.quotas if q.id == "chat")
    assert chat.unlimited and chat.used is None
    # The GitHub token, on api.github.com, with the exchange's API version and editor.
    assert len(sent) == 1
    headers = sent[0].headers
    assert headers["authorization"] == f"token {emu.github_token}"
    assert headers["x-github-api-version"] == TOKEN_API_VERSION
    assert headers["editor-version"] == DEFAULT_EDITOR.editor_version


def test_request_billed_and_free_accounts_async(store: CredentialStore) -> None:
    async def read(scenario: Scenario) -> ch.CopilotUsage:
        with GitHubEmulator(scenario) as emu:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:
                await host.login(sleep=lambda _s: asyncio.sleep(0))
                return await host.usage()

    requests = asyncio.run(
        read(
            Scenario(
                usage=Usage(
                    usage_plan="requests",
                    quota_entitlement=300,
                    quota_used=301.5,
                    overage_permitted=True,
                )
            )
        )
    )
    assert requests.unit == "requests"
    premium = _premium(requests)
    # Real answers go negative once overage is used; used is still entitlement - remaining.
    assert (premium.remaining, premium.used, premium.overage_permitted) == (-1.5, 301.5, True)

    free = asyncio.run(
        read(Scenario(usage=Usage(usage_plan="free", quota_entitlement=50, quota_used=10)))
    )
    assert (free.plan, free.unit) == ("free", "requests")
    by_id = {q.id: q for q in free.quotas}
    assert (by_id["chat"].entitlement, by_id["chat"].remaining, by_id["chat"].used) == (
        50.0,
        40.0,
        10.0,
    )
    assert by_id["chat"].percent_remaining == 80.0
    assert free.reset_at is not None and free.reset_at.hour == 0


def test_usage_needs_a_login(store: CredentialStore) -> None:
    with GitHubEmulator() as emu, GitHubCopilotHost(store=store, transport=emu.transport()) as host:
        with pytest.raises(ch.NotLoggedInError):
            host.usage()
        assert not emu.requests


@pytest.mark.parametrize(
    ("answer", "error", "code"),
    [
        (RawAnswer(body=b'{"quota_snapshots": []}'), ch.ResponseError, "bad_response"),
        (RawAnswer(body=b'{"quota_snapshots": {"chat": 5}}'), ch.ResponseError, "bad_response"),
        (RawAnswer(body=b"[1, 2]"), ch.ResponseError, "bad_response"),
        (
            RawAnswer(status=404, body=b'{"message":"Not Found"}'),
            ch.EntitlementError,
            "usage_unavailable",
        ),
        (
            RawAnswer(status=403, body=b'{"message":"Forbidden"}'),
            ch.EntitlementError,
            "usage_unavailable",
        ),
    ],
)
def test_a_malformed_or_refused_answer_is_a_typed_error(
    store: CredentialStore, answer: RawAnswer, error: type[ch.CopilotHostError], code: str
) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()),
        faults=Faults(answers={"copilot_user": answer}),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        _login(host)
        before = store.load()[0]
        with pytest.raises(error) as raised:
            host.usage()
    assert raised.value.code == code
    assert emu.github_token not in str(raised.value)
    assert store.load()[0] == before  # the login is untouched


@pytest.mark.parametrize("endpoint", ["copilot_user", "copilot_token", "models"])
def test_quota_exceeded_is_typed_and_says_when_it_resets(
    store: CredentialStore, endpoint: str
) -> None:
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()),
        usage=Usage(quota_exceeded_on=frozenset({endpoint})),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        if endpoint != "copilot_token":
            _login(host)
        with pytest.raises(ch.QuotaExceededError) as raised:
            if endpoint == "copilot_user":
                host.usage()
            elif endpoint == "models":
                ch.register_models(ch.Catalog(), host)
            else:
                # The login's entitlement check is an exchange: nothing is stored.
                _login(host)
        if endpoint == "copilot_token":
            assert host.availability() is None
    error = raised.value
    assert error.code == "quota_exceeded"
    assert error.reset_at is not None and error.reset_at.day == 1
    assert f"resets on {error.reset_at:%Y-%m-%d}" in error.message
    assert emu.github_token not in error.message


# -- the parse, on answer shapes the reference clients read ---------------------------------


def test_parse_reads_fractions_unknown_fields_and_fallback_reset_dates() -> None:
    body = {
        "copilot_plan": "business",
        "token_based_billing": True,
        "quota_reset_date": "2026-12-01",
        "brand_new_field": {"anything": [1]},
        "quota_snapshots": {
            "premium_interactions": {
                "entitlement": 300,
                "quota_remaining": 12.25,
                "percent_remaining": 4.08,
                "unlimited": False,
                "overage_permitted": False,
            },
            "some_future_quota": {"unlimited": True},
        },
    }
    usage = parse_usage(response(200, json.dumps(body)), "octocat")
    assert usage == ch.CopilotUsage(
        login="octocat",
        plan="business",
        unit="credits",
        reset_at=datetime(2026, 12, 1, tzinfo=UTC),
        quotas=(
            ch.Quota("premium_interactions", 300.0, 12.25, 287.75, 4.08, False, False),
            ch.Quota("some_future_quota", None, None, None, None, True, False),
        ),
    )
    free = parse_usage(
        response(200, json.dumps({"limited_user_reset_date": "2027-01-01"})), "someone"
    )
    assert free.reset_at == datetime(2027, 1, 1, tzinfo=UTC)
    assert free.quotas == ()


@pytest.mark.parametrize(
    "body",
    [
        {"quota_snapshots": {"chat": {"entitlement": "many"}}},
        {"quota_snapshots": {"chat": {"unlimited": "yes"}}},
        {"copilot_plan": 7},
        {"token_based_billing": "true"},
        {"monthly_quotas": [50]},
    ],
)
def test_parse_refuses_malformed_fields(body: dict[str, object]) -> None:
    with pytest.raises(ch.ResponseError):
        parse_usage(response(200, json.dumps(body)), "octocat")


def test_the_github_token_never_reaches_a_message_or_repr() -> None:
    token = canary_github_token()
    request = build_usage_request(Secret(token), EditorIdentity())
    assert token not in repr(request)
    assert httpx2.URL(request.url).host == "api.github.com"
    echoed = response(500, json.dumps({"message": f"bad {token}"}))
    ch.register_secret(Secret(token))
    with pytest.raises(ch.ServerError) as raised:
        parse_usage(echoed, "octocat")
    assert token not in str(raised.value)


@pytest.mark.parametrize(
    ("fields", "auto_only", "shown"),
    [
        ({"access_type_sku": "free_limited_copilot", "copilot_plan": "free"}, True, "free"),
        ({"access_type_sku": "free_educational_quota"}, True, "free_educational_quota"),
        ({"access_type_sku": "free_educational_quota", "copilot_plan": "student"}, True, "student"),
        ({"copilot_plan": "free"}, True, "free"),
        (
            {"access_type_sku": "plus_monthly_subscriber_quota", "copilot_plan": "individual_pro"},
            False,
            None,
        ),
        ({"access_type_sku": 5, "copilot_plan": "business"}, False, None),
        ({}, False, None),
    ],
)
def test_plans_that_can_use_only_auto_are_read_from_the_sku_and_the_plan(
    fields: dict[str, object], auto_only: bool, shown: str | None
) -> None:
    usage = parse_usage(response(200, json.dumps({"login": "octocat", **fields})), "octocat")
    assert usage.auto_only is auto_only
    line = usage.auto_only_line()
    if shown is None:
        assert line is None
    else:
        assert line == (
            f"this plan ({shown}) can use only Auto model selection; requests that name a "
            "model are refused: use the model auto"
        )


def test_overage_in_use_and_whether_an_exhausted_quota_still_serves(
    store: CredentialStore,
) -> None:
    over = Scenario(
        inventory=Inventory(models=minimal_models()),
        usage=Usage(quota_entitlement=1500, quota_used=1600.5),
    )
    spent = Scenario(
        inventory=Inventory(models=minimal_models()),
        usage=Usage(quota_entitlement=300, quota_used=300, overage_permitted=False),
    )
    found = []
    for scenario in (over, spent):
        with (
            GitHubEmulator(scenario) as emu,
            GitHubCopilotHost(store=store, transport=emu.transport()) as host,
        ):
            _login(host)
            found.append(_premium(host.usage()))
    premium, exhausted = found
    # Past the entitlement: remaining negative, the answer's overage_count, still usable.
    assert (premium.remaining, premium.overage_count) == (-100.5, 100.5)
    assert (premium.overage_in_use, premium.overage_permitted, premium.usable) == (
        True,
        True,
        True,
    )
    # Used up on a plan without overage: no overage in use, and no longer usable.
    assert (exhausted.remaining, exhausted.overage_count) == (0.0, 0.0)
    assert (exhausted.overage_in_use, exhausted.usable) == (False, False)


def test_rate_windows_come_from_the_answer_that_reported_them(store: CredentialStore) -> None:
    plain = Scenario(inventory=Inventory(models=minimal_models()))
    with (
        GitHubEmulator(plain) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        _login(host)
        usual = host.usage()
    # The emulator, like every source read, reports no window on copilot_internal/user.
    assert usual.rate_windows == ()
    answer = RawAnswer(
        body=json.dumps({"login": "octocat", "copilot_plan": "individual_pro"}).encode(),
        headers=(
            ("Content-Type", "application/json"),
            ("x-usage-ratelimit-session", "ent=50&rem=12.5&rst=2026-12-02T18%3A00%3A00Z"),
            ("x-usage-ratelimit-weekly", "ent=abc&rem=nope"),
        ),
    )
    scenario = Scenario(
        inventory=Inventory(models=minimal_models()),
        faults=Faults(answers={"copilot_user": answer}),
    )
    with (
        GitHubEmulator(scenario) as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        usage = host.usage()
    (session,) = usage.rate_windows  # the unreadable weekly value is left out, no failure
    assert (session.id, session.entitlement, session.percent_remaining) == ("session", 50, 12.5)
    assert session.reset_at == datetime(2026, 12, 2, 18, tzinfo=UTC)
