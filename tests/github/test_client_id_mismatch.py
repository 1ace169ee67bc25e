"""``client_id_mismatch()``: a host whose ``client_id=`` is not the stored login's app says
so, from the record's header alone, sync and async (DESIGN, "Client id")."""

from __future__ import annotations

import asyncio

from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.github._headers import DEFAULT_CLIENT_ID
from copilot_host.store import CredentialStore
from copilot_host.testing import (
    COPILOT_CLI_CLIENT_ID,
    GitHubEmulator,
    Inventory,
    Scenario,
    minimal_models,
)


def test_a_host_for_another_app_reports_the_stored_one(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(inventory=Inventory(models=minimal_models()))) as emu:
        with GitHubCopilotHost(store=store, transport=emu.transport()) as fresh:
            assert fresh.client_id_mismatch() is None  # nobody logged in
        with GitHubCopilotHost(
            store=store, transport=emu.transport(), client_id=COPILOT_CLI_CLIENT_ID
        ) as cli_app:
            cli_app.login(sleep=lambda _seconds: None)
            assert cli_app.client_id_mismatch() is None
        with GitHubCopilotHost(store=store, transport=emu.transport()) as default:
            assert default.client_id_mismatch() == COPILOT_CLI_CLIENT_ID
        sent = len(emu.requests)

        async def check() -> str | None:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as h:
                return h.client_id_mismatch()

        assert asyncio.run(check()) == COPILOT_CLI_CLIENT_ID
        assert len(emu.requests) == sent  # the record alone: no request


def test_a_default_login_mismatches_a_host_for_another_app(store: CredentialStore) -> None:
    with GitHubEmulator(Scenario(inventory=Inventory(models=minimal_models()))) as emu:
        with GitHubCopilotHost(store=store, transport=emu.transport()) as default:
            default.login(sleep=lambda _seconds: None)
            assert default.client_id_mismatch() is None
        with GitHubCopilotHost(
            store=store, transport=emu.transport(), client_id=COPILOT_CLI_CLIENT_ID
        ) as other:
            assert other.client_id_mismatch() == DEFAULT_CLIENT_ID
