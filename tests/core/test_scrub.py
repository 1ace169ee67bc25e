"""Secrets split by invisible characters are masked before the characters are removed."""

from __future__ import annotations

import json
import logging
import secrets

import pytest

from copilot_host import Secret
from copilot_host._redact import RedactingFilter, register_secret, scrub
from copilot_host.github._status import status_error
from copilot_host.github._wire import WireResponse

SPLITTERS = ["\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u00ad", "\u2028"]


def _split(token: str, splitter: str) -> str:
    return token[:9] + splitter + token[9:20] + splitter + token[20:]


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_scrub_masks_a_split_registered_secret(splitter: str) -> None:
    registered = Secret("opaque-" + secrets.token_hex(12))  # no token shape: exact value only
    register_secret(registered)
    shaped = "gho_" + secrets.token_hex(18)
    for token in (registered.reveal(), shaped):
        shown = scrub(f"bad credentials {_split(token, splitter)} here")
        assert token not in shown
        assert "[REDACTED]" in shown


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_a_server_error_echoing_a_split_token_does_not_reassemble_it(splitter: str) -> None:
    token = Secret("gho_" + secrets.token_hex(18))
    register_secret(token)
    body = json.dumps({"message": f"bad credentials {_split(token.reveal(), splitter)}"})
    error = status_error(WireResponse(500, {}, body.encode(), 0.0, 0.0), "GitHub's test step")
    assert token.reveal() not in str(error)


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_log_records_lose_invisible_characters_before_masking(splitter: str) -> None:
    token = Secret("opaque-" + secrets.token_hex(12))
    register_secret(token)
    record = logging.LogRecord(
        "t", logging.DEBUG, __file__, 1, "got %s", (_split(token.reveal(), splitter),), None
    )
    RedactingFilter().filter(record)
    assert token.reveal() not in str(record.msg)
