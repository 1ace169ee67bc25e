"""What requests cost, through the gateway: the quota headers relayed, the cost each answer
reports in the access line (whole and streamed, all three APIs, read through the official
SDKs), the budget, the low-quota warning, the service's own 402, and the stop line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from copilot_host.gateway._app._admit import SAFE_BUDGET_MESSAGE
from copilot_host.gateway._app._admit import spent as spent_refusal
from copilot_host.gateway._app._costs import answer_cost, events_cost
from copilot_host.gateway._app._spend import Spend, format_credits
from copilot_host.testing import GitHubEmulator, Scenario, Usage
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

COST = "0.0425"  # the emulator's default cost per answer, in AI credits


@pytest.fixture
def gateway(emulator: GitHubEmulator, tmp_path: Path) -> Iterator[Gateway]:
    with running_gateway(emulator, tmp_path / "home") as running:
        yield running
        assert_no_leaks(running)


def _credits(gateway: Gateway) -> list[str]:
    return [
        line.rsplit("credits=", 1)[1]
        for line in gateway.access.lines
        if line.startswith("POST ") and "credits=" in line
    ]


def _quota_headers(headers: object) -> dict[str, str]:
    items = headers.items()  # type: ignore[attr-defined]
    return {k.lower(): v for k, v in items if k.lower().startswith(("x-quota-", "x-usage-"))}


def test_openai_sdk_reads_quota_headers_and_every_answer_costs(gateway: Gateway) -> None:
    client = gateway.openai()
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
    )
    assert raw.parse().choices[0].message.content == "echo: Hi"
    quota = _quota_headers(raw.headers)
    assert set(quota) == {"x-quota-snapshot-premium_interactions", "x-usage-ratelimit-session"}
    assert "rem=" in quota["x-quota-snapshot-premium_interactions"]
    stream = client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    with client.responses.with_streaming_response.create(
        model="gpt-5-mini", input="Hi", stream=True
    ) as streamed:
        assert _quota_headers(streamed.headers)
        events = list(streamed.parse())
    assert events[-1].type == "response.completed"
    whole = client.responses.create(model="gpt-5-mini", input="Hi")
    assert whole.output_text
    assert _credits(gateway) == [COST] * 4


def test_anthropic_sdk_reads_quota_headers_and_every_answer_costs(gateway: Gateway) -> None:
    client = gateway.anthropic()
    raw = client.messages.with_raw_response.create(
        model="claude-sonnet-4.6", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
    )
    assert raw.parse().content[0].type == "text"
    assert "x-quota-snapshot-premium_interactions" in _quota_headers(raw.headers)
    with client.messages.stream(
        model="claude-sonnet-4.6", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
    ) as stream:
        assert stream.get_final_text()
    assert _credits(gateway) == [COST, COST]


def test_budget_refuses_in_each_apis_shape_once_reported_costs_reach_it(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    with running_gateway(emulator, tmp_path / "home", max_credits=0.1) as gateway:
        client = gateway.openai()
        for _ in range(3):  # 0.0425, 0.085, 0.1275: the third reaches the budget
            client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
            )
        with pytest.raises(openai.APIStatusError) as refused:
            gateway.openai(max_retries=2).chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
            )
        # 402, final: the SDK sent it once (no retry), and clients read the type as such.
        assert refused.value.status_code == 402
        assert refused.value.code == "budget_exhausted"
        assert refused.value.type == "insufficient_quota"
        assert refused.value.response.headers["x-should-retry"] == "false"
        assert "--max-credits" in refused.value.message
        with pytest.raises(anthropic.APIStatusError) as refused_too:
            gateway.anthropic().messages.create(
                model="claude-sonnet-4.6",
                max_tokens=64,
                messages=[{"role": "user", "content": "Hi"}],
            )
        assert refused_too.value.status_code == 402
        assert refused_too.value.body["error"]["type"] == "billing_error"  # type: ignore[index]
        # Sent as Codex CLI (its originator header): 400, the status it stops on.
        codex = gateway.openai(default_headers={"originator": "codex_exec"}, max_retries=2)
        with pytest.raises(openai.BadRequestError) as as_codex:
            codex.responses.create(model="gpt-5-mini", input="Hi")
        assert as_codex.value.code == "budget_exhausted"
        refusals = [line for line in gateway.access.lines if " status=40" in line]
        # The model list still answers: only model requests are refused.
        assert [m.id for m in client.models.list()]
        sent = len(emulator.requests_to("chat"))
        notices = [line for line in gateway.access.lines if line.startswith("budget reached")]
        totals = gateway.app.spend.totals()
    assert sent == 3
    assert len(notices) == 1
    # One each: neither SDK retried.
    assert [line.split(" status=")[1][:3] for line in refusals] == ["402", "402", "400"]
    # What the stop line says of spend (serve and run write it).
    assert totals.startswith("3 model requests, credits 0.1275")
    assert "gpt-4.1 3/0.1275" in totals


@pytest.mark.parametrize(
    "emulator", [Scenario(usage=Usage(quota_entitlement=10, quota_used=9.4))], indirect=True
)
def test_a_quota_under_ten_percent_warns_once(gateway: Gateway) -> None:
    client = gateway.openai()
    for _ in range(2):
        client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
        )
    warnings = [line for line in gateway.access.lines if "running low" in line]
    assert warnings == [
        "quota premium_interactions is running low: 5.6% left "
        "(`copilot-host usage` shows the details)"
    ]


@pytest.mark.parametrize(
    "emulator",
    [
        Scenario(
            usage=Usage(
                usage_plan="requests", quota_entitlement=1, quota_used=1, overage_permitted=False
            )
        )
    ],
    indirect=True,
)
def test_the_services_402_is_relayed_as_it_is(gateway: Gateway) -> None:
    with pytest.raises(openai.APIStatusError) as raised:
        gateway.openai().chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.status_code == 402
    assert raised.value.code == "quota_exceeded"
    assert "x-quota-snapshot-premium_interactions" in _quota_headers(raw_headers(raised.value))
    assert _credits(gateway) == []


def raw_headers(error: openai.APIStatusError) -> object:
    return error.response.headers


# -- the pure reading ------------------------------------------------------------------------


def test_cost_is_read_where_the_service_puts_it() -> None:
    nano = b'{"total_nano_aiu": 42500000}'
    assert answer_cost(b'{"id": "x", "copilot_usage": ' + nano + b"}") == 0.0425
    assert answer_cost(b'{"usage": {"copilot_usage": ' + nano + b"}}") == 0.0425
    assert answer_cost(b'{"id": "no cost here"}') is None
    assert answer_cost(b'{"copilot_usage": {"total_nano_aiu": "lots"}}') is None
    assert answer_cost(b"not json total_nano_aiu") is None
    chunk = (
        b"event: response.completed\r\n"
        b'data: {"type":"response.completed","response":{"copilot_usage":' + nano + b"}}\r\n\r\n"
        b'data: {"type":"message_delta","usage":{"copilot_usage":' + nano + b"}}\n\n"
        b'data: {"message":{"copilot_usage":{"total_nano_aiu":-5}}}\n\n'
        b"data: [DONE]\n\n"
    )
    assert events_cost(chunk) == pytest.approx(0.085)
    assert events_cost(b'data: {"choices": []}\n\n') is None


def test_a_cost_past_what_a_float_holds_is_no_cost() -> None:
    """A JSON integer has no bound: one no float holds was an OverflowError in the cost
    reader, a 500 for a whole answer and a cut stream."""
    huge = b"1" + b"0" * 400
    assert answer_cost(b'{"copilot_usage": {"total_nano_aiu": ' + huge + b"}}") is None
    assert answer_cost(b'{"copilot_usage": {"total_nano_aiu": -' + huge + b"}}") is None
    assert answer_cost(b'{"copilot_usage": {"total_nano_aiu": 1e400}}') is None
    assert (
        events_cost(b'data: {"usage": {"copilot_usage": {"total_nano_aiu": ' + huge + b"}}}\n\n")
        is None
    )
    assert answer_cost(b'{"copilot_usage": {"total_nano_aiu": 42500000}}') == 0.0425


def test_credits_show_up_to_four_decimals() -> None:
    assert [format_credits(c) for c in (0.0425, 12.0, 0.00004, 1.23456)] == [
        "0.0425",
        "12",
        "0",
        "1.2346",
    ]


def test_spend_rejects_a_budget_that_is_not_positive() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="max_credits"):
            Spend(bad)


@pytest.mark.parametrize(
    "emulator",
    [
        Scenario(
            usage=Usage(
                usage_plan="requests", quota_entitlement=2, quota_used=0, overage_permitted=False
            )
        )
    ],
    indirect=True,
)
def test_a_scripted_quota_runs_out_and_the_model_list_carries_prices(gateway: Gateway) -> None:
    client = gateway.openai()
    for _ in range(2):
        client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
        )
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.status_code == 402
    assert gateway.emulator.quota_used == 2
    status, _, listed = gateway.get("/v1/models")
    assert status == 200
    opus = next(m for m in listed["data"] if m["id"] == "claude-opus-4.8")
    assert opus["billing"]["multiplier"] == 3.0
    prices = opus["billing"]["prices"]
    assert (prices["input_per_million"], prices["output_per_million"]) == (500.0, 2500.0)
    assert prices["long_context"]["input_per_million"] == 1000.0


@pytest.mark.parametrize(
    "emulator", [Scenario(usage=Usage(quota_exceeded_on=frozenset({"models"})))], indirect=True
)
def test_a_402_at_discovery_reaches_the_client_as_quota_exceeded(gateway: Gateway) -> None:
    status, _, body = gateway.get("/v1/models")
    assert status == 402
    assert body["error"]["code"] == "quota_exceeded"
    assert "resets on" in body["error"]["message"]


@pytest.mark.parametrize(
    ("budget", "spent", "numbers"),
    [
        (1, 1.2, True),
        (500, 500.5, False),
        (25, 42.9, True),
        (1000, 1429, False),
        (0.5, 0.524, False),
    ],
)
def test_the_budgets_message_never_reads_as_a_retryable_error(
    budget: float, spent: float, numbers: bool
) -> None:
    """opencode retries any error whose message holds 429, 500, 502, 503, 504 or 524 (or
    words such as "rate limit"): a budget whose numbers would is told without them."""
    spend = Spend(budget)
    spend.record("gpt-4.1", spent)
    refused = spent_refusal(spend, 402)
    assert refused is not None
    assert (refused.status, refused.code) == (402, "budget_exhausted")
    assert refused.headers == ((b"x-should-retry", b"false"),)
    assert "--max-credits" in refused.message
    assert (format_credits(budget) in refused.message) is numbers
    if not numbers:
        assert refused.message == SAFE_BUDGET_MESSAGE
    for word in ("429", "500", "502", "503", "504", "524", "rate limit", "try again"):
        assert word not in refused.message


def test_a_token_count_past_64_bits_is_no_count() -> None:
    """What an answer says it counted goes to the ledger's 64-bit integers: a JSON integer
    past them (an answer's ``usage`` is the upstream's to write) is no count, as a string
    is, and the sum of three counts stays within them."""
    from copilot_host.gateway._protocols import CHAT, MESSAGES, RESPONSES

    huge, most = 2**64, 2**53
    assert RESPONSES.tokens({"usage": {"input_tokens": huge, "output_tokens": 7}}) == (
        None,
        7,
        None,
    )
    assert CHAT.tokens({"usage": {"prompt_tokens": 10**400, "completion_tokens": "9"}}) == (
        None,
        None,
        None,
    )
    usage = {
        "input_tokens": most,
        "cache_read_input_tokens": most,
        "cache_creation_input_tokens": most + 1,
        "output_tokens": -1,
    }
    assert MESSAGES.tokens({"message": {"usage": usage}}) == (2 * most, None, most)


def test_quota_headers_repeated_unchanged_are_not_read_again_and_a_change_is() -> None:
    warnings: list[str] = []
    spend = Spend(warn=warnings.append)
    name = "x-quota-snapshot-premium_interactions"
    plenty = ((name, "ent=300&ov=0.0&ovPerm=false&rem=50.0&rst=2027-01-01T00:00:00Z"),)
    low = ((name, "ent=300&ov=0.0&ovPerm=false&rem=4.0&rst=2027-01-01T00:00:00Z"),)
    spend.quota(plenty)
    spend.quota(plenty)
    assert warnings == []
    spend.quota(low)  # another value of the same header: read, and under 10% left
    spend.quota(low)
    spend.quota(plenty)
    spend.quota(low)  # warned once per quota per start, however it comes back
    assert warnings == [
        "quota premium_interactions is running low: 4.0% left "
        "(`copilot-host usage` shows the details)"
    ]
