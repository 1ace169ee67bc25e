"""Wire tests: each request the adapter sends, pinned (method, URL, headers, form body).

The host runs on httpx2's default transport, which httpx2-pytest intercepts, so these
also show the adapter works with no transport passed (the production path).
"""

from __future__ import annotations

import secrets
import urllib.parse

import httpx2
import pytest
from pytest_httpx2 import HTTPXMock

import copilot_host as ch
from copilot_host._safety._secret import Secret
from copilot_host.github import DEFAULT_CLIENT_ID, EditorIdentity, GitHubCopilotHost
from copilot_host.store import CredentialStore
from tests._clock import FakeClock
from tests.github._support import DEVICE_PAGE, canary_github_token

ORIGIN = "https://api.individual.githubcopilot.com"
EDITOR = EditorIdentity(
    editor_version="myeditor/2.0",
    plugin_version="myplugin/0.1",
    integration_id="my-integration",
    user_agent="MyEditor/2.0",
    api_version="2025-05-01",
)


def _form(request: httpx2.Request) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(request.content.decode(), strict_parsing=True)


def _session_json(token: str, origin: str = ORIGIN) -> dict[str, object]:
    return {
        "token": token,
        "expires_at": 1_700_001_800,
        "refresh_in": 1500,
        "endpoints": {"api": origin},
        "sku": "copilot_for_individuals",
    }


def _session_token() -> str:
    return f"tid={secrets.token_hex(16)};exp=1700001800:{secrets.token_hex(32)}"


def test_device_code_request(httpx2_mock: HTTPXMock, store: CredentialStore) -> None:
    httpx2_mock.add_response(
        method="POST",
        url="https://github.com/login/device/code",
        json={
            "device_code": secrets.token_hex(20),
            "user_code": "ABCD-1234",
            "verification_uri": DEVICE_PAGE,
            "expires_in": 899,
            "interval": 5,
        },
    )
    with GitHubCopilotHost(store=store, editor=EDITOR) as host:
        login = host.begin_device_login()
    request = httpx2_mock.get_requests()[0]
    assert request.method == "POST"
    assert str(request.url) == "https://github.com/login/device/code"
    assert request.headers["Accept"] == "application/json"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert request.headers["User-Agent"] == "MyEditor/2.0"
    assert request.headers["Editor-Version"] == "myeditor/2.0"
    assert request.headers["Editor-Plugin-Version"] == "myplugin/0.1"
    assert "Authorization" not in request.headers
    assert _form(request) == {"client_id": [DEFAULT_CLIENT_ID], "scope": ["read:user"]}
    assert login.user_code == "ABCD-1234"
    assert login.verification_uri == DEVICE_PAGE


def test_full_login_requests(
    httpx2_mock: HTTPXMock, store: CredentialStore, clock: FakeClock
) -> None:
    device_code, github_token, session = (
        secrets.token_hex(20),
        canary_github_token(),
        _session_token(),
    )
    httpx2_mock.add_response(
        url="https://github.com/login/device/code",
        json={
            "device_code": device_code,
            "user_code": "ABCD-1234",
            "verification_uri": DEVICE_PAGE,
            "expires_in": 900,
            "interval": 5,
        },
    )
    httpx2_mock.add_response(
        url="https://github.com/login/oauth/access_token",
        json={"access_token": github_token, "token_type": "bearer", "scope": "read:user"},
    )
    httpx2_mock.add_response(
        url="https://api.github.com/copilot_internal/v2/token", json=_session_json(session)
    )
    httpx2_mock.add_response(url="https://api.github.com/user", json={"login": "octocat"})
    with GitHubCopilotHost(store=store, client_id="Iv1.custom", editor=EDITOR, clock=clock) as host:
        identity = host.login(sleep=clock.sleep)
    poll, exchange, user = httpx2_mock.get_requests()[1:]

    assert (poll.method, str(poll.url)) == ("POST", "https://github.com/login/oauth/access_token")
    assert poll.headers["Accept"] == "application/json"
    assert poll.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert _form(poll) == {
        "client_id": ["Iv1.custom"],
        "device_code": [device_code],
        "grant_type": ["urn:ietf:params:oauth:grant-type:device_code"],
    }

    assert (exchange.method, str(exchange.url)) == (
        "GET",
        "https://api.github.com/copilot_internal/v2/token",
    )
    assert exchange.headers["Authorization"] == f"token {github_token}"
    assert exchange.headers["Accept"] == "application/json"
    assert exchange.headers["Editor-Version"] == "myeditor/2.0"
    assert exchange.headers["Editor-Plugin-Version"] == "myplugin/0.1"
    assert exchange.headers["User-Agent"] == "MyEditor/2.0"
    # The token exchange is versioned apart from the inference API (as VS Code sends it).
    assert exchange.headers["X-GitHub-Api-Version"] == "2025-04-01"
    assert exchange.content == b""

    assert (user.method, str(user.url)) == ("GET", "https://api.github.com/user")
    assert user.headers["Authorization"] == f"token {github_token}"
    assert user.headers["Accept"] == "application/json"
    assert user.headers["X-GitHub-Api-Version"] == "2022-11-28"

    assert identity.account == "octocat"
    stored, token = store.load()
    assert stored == identity
    assert token == Secret(github_token)


def test_exchange_and_models_requests(httpx2_mock: HTTPXMock, store: CredentialStore) -> None:
    github_token, session_token = canary_github_token(), _session_token()
    identity = store.save("octocat", Secret(github_token)).identity
    httpx2_mock.add_response(
        url="https://api.github.com/copilot_internal/v2/token", json=_session_json(session_token)
    )
    httpx2_mock.add_response(
        method="GET",
        url=f"{ORIGIN}/models",
        json={
            "data": [
                {
                    "id": "gpt-4.1",
                    "name": "GPT-4.1",
                    "capabilities": {"type": "chat"},
                    "supported_endpoints": ["/chat/completions"],
                }
            ]
        },
    )
    with GitHubCopilotHost(store=store, editor=EDITOR) as host:
        session = host.exchange(identity)
        specs = host.inventory(session)
        headers = host.request_headers()
    models = httpx2_mock.get_requests()[1]
    assert (models.method, str(models.url)) == ("GET", f"{ORIGIN}/models")
    assert models.headers["Authorization"] == f"Bearer {session_token}"
    assert models.headers["Copilot-Integration-Id"] == "my-integration"
    assert models.headers["Editor-Version"] == "myeditor/2.0"
    assert models.headers["Editor-Plugin-Version"] == "myplugin/0.1"
    assert models.headers["User-Agent"] == "MyEditor/2.0"
    assert models.headers["X-GitHub-Api-Version"] == "2025-05-01"
    assert [s.model_id for s in specs.models] == ["gpt-4.1"]
    assert session.endpoint.origin == ORIGIN
    assert session.identity == identity
    assert dict(headers) == {
        "Editor-Version": "myeditor/2.0",
        "Editor-Plugin-Version": "myplugin/0.1",
        "Copilot-Integration-Id": "my-integration",
        "User-Agent": "MyEditor/2.0",
        "X-GitHub-Api-Version": "2025-05-01",
    }


def test_default_editor_identity_headers(store: CredentialStore) -> None:
    with GitHubCopilotHost(store=store) as host:
        headers = host.request_headers()
    assert headers["Copilot-Integration-Id"] == "vscode-chat"
    assert headers["Editor-Version"].startswith("vscode/")
    assert "copilot-host/" in headers["User-Agent"]


@pytest.mark.parametrize("bad", ["", "a\r\nX-Evil: 1", "tab\there", "é"])
def test_editor_identity_refuses_header_injection(bad: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        EditorIdentity(user_agent=bad)


@pytest.mark.parametrize("bad", ["", "a b", "id&scope=repo", "x" * 101])
def test_client_id_is_a_plain_token(bad: str, store: CredentialStore) -> None:
    with pytest.raises(ValueError, match="client_id"):
        GitHubCopilotHost(store=store, client_id=bad)


def test_no_redirect_is_followed(httpx2_mock: HTTPXMock, store: CredentialStore) -> None:
    identity = store.save("octocat", Secret(canary_github_token())).identity
    httpx2_mock.add_response(
        url="https://api.github.com/copilot_internal/v2/token",
        status_code=302,
        headers={"Location": "https://elsewhere.example/steal"},
    )
    with GitHubCopilotHost(store=store) as host, pytest.raises(ch.ResponseError) as caught:
        host.exchange(identity)
    assert "HTTP 302" in caught.value.message
    assert len(httpx2_mock.get_requests()) == 1


def test_declared_oversized_body_is_not_read(
    httpx2_mock: HTTPXMock, store: CredentialStore
) -> None:
    httpx2_mock.add_response(
        url="https://github.com/login/device/code",
        content=b"{}",
        headers={"Content-Length": str(10 * 1024 * 1024)},
    )
    with GitHubCopilotHost(store=store) as host, pytest.raises(ch.ResponseError) as caught:
        host.begin_device_login()
    assert caught.value.code == "response_too_large"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx2.ConnectError("connection refused"), "network_error"),
        (httpx2.ReadTimeout("read timed out"), "timeout"),
        (httpx2.ConnectTimeout("connect timed out"), "timeout"),
        (httpx2.RemoteProtocolError("peer closed"), "network_error"),
        (httpx2.ProxyError("proxy said no"), "network_error"),
    ],
)
def test_network_failures_are_typed(
    httpx2_mock: HTTPXMock, store: CredentialStore, exc: Exception, code: str
) -> None:
    httpx2_mock.add_exception(exc)
    with GitHubCopilotHost(store=store) as host, pytest.raises(ch.TransportError) as caught:
        host.begin_device_login()
    assert caught.value.code == code
    assert caught.value.retryable
    assert caught.value.__cause__ is None


def test_default_timeouts(store: CredentialStore) -> None:
    from copilot_host.github._http import DEFAULT_TIMEOUT

    assert (DEFAULT_TIMEOUT.connect, DEFAULT_TIMEOUT.read) == (10.0, 30.0)
