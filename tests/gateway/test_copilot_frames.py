"""Copilot's socket frames read as the gateway reads them: the type without a parse, the
nested errors sorted as VS Code sorts them, the quota snapshots as quota headers; no JSON
value in any field makes one of them raise."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from hypothesis import given

from copilot_host.gateway._app._copilot_frames import (
    FORGOTTEN,
    RECONNECT,
    RESCUE,
    Refused,
    error_of,
    frame_kind,
    quota_headers,
    sse,
)
from tests._json_strategies import json_values


def _error(code: str, message: str = "words") -> dict[str, Any]:
    return {"type": "error", "error": {"code": code, "message": message}}


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("rate_limited", 429),
        ("user_global_rate_limited:enterprise", 429),
        ("model_overloaded", 429),
        ("quota_exceeded", 402),
        ("free_quota_exceeded", 402),
        ("content_filter", 400),
        ("not_found", 404),
        ("request_too_large", 413),
        ("bad_request", 400),
    ],
)
def test_a_refusal_is_the_http_answer_it_stands_for(code: str, status: int) -> None:
    found = error_of(_error(code, "the reason"))
    assert isinstance(found, Refused) and found.status == status
    assert json.loads(found.body)["error"] == {
        "message": "the reason",
        "type": "rate_limit_error" if status == 429 else "invalid_request_error",
        "code": code,
    }


@pytest.mark.parametrize(
    ("code", "meaning"),
    [
        ("previous_response_not_found", FORGOTTEN),
        ("session_expired", RECONNECT),
        ("websocket_connection_limit_reached", RECONNECT),
        ("internal_error", RESCUE),
        ("service_unavailable", RESCUE),
        ("never_seen_before", RESCUE),
    ],
)
def test_what_is_not_the_clients_to_see(code: str, meaning: str) -> None:
    assert error_of(_error(code)) == meaning


def test_the_type_is_read_without_a_parse_when_it_comes_first() -> None:
    assert frame_kind(b'{"type":"response.output_text.delta","delta":"x"}') == (
        "response.output_text.delta"
    )
    assert frame_kind(b'{"delta":"x","type":"response.completed"}') == "response.completed"
    assert frame_kind(b'{"type":"a\\"b"}') == 'a"b'
    assert frame_kind(b"not json") is None
    assert sse("response.completed", b"{}") == b"event: response.completed\ndata: {}\n\n"
    assert sse(None, b"{}") == b"data: {}\n\n"


def test_quota_snapshots_become_the_headers_vs_code_reads() -> None:
    (header,) = quota_headers(
        {
            "premium_interactions": {
                "entitlement": "1500",
                "percent_remaining": 3.5,
                "overage_permitted": True,
                "overage_count": 0,
                "reset_date": "2027-01-01T00:00:00Z",
            }
        }
    )
    name, value = header
    assert name == "x-quota-snapshot-premium_interactions"
    assert dict(urllib.parse.parse_qsl(value)) == {
        "ent": "1500",
        "rem": "3.5",
        "ovPerm": "true",
        "ov": "0",
        "rst": "2027-01-01T00:00:00Z",
    }


@given(json_values())
def test_no_json_value_makes_a_reader_raise(value: Any) -> None:
    for frame in (value, {"type": "error", "error": value}, {"error": {"code": value}}):
        if isinstance(frame, dict):
            error_of(frame)
    quota_headers(value)
    quota_headers({"chat": value})
    frame_kind(json.dumps(value).encode())
