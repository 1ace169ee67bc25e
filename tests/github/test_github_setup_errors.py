"""A broken TLS or proxy setting is a typed error, and never echoes the proxy URL."""

from __future__ import annotations

import asyncio

import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore

SETTINGS = [
    ("SSL_CERT_FILE", "/nonexistent/ca.pem"),
    ("HTTPS_PROXY", "ftp://someone:pr0xy-passw0rd@127.0.0.1:9"),
    ("HTTPS_PROXY", "socks5://someone:pr0xy-passw0rd@127.0.0.1:9"),
]


@pytest.mark.parametrize(("name", "value"), SETTINGS)
def test_sync_host_turns_client_setup_failures_into_typed_errors(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with (
        GitHubCopilotHost(store=CredentialStore(key_file=True)) as host,
        pytest.raises(ch.TransportError) as caught,
    ):
        host.begin_device_login()
    assert caught.value.code == "network_config"
    assert not caught.value.retryable
    assert "pr0xy-passw0rd" not in str(caught.value)
    assert name.split("_", maxsplit=1)[0] in str(caught.value)


@pytest.mark.parametrize(("name", "value"), SETTINGS)
def test_async_host_turns_client_setup_failures_into_typed_errors(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)

    async def main() -> ch.TransportError:
        async with AsyncGitHubCopilotHost(store=CredentialStore(key_file=True)) as host:
            with pytest.raises(ch.TransportError) as caught:
                await host.begin_device_login()
            return caught.value

    error = asyncio.run(main())
    assert error.code == "network_config"
    assert "pr0xy-passw0rd" not in str(error)
