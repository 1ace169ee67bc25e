"""The gateway's pure parts, without a server: the access checks, the error documents and
how failures map to statuses, the app's arguments, and that it imports nothing private."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest

import copilot_host as ch
from copilot_host.gateway import create_app
from copilot_host.gateway._app._access import allowed_hosts, check_access, read_headers
from copilot_host.gateway._app._failures import failure_of
from copilot_host.gateway._protocols import ANTHROPIC_ERRORS, OPENAI_ERRORS

KEY = b"cph_" + b"k" * 43
HOSTS = allowed_hosts(4141)


def _check(*headers: tuple[bytes, bytes]) -> tuple[int, str] | None:
    refusal = check_access(read_headers(headers), HOSTS, KEY)
    return None if refusal is None else (refusal.status, refusal.code)


def test_access_checks_run_host_origin_key_in_that_order() -> None:
    host = (b"host", b"127.0.0.1:4141")
    key = (b"authorization", b"Bearer " + KEY)
    assert _check(host, key) is None
    assert _check((b"host", b"evil:4141"), (b"origin", b"null")) == (421, "invalid_host")
    assert _check(host, (b"origin", b"null"), key) == (403, "origin_not_allowed")
    assert _check(host) == (401, "invalid_api_key")
    assert _check(host, (b"x-api-key", KEY)) is None
    assert _check(host, (b"X-API-KEY", KEY)) is None  # names in any case
    assert _check(host, (b"authorization", b"BEARER  " + KEY + b" ")) is None
    assert _check(host, key, (b"x-api-key", KEY + b"x")) == (401, "invalid_api_key")
    assert _check(host, key, (b"authorization", b"Bearer " + KEY)) == (401, "invalid_api_key")
    assert _check(host, (b"Host", b"evil"), key) == (421, "invalid_host")
    # A server that did not say which address it serves: nothing is served.
    assert check_access(read_headers([host, key]), None, KEY) is not None


def test_the_hosts_answered_to_are_the_three_loopback_names_on_the_port() -> None:
    assert allowed_hosts(4141) == {b"127.0.0.1:4141", b"localhost:4141", b"[::1]:4141"}
    assert b"localhost" in allowed_hosts(80)  # the default port may be left out


@pytest.mark.parametrize(
    ("status", "openai_type", "anthropic_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "invalid_request_error", "authentication_error"),
        (403, "invalid_request_error", "permission_error"),
        (404, "invalid_request_error", "not_found_error"),
        (405, "invalid_request_error", "invalid_request_error"),
        (413, "invalid_request_error", "request_too_large"),
        (421, "invalid_request_error", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "server_error", "api_error"),
        (502, "server_error", "api_error"),
        (503, "server_error", "api_error"),
        (529, "server_error", "overloaded_error"),
    ],
)
def test_error_documents_in_both_shapes(status: int, openai_type: str, anthropic_type: str) -> None:
    openai = json.loads(OPENAI_ERRORS.body(status, "some_code", "what happened"))
    assert openai == {
        "error": {
            "message": "what happened",
            "type": openai_type,
            "code": "some_code",
            "param": None,
        }
    }
    anthropic = json.loads(ANTHROPIC_ERRORS.body(status, "some_code", "what happened"))
    assert anthropic == {
        "type": "error",
        "error": {"type": anthropic_type, "message": "what happened"},
    }


def test_error_documents_mask_known_secrets() -> None:
    secret = ch.Secret("cph_secret-in-a-message-0123456789")
    ch.register_secret(secret)
    body = OPENAI_ERRORS.body(500, "x", f"failed with {secret.reveal()}")
    assert secret.reveal().encode() not in body
    assert b"[REDACTED]" in body


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (ch.NotLoggedInError("x"), 503, "not_logged_in"),
        (ch.LoginChangedError("x"), 503, "login_changed"),
        (ch.LoginRevokedError("x"), 503, "login_invalid"),
        (ch.EntitlementError("x", code="subscription_ended"), 503, "subscription_ended"),
        (ch.SessionError("x", code="timeout"), 503, "timeout"),
        (ch.StoreInsecureError("x"), 503, "store_insecure"),
        (ch.KeyringUnavailableError("x"), 503, "keyring_unavailable"),
        (ch.ClientOutdatedError("x"), 503, "client_outdated"),
        (ch.OriginError("x", code="origin_mismatch"), 503, "origin_mismatch"),
        (ch.NoEligibleModelsError("x"), 503, "no_models"),
        (ch.ServerError("x", code="rate_limited"), 503, "rate_limited"),
        (ch.TransportError("x"), 502, "network_error"),
        (ch.TransportError("x", code="timeout"), 502, "timeout"),
        (ch.ResponseError("x"), 502, "bad_response"),
        (httpx2.ConnectError("x"), 502, "network_error"),
        (httpx2.ReadTimeout("x"), 502, "timeout"),
        (httpx2.RemoteProtocolError("x"), 502, "network_error"),
        (RuntimeError("anything else"), 500, "internal_error"),
    ],
)
def test_failures_map_to_a_status_and_a_stable_code(
    error: BaseException, status: int, code: str
) -> None:
    failure = failure_of(error)
    assert (failure.status, failure.code) == (status, code)
    assert failure.message.startswith("copilot-host")
    assert "anything else" not in failure.message  # an unknown error's text is not shown


class _Host:
    provider_id = "test"

    def availability(self) -> None:
        return None


@pytest.mark.parametrize("key", ["", "short", "x" * 15, "has a space in it!!", "ключ" * 8])
def test_the_key_must_be_long_printable_ascii(key: str) -> None:
    with pytest.raises(ValueError, match="api_key"):
        create_app(_Host(), api_key=key)  # type: ignore[arg-type]


def test_the_key_is_registered_for_masking_and_not_in_the_repr() -> None:
    key = "cph_" + "z" * 43
    app = create_app(_Host(), api_key=key)  # type: ignore[arg-type]
    assert ch.mask_secrets(f"x {key} y") == "x [REDACTED] y"
    assert key not in repr(app)


def test_https_settings_that_cannot_work_fail_the_lifespan_startup_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a server of the application's own: startup.failed with the typed message,
    never an exception out of the lifespan."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    app = create_app(_Host(), api_key="cph_" + "z" * 43)  # type: ignore[arg-type]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "lifespan.startup"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    with pytest.raises(ch.TransportError) as caught:
        asyncio.run(app.startup())
    assert (caught.value.code, caught.value.retryable) == ("network_config", False)
    asyncio.run(app({"type": "lifespan"}, receive, send))  # type: ignore[arg-type]
    assert sent == [{"type": "lifespan.startup.failed", "message": caught.value.message}]


def test_the_gateway_copies_every_field_of_a_requests_facts() -> None:
    # GatewayApp._inference builds the facts route.auth gets field by field (cheaper
    # than dataclasses.replace): a field added to RequestFacts must be added there too.
    import dataclasses

    import copilot_host as ch

    assert [f.name for f in dataclasses.fields(ch.RequestFacts)] == [
        "vision",
        "initiator",
        "model",
    ]


def test_served_betas_go_once_each_in_the_order_first_sent() -> None:
    from copilot_host.gateway._changes._betas import filter_betas

    sent = [b"claude-code-20250219, effort-2025-11-24", b" x,interleaved-thinking-2025-05-14,"]
    sent.append(b"effort-2025-11-24,interleaved-thinking-2025-05-14 ,,")
    assert filter_betas(sent) == b"effort-2025-11-24,interleaved-thinking-2025-05-14"
    assert filter_betas([b"claude-code-20250219", b" , "]) is None


@pytest.mark.parametrize(
    "forwarded",
    [
        [(b"content-type", b"application/json")],
        [(b"accept", b"text/event-stream"), (b"content-type", b"application/json")],
        [(b"User-Agent", b"hook/1"), (b"anthropic-beta", b"a"), (b"anthropic-beta", b"b")],
        # What a request_headers hook may add: a Host, a length of its own.
        [(b"Host", b"api.githubcopilot.com"), (b"content-type", b"application/json")],
        [(b"content-length", b"20"), (b"content-type", b"application/json")],
    ],
)
def test_the_relayed_request_is_what_the_clients_build_request_makes(
    forwarded: list[tuple[bytes, bytes]],
) -> None:
    # The relay builds its request itself (to spare httpx2's copies of the headers): the
    # same headers in the same order, the body with its length, the client's timeouts;
    # and once the client holds a cookie, the cookie too.
    from copilot_host.gateway._app._relay import _request

    body = b'{"model": "gpt-4.1"}'
    origin, path = "https://api.githubcopilot.com", "/chat/completions"
    client = httpx2.AsyncClient(timeout=httpx2.Timeout(3.0, read=7.0))
    for cookies in (False, True):
        if cookies:
            client.cookies.set("jar", "kept", domain="api.githubcopilot.com")
        ours = _request(client, origin, path, body, forwarded)
        theirs = client.build_request("POST", origin + path, content=body, headers=forwarded)
        assert ours.headers.raw == theirs.headers.raw
        assert ours.url == theirs.url
        assert ours.content == theirs.content == body
        assert ours.extensions == theirs.extensions
        assert ((b"Cookie", b"jar=kept") in ours.headers.raw) == cookies


def test_an_ipv6_zone_is_not_sent_in_the_relayed_host_header() -> None:
    from copilot_host.gateway._app._relay import _request

    client = httpx2.AsyncClient()
    request = _request(client, "https://[fe80::1%25eth0]:8443", "/responses", b"{}", [])
    assert request.headers["host"] == "[fe80::1]:8443"
    assert request.headers["host"] == client.build_request("POST", request.url).headers["host"]


def test_agents_are_told_once_per_set_of_identifying_headers_with_a_bounded_memo() -> None:
    from copilot_host.gateway import _agents

    _agents._SEEN.clear()
    codex = {b"user-agent": b"codex_cli_rs/0.50", b"originator": b"codex_cli_rs"}
    assert _agents.agent_of(codex) == "codex"
    # A header no agent is told by does not change the answer, nor the memo's key.
    assert _agents.agent_of({**codex, b"accept": b"*/*"}) == "codex"
    assert len(_agents._SEEN) == 1
    # run's default takes part: the same headers may name another agent under another run.
    assert _agents.agent_of({b"user-agent": b"OpenAI/Python 1.0"}) == "openai-sdk"
    assert _agents.agent_of({b"user-agent": b"OpenAI/Python 1.0"}, "aider") == "aider"
    for n in range(3 * _agents._SEEN_MAX):
        assert _agents.agent_of({b"user-agent": b"made-up/%d" % n}) == "other"
        assert len(_agents._SEEN) <= _agents._SEEN_MAX
    assert _agents.agent_of(codex) == "codex"


def test_request_headers_keep_the_first_value_and_every_value_of_a_repeated_one() -> None:
    headers = read_headers(
        [
            (b"Anthropic-Beta", b"a"),
            (b"host", b"127.0.0.1:8"),
            (b"anthropic-beta", b"b"),
            (b"x-unread", b"dropped"),
            (b"anthropic-beta", b"c"),
            (b"HOST", b"evil"),
        ]
    )
    assert headers.values.get(b"anthropic-beta") == b"a"
    assert list(headers.all(b"anthropic-beta")) == [b"a", b"b", b"c"]
    assert list(headers.all(b"host")) == [b"127.0.0.1:8", b"evil"]
    assert headers.values.get(b"host") == b"127.0.0.1:8"
    assert headers.duplicated == {b"host"}  # an access header twice; a beta list may repeat
    assert list(headers.all(b"accept")) == []
    assert headers.values.get(b"x-unread") is None
