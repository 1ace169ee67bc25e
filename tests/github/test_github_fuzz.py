"""Fuzzing every parser: whatever bytes, JSON, status and headers arrive, the only
exceptions are CopilotHostError subclasses (never KeyError, TypeError, ValueError...)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host.github._device_code import parse_device_code
from copilot_host.github._discovery import parse_models
from copilot_host.github._exchange import parse_exchange
from copilot_host.github._poll import parse_poll
from copilot_host.github._status import retry_delay
from copilot_host.github._user import parse_user
from copilot_host.github._wire import WireResponse
from copilot_host.testing import chat_model
from tests._json_strategies import json_values
from tests.github._support import DEVICE_PAGE, device_login

FUZZ = settings(suppress_health_check=[HealthCheck.too_slow])

any_json = json_values()
statuses = st.sampled_from([200, 200, 200, 400, 401, 403, 404, 429, 500, 503]) | st.integers(
    100, 599
)
header_values = st.text(max_size=40) | st.sampled_from(
    ["0", "5", "3600", "Wed, 21 Oct 2015 07:28:00 GMT"]
)
headers = st.dictionaries(
    st.sampled_from(["retry-after", "date", "x-ratelimit-remaining", "content-type"]),
    header_values,
    max_size=4,
)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def _near(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """A valid body with some of its fields (any subset, most often one or two, so the
    checks after the first one are reached) replaced by arbitrary JSON or removed, plus
    unknown fields."""
    missing = object()
    names = sorted(valid)
    replacement = any_json | st.just(missing)
    extra = st.dictionaries(st.text(max_size=12), any_json, max_size=3)

    @st.composite
    def bodies(draw: st.DrawFn) -> bytes:
        body = dict(valid)
        for name in sorted(draw(st.sets(st.sampled_from(names)))):
            body[name] = draw(replacement)
        kept = {k: v for k, v in body.items() if v is not missing}
        return _dumps({**draw(extra), **kept})

    return bodies()


def _bodies(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    return st.one_of(_near(valid), any_json.map(_dumps), st.binary(max_size=200))


def _answers(valid: dict[str, Any]) -> st.SearchStrategy[WireResponse]:
    return st.builds(
        lambda status, body, hdrs, at: WireResponse(status, hdrs, body, at, 1_700_000_000.0),
        statuses,
        _bodies(valid),
        headers,
        st.floats(min_value=0, max_value=1e9),
    )


def _only_typed_errors(parse: Callable[[], object]) -> None:
    """Any other exception fails the example; typed ones must carry a clean message."""
    error: ch.CopilotHostError | None = None
    try:
        parse()
    except ch.CopilotHostError as caught:
        error = caught
    if error is not None:
        assert error.code
        assert error.message
        assert "\n" not in error.message
        assert "\x1b" not in error.message


DEVICE = {
    "device_code": "3584d83530557fdd1f46af8289938c8ef79f9dc5",
    "user_code": "WDJB-MJHT",
    "verification_uri": DEVICE_PAGE,
    "expires_in": 900,
    "interval": 5,
}
POLL = {
    "access_token": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "error": "slow_down",
    "interval": 7,
}
EXCHANGE = {
    "token": "tid=abc;exp=1700001800:deadbeef",
    "expires_at": 1_700_001_800,
    "refresh_in": 1500,
    "endpoints": {"api": "https://api.githubcopilot.com"},
    "sku": "copilot_for_individuals",
    "error_details": {"notification_id": "no_copilot_access", "message": "no"},
}
USER = {"login": "octocat", "id": 1}


@FUZZ
@given(_answers(DEVICE))
def test_fuzz_device_code(answer: WireResponse) -> None:
    def parse() -> None:
        login = parse_device_code(answer)
        assert login.verification_uri == DEVICE_PAGE
        assert 1.0 <= login.interval <= 900.0
        assert 0 < login.expires_in <= 900.0
        assert math.isfinite(login.deadline)

    _only_typed_errors(parse)


@FUZZ
@given(_answers(POLL), st.floats(min_value=1, max_value=900))
def test_fuzz_poll(answer: WireResponse, interval: float) -> None:
    def parse() -> None:
        outcome = parse_poll(answer, device_login(interval=interval))
        if isinstance(outcome, ch.Pending):
            assert outcome.interval >= interval  # never faster than before

    _only_typed_errors(parse)


@FUZZ
@given(_answers(EXCHANGE))
def test_fuzz_exchange(answer: WireResponse) -> None:
    def parse() -> None:
        session = parse_exchange(answer, ch.LoginIdentity("id", "octocat"))
        assert session.endpoint in ch.default_allowlist()
        assert session.received_monotonic <= session.refresh_monotonic <= session.expires_monotonic

    _only_typed_errors(parse)


@FUZZ
@given(_answers(USER))
def test_fuzz_user(answer: WireResponse) -> None:
    _only_typed_errors(lambda: parse_user(answer))


def _model_items() -> st.SearchStrategy[Any]:
    base = chat_model("gpt-x", vision=True, reasoning=True, endpoints=("/responses",))
    nested = {
        "capabilities": st.fixed_dictionaries(
            {
                "type": st.sampled_from(["chat", "embeddings"]) | any_json,
                "limits": st.fixed_dictionaries(
                    {
                        "max_context_window_tokens": st.integers(-5, 10**9) | any_json,
                        "max_output_tokens": st.integers(-5, 10**9) | any_json,
                    }
                )
                | any_json,
                "supports": st.fixed_dictionaries(
                    {"vision": any_json, "reasoning_effort": any_json}
                )
                | any_json,
            }
        )
        | any_json,
        "policy": st.fixed_dictionaries(
            {"state": st.sampled_from(["enabled", "disabled"]) | any_json}
        )
        | any_json,
        "supported_endpoints": st.lists(
            st.sampled_from(["/chat/completions", "/responses", "/v1/messages"])
            | st.text(max_size=8),
            max_size=4,
        )
        | any_json,
        "id": st.sampled_from(["gpt-4.1", "o3", "bad id", ""]) | any_json,
        "name": st.text(max_size=20) | any_json,
        "model_picker_enabled": any_json,
    }
    return st.one_of(
        st.just(base),
        st.fixed_dictionaries({}, optional=nested),
        any_json,
    )


models_bodies = st.one_of(
    st.lists(_model_items(), max_size=6).map(lambda items: _dumps({"data": items})),
    any_json.map(_dumps),
    st.binary(max_size=100),
)


@FUZZ
@given(statuses, models_bodies, headers)
def test_fuzz_models(status: int, body: bytes, hdrs: dict[str, str]) -> None:
    answer = WireResponse(status, hdrs, body, 0.0, 1_700_000_000.0)

    def parse() -> None:
        inventory = parse_models(answer)
        for spec in inventory.models:
            assert isinstance(spec.protocol, ch.ApiProtocol)
            assert spec.protocol in spec.protocols
        for entry in inventory.skipped:
            assert isinstance(entry.reason, str) and entry.reason

    _only_typed_errors(parse)


@FUZZ
@given(statuses, headers)
def test_fuzz_retry_delay(status: int, hdrs: dict[str, str]) -> None:
    delay = retry_delay(WireResponse(status, hdrs, b"", 0.0, 1_700_000_000.0))
    assert delay is None or 0.0 <= delay <= 10.0
