"""A login that could not be stored is refused before a device code is requested."""

from __future__ import annotations

import asyncio

import keyring
import keyring.backends.fail
import pytest

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator


def test_sync_host_refuses_before_asking_github() -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())
    with GitHubEmulator() as emu, GitHubCopilotHost(transport=emu.transport()) as host:
        with pytest.raises(ch.KeyringUnavailableError) as caught:
            host.begin_device_login()
        assert "--key-file" in caught.value.message
        assert emu.requests == ()
    with GitHubEmulator() as emu:
        with GitHubCopilotHost(
            store=CredentialStore(key_file=True), transport=emu.transport()
        ) as host:
            login = host.begin_device_login()
        assert login.verification_uri == "https://github.com/login/device"
        assert len(emu.requests) == 1


def test_async_host_refuses_before_asking_github() -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())

    async def main(emu: GitHubEmulator) -> None:
        async with AsyncGitHubCopilotHost(transport=emu.async_transport()) as host:
            with pytest.raises(ch.KeyringUnavailableError):
                await host.begin_device_login()

    with GitHubEmulator() as emu:
        asyncio.run(main(emu))
        assert emu.requests == ()
