"""Errors support can act on: GitHub's request id on every error built from an answer, a
typed ``client_outdated`` for a refused client version, and no credential in any frame of a
refusal's traceback."""

from __future__ import annotations

import json
import pickle
import secrets
import sys
from collections.abc import Callable

import pytest

import copilot_host as ch
from copilot_host.github._device_code import parse_device_code
from copilot_host.github._discovery import parse_models
from copilot_host.github._exchange import parse_exchange
from copilot_host.github._poll import parse_poll
from copilot_host.github._user import parse_user
from copilot_host.github._wire import WireResponse
from tests._frames import locals_text
from tests.github._support import device_login, response

IDENTITY = ch.LoginIdentity("id-1", "octocat")
REQUEST_ID = "C0DE:1A2B:3C4D5E:6F7A8B:65F0A1B2"


def _answer(status: int, body: str, **headers: str) -> object:
    return response(status, body, headers={"x-github-request-id": REQUEST_ID, **headers})


PARSERS: list[tuple[str, Callable[[WireResponse], object]]] = [
    ("device_code", parse_device_code),
    ("poll", lambda r: parse_poll(r, device_login())),
    ("exchange", lambda r: parse_exchange(r, IDENTITY)),
    ("user", parse_user),
    ("models", parse_models),
]


@pytest.mark.parametrize(("name", "parse"), PARSERS, ids=[n for n, _ in PARSERS])
@pytest.mark.parametrize(
    ("status", "body"), [(500, '{"message": "boom"}'), (200, "not json"), (403, "{}")]
)
def test_every_error_built_from_an_answer_names_its_request_id(
    name: str, parse: Callable[[object], object], status: int, body: str
) -> None:
    with pytest.raises(ch.CopilotHostError) as caught:
        parse(_answer(status, body))
    assert caught.value.request_id == REQUEST_ID
    assert caught.value.message.endswith(f"(GitHub request id {REQUEST_ID})")
    # It survives pickling (multiprocessing, concurrent.futures) without doubling.
    copy = pickle.loads(pickle.dumps(caught.value))
    assert copy.request_id == REQUEST_ID
    assert copy.message == caught.value.message


@pytest.mark.parametrize("bad", ["", "x" * 81, "id with spaces", "id\x1b[2J", "ü-id"])
def test_a_malformed_request_id_is_ignored(bad: str) -> None:
    with pytest.raises(ch.CopilotHostError) as caught:
        parse_user(response(500, "{}", headers={"x-github-request-id": bad}))
    assert caught.value.request_id is None
    assert "request id" not in caught.value.message


# The real service's answers to a client it refuses as too old (docs/WIRE.md).
_466_TEXT = (
    "bad request: the specified API version is no longer supported. You may need to update "
    "your client to a newer version.\n"
)
_VERSION_GATE = json.dumps(
    {
        "error": {
            "message": "model gpt-5-codex is not supported in this VS Code version. Please "
            "update it to version 1.104.1 or newer",
            "code": "model_not_supported_in_version",
        }
    }
)


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [(466, _466_TEXT, "text/plain"), (400, _VERSION_GATE, "application/json")],
)
@pytest.mark.parametrize("step", ["exchange", "models"])
def test_a_refused_client_version_is_client_outdated(
    status: int, body: str, content_type: str, step: str
) -> None:
    answer = _answer(status, body, **{"content-type": content_type})
    with pytest.raises(ch.ClientOutdatedError) as caught:
        if step == "exchange":
            parse_exchange(answer, IDENTITY)  # type: ignore[arg-type]
        else:
            parse_models(answer)  # type: ignore[arg-type]
    error = caught.value
    assert error.code == "client_outdated"
    assert not error.retryable
    assert "upgrade copilot-host" in error.message
    assert "EditorIdentity" in error.message
    assert error.request_id == REQUEST_ID


def test_plain_text_refusals_are_shown() -> None:
    answer = response(
        400,
        "bad request: missing Editor-Version header for IDE auth\n",
        headers={"content-type": "text/plain; charset=utf-8"},
    )
    with pytest.raises(ch.ResponseError) as caught:
        parse_models(answer)
    assert "missing Editor-Version header for IDE auth" in caught.value.message


def test_no_credential_sits_in_a_frame_of_a_refusal() -> None:
    token = "tid=" + secrets.token_hex(16)
    device_code = secrets.token_hex(20)
    access_token = "gho_" + secrets.token_hex(18)
    cases: list[tuple[str, Callable[[], object]]] = [
        (
            token,
            lambda: parse_exchange(
                response(
                    body=json.dumps(
                        {
                            "token": token,
                            "expires_at": 1_700_001_800,
                            "endpoints": {"api": "https://copilot.attacker.example"},
                        }
                    )
                ),
                IDENTITY,
            ),
        ),
        (
            token,
            lambda: parse_exchange(
                response(body=json.dumps({"token": token, "expires_at": "soon"})), IDENTITY
            ),
        ),
        (
            device_code,
            lambda: parse_device_code(
                response(
                    body=json.dumps(
                        {
                            "device_code": device_code,
                            "user_code": "WDJB-MJHT",
                            "verification_uri": "https://evil.example/login/device",
                            "expires_in": 900,
                        }
                    )
                )
            ),
        ),
        (
            access_token,
            lambda: parse_poll(
                response(body=json.dumps({"access_token": access_token, "error": 5})),
                device_login(),
            ),
        ),
    ]
    for secret, parse in cases:
        with pytest.raises(ch.CopilotHostError) as caught:
            parse()
        shown = locals_text(caught.value)
        assert "response=" in shown  # the library's frames were looked at
        assert secret not in shown
    assert sys.exc_info() == (None, None, None)
