"""Plans, limits, prices and identities the other round-4 issues script (issue 26 §2,
issue 27 §5): Auto-only plans, rate-limit windows, the catalogue's price fields, and the
Copilot CLI's identity."""

from __future__ import annotations

import urllib.parse
from typing import Any

import httpx2
import pytest

from copilot_host.testing import (
    AUTO_ONLY_PLANS,
    COPILOT_CLI_CLIENT_ID,
    GitHubEmulator,
    RateWindow,
    Scenario,
    Usage,
    realistic_models,
    token_billing,
)
from tests.testing._support import PATH, PLAIN, body, copilot

USER = "https://api.github.com/copilot_internal/user"
NOT_SUPPORTED = (
    '{"error":{"message":"The requested model is not supported.","code":"model_not_supported",'
    '"param":"model","type":"invalid_request_error"}}\n'
)
MODEL = {"chat": "gpt-4.1", "responses": "gpt-5.5", "messages": "claude-sonnet-5"}


def _model_request(emu: GitHubEmulator, protocol: str, payload: dict[str, Any]) -> httpx2.Response:
    with httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        return client.post(f"{origin}{PATH[protocol]}", json=payload, headers=headers)


# -- Auto-only plans -------------------------------------------------------------------------


@pytest.mark.parametrize("plan", sorted(AUTO_ONLY_PLANS))
@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_an_auto_only_plan_refuses_every_named_model(plan: str, protocol: str) -> None:
    with GitHubEmulator(Scenario(usage=Usage(usage_plan=plan))) as emu:
        answer = _model_request(emu, protocol, body(protocol, MODEL[protocol]))
        (record,) = emu.refusals
    assert (answer.status_code, answer.text) == (400, NOT_SUPPORTED)
    assert answer.headers["content-type"] == PLAIN and len(answer.content) == 138
    assert (record.refusal, record.model) == ("auto_only", MODEL[protocol])


def test_an_auto_only_plan_lists_no_model_in_the_picker() -> None:
    with (
        GitHubEmulator(Scenario(usage=Usage(usage_plan="student"))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        origin, headers = copilot(emu, client)
        listed = client.get(f"{origin}/models", headers=headers).json()["data"]
    assert len(listed) == len(realistic_models())
    assert {item["model_picker_enabled"] for item in listed} == {False}


def test_auto_serves_a_chat_request_without_a_model_and_names_what_it_picked() -> None:
    payload = body("chat", "x")
    del payload["model"]
    with GitHubEmulator(Scenario(usage=Usage(usage_plan="free"))) as emu:
        answer = _model_request(emu, "chat", payload)
        (record,) = emu.requests_to("chat")
        for protocol in ("responses", "messages"):
            bare = body(protocol, "x")
            del bare["model"]
            assert _model_request(emu, protocol, bare).text == NOT_SUPPORTED
    assert answer.status_code == 200
    assert answer.json()["model"] == "gpt-5-mini"  # the realistic inventory's chat default
    assert (record.model, record.refusal) == ("gpt-5-mini", None)
    assert record.limits["max_output_tokens"] == 64000


def test_auto_only_can_be_switched_either_way() -> None:
    with GitHubEmulator(Scenario(usage=Usage(usage_plan="free", auto_only=False))) as emu:
        assert _model_request(emu, "chat", body("chat", "gpt-4.1")).status_code == 200
    with GitHubEmulator(Scenario(usage=Usage(auto_only=True))) as emu:
        assert _model_request(emu, "chat", body("chat", "gpt-4.1")).status_code == 400
    assert Scenario().auto_only_plan is False


def test_the_student_plan_answers_with_the_educational_sku() -> None:
    with (
        GitHubEmulator(Scenario(usage=Usage(usage_plan="student", quota_entitlement=300))) as emu,
        httpx2.Client(transport=emu.transport()) as client,
    ):
        value = client.get(USER, headers={"Authorization": f"token {emu.github_token}"}).json()
    assert (value["access_type_sku"], value["copilot_plan"]) == (
        "free_educational_quota",
        "individual",
    )
    assert value["token_based_billing"] is True
    assert value["quota_snapshots"]["premium_interactions"]["entitlement"] == 300


# -- rate-limit windows ----------------------------------------------------------------------


def _window(answer: httpx2.Response, name: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(answer.headers[f"x-usage-ratelimit-{name}"]))


def test_by_default_only_an_unspent_session_window_is_reported() -> None:
    with GitHubEmulator() as emu:
        answers = [_model_request(emu, "chat", body("chat", "gpt-4.1")) for _ in range(3)]
    for answer in answers:
        assert _window(answer, "session")["rem"] == "100.0"
        assert "x-usage-ratelimit-weekly" not in answer.headers


def test_a_spent_weekly_window_refuses_with_429_and_retry_after() -> None:
    weekly = RateWindow(entitlement=500, remaining=15.0, per_request=10.0, resets_in=7200)
    with GitHubEmulator(Scenario(usage=Usage(weekly_window=weekly))) as emu:
        first = _model_request(emu, "chat", body("chat", "gpt-4.1"))
        second = _model_request(emu, "messages", body("messages", "claude-sonnet-5"))
        third = _model_request(emu, "responses", body("responses", "gpt-5.5"))
        refusal = emu.refusals
    assert (first.status_code, second.status_code) == (200, 200)
    assert [_window(a, "weekly")["rem"] for a in (first, second)] == ["5.0", "0.0"]
    assert _window(first, "weekly")["ent"] == "500"
    assert third.status_code == 429
    assert third.headers["content-type"] == PLAIN
    assert third.text == (
        '{"error":{"message":"Sorry, you\'ve exceeded your weekly rate limit.",'
        '"code":"user_weekly_rate_limited"}}\n'
    )
    assert 7000 <= int(third.headers["retry-after"]) <= 7200
    assert _window(third, "weekly")["rem"] == "0.0"
    assert [r.refusal for r in refusal] == ["weekly_window"]


def test_a_spent_session_window_refuses_with_its_own_code() -> None:
    session = RateWindow(remaining=0.0, resets_in=3 * 3600)
    with GitHubEmulator(Scenario(usage=Usage(session_window=session))) as emu:
        answer = _model_request(emu, "chat", body("chat", "gpt-4.1"))
    assert answer.status_code == 429
    assert '"code":"user_global_rate_limited"' in answer.text
    assert "Please try again in 3 hours." in answer.text
    assert int(answer.headers["retry-after"]) > 3 * 3600 - 120


def test_a_window_is_checked() -> None:
    with pytest.raises(ValueError, match="window"):
        RateWindow(remaining=120.0)
    with pytest.raises(ValueError, match="window"):
        RateWindow(resets_in=0)


# -- prices in the catalogue -----------------------------------------------------------------


def test_token_billing_carries_the_sdks_price_fields() -> None:
    promo = {"id": "p", "discount_percent": 12.5, "ends_at": "2027-01-01T00:00:00Z"}
    billing = token_billing(
        300,
        1500,
        cache_read_price=30,
        cache_write_price=375,
        cache_write1_h_price=600,
        max_prompt_tokens=200_000,
        promo=promo,
    )
    prices: Any = billing["token_prices"]
    assert prices["default"] == {
        "input_price": 300,
        "output_price": 1500,
        "cache_read_price": 30,
        "cache_write_price": 375,
        "cache_write1_h_price": 600,
        "max_prompt_tokens": 200_000,
    }
    assert billing["promo"] == promo and "price_unit" not in prices


def test_a_catalogue_in_nano_aiu_scales_prices_and_says_so() -> None:
    billing = token_billing(
        300, 1500, 30, max_prompt_tokens=1000, unit="nano_aiu", long_context=(600, 3000, 60, 9)
    )
    prices: Any = billing["token_prices"]
    assert prices["price_unit"] == "nano_aiu"
    assert prices["default"] == {
        "input_price": 300 * 10**9,
        "output_price": 1500 * 10**9,
        "cache_price": 30 * 10**9,
        "max_prompt_tokens": 1000,  # a count, not a price
    }
    assert prices["long_context"]["context_max"] == 9
    assert token_billing(1, 2, unit="ai_credits")["token_prices"]["price_unit"] == "ai_credits"  # type: ignore[index]
    with pytest.raises(ValueError, match="unit"):
        token_billing(1, 2, unit="dollars")


def test_the_realistic_inventory_lists_limits_defaults_and_prices_as_real_ones_do() -> None:
    models = realistic_models()
    chat = [m for m in models if m["capabilities"]["type"] == "chat"]  # type: ignore[index]
    assert all("max_prompt_tokens" in m["capabilities"]["limits"] for m in chat)  # type: ignore[index]
    defaults = [m["id"] for m in models if m.get("is_chat_default") is True]
    assert defaults == ["gpt-5-mini"]
    assert [m["id"] for m in models if m.get("is_chat_fallback") is True] == ["gpt-4.1"]
    sonnet = next(m for m in models if m["id"] == "claude-sonnet-5")
    tier = sonnet["billing"]["token_prices"]["default"]  # type: ignore[index]
    assert {"cache_read_price", "cache_write_price", "cache_write1_h_price"} <= set(tier)
    assert tier["max_prompt_tokens"] == 936_000
    promos = [m["id"] for m in models if "promo" in m.get("billing", {})]  # type: ignore[operator]
    assert promos == ["gpt-5.6-luna"]


# -- the Copilot CLI's identity --------------------------------------------------------------

CLI_HEADERS = {
    "Editor-Version": "copilot/1.0.102",
    "Copilot-Integration-Id": "copilot-developer-cli",
    "User-Agent": "copilot/1.0.102 (linux v24.11.1) term/xterm-256color",
}


def _login(client: httpx2.Client, client_id: str) -> str:
    code = client.post(
        "https://github.com/login/device/code",
        data={"client_id": client_id, "scope": "read:user"},
        headers={"Accept": "application/json"},
    ).json()["device_code"]
    token: str = client.post(
        "https://github.com/login/oauth/access_token",
        data={
            "client_id": client_id,
            "device_code": code,
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        },
        headers={"Accept": "application/json"},
    ).json()["access_token"]
    return token


def test_the_copilot_cli_identity_is_served_with_its_apps_github_token() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        token = _login(client, COPILOT_CLI_CLIENT_ID)
        headers = {"Authorization": f"Bearer {token}", **CLI_HEADERS}
        origin = "https://api.individual.githubcopilot.com"
        listed = client.get(f"{origin}/models", headers=headers)
        answer = client.post(
            f"{origin}/chat/completions", json=body("chat", "gpt-4.1"), headers=headers
        )
        exchanged = client.get(
            "https://api.github.com/copilot_internal/v2/token",
            headers={"Authorization": f"token {token}"},
        )
        emu.assert_no_refusals()
    assert (listed.status_code, answer.status_code, exchanged.status_code) == (200, 200, 200)


def test_a_github_token_of_an_app_not_enabled_for_copilot_is_no_bearer() -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        token = _login(client, "Ov23liSomeoneElse")
        answer = client.get(
            "https://api.individual.githubcopilot.com/models",
            headers={"Authorization": f"Bearer {token}", **CLI_HEADERS},
        )
    assert (answer.status_code, answer.text) == (401, "unauthorized: token expired\n")
