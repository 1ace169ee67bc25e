"""Other tools' credentials are never imported: with GH_TOKEN, GITHUB_TOKEN, a gh CLI
config and a Copilot editor-plugin file all holding (canary) tokens, copilot-host still
has no login, and nothing it sends carries any of them."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx2
import pytest

import copilot_host as ch
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator


class _Recording(httpx2.BaseTransport):
    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner
        self.sent: list[str] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(f"{request.url} {request.headers!r} {request.read()!r}")
        self.sent.append(" ".join(request.headers.get_list("authorization")))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_other_tools_tokens_are_never_used(
    tmp_path: Path, copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = {name: "gho_" + secrets.token_hex(18) for name in ("env1", "env2", "gh", "plugin")}
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("GH_TOKEN", planted["env1"])
    monkeypatch.setenv("GITHUB_TOKEN", planted["env2"])
    config = tmp_path / ".config"
    (config / "gh").mkdir(parents=True)
    (config / "gh" / "hosts.yml").write_text(f"github.com:\n    oauth_token: {planted['gh']}\n")
    (config / "github-copilot").mkdir()
    (config / "github-copilot" / "hosts.json").write_text(
        json.dumps({"github.com": {"oauth_token": planted["plugin"]}})
    )
    (config / "github-copilot" / "apps.json").write_text(
        json.dumps({"github.com:Iv1.b507a08c87ecfe98": {"oauth_token": planted["plugin"]}})
    )
    with GitHubEmulator() as emu:
        recording = _Recording(emu.transport())
        with GitHubCopilotHost(store=CredentialStore(), transport=recording) as host:
            assert host.availability() is None
            with pytest.raises(ch.NotLoggedInError):
                ch.register_models(ch.Catalog(), host)
            with pytest.raises(ch.NotLoggedInError):
                host.exchange(ch.LoginIdentity("x" * 32, "octocat"))
            # A login goes through the device flow, whatever tokens lie around.
            identity = host.login(sleep=lambda _s: None)
            assert host.store.load() == (identity, ch.Secret(emu.github_token))
        assert len(emu.requests_to("device_code")) == 1
    sent = "\n".join(recording.sent)
    assert recording.sent
    for token in planted.values():
        assert token not in sent
    assert (copilot_home / "credential").exists()  # stored where COPILOT_HOST_HOME says
