"""A real account's inventory, drift and all, end to end over loopback sockets: which
models become routes, which are skipped and why (the emulator's default inventory is
modelled on real ``GET /models`` answers of 2025-2026; docs/WIRE.md)."""

from __future__ import annotations

import asyncio

import copilot_host as ch
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator
from tests.github._support import REALISTIC_ROUTES

CHAT, RESPONSES, MESSAGES = (
    ch.ApiProtocol.OPENAI_CHAT,
    ch.ApiProtocol.OPENAI_RESPONSES,
    ch.ApiProtocol.ANTHROPIC_MESSAGES,
)

SKIPPED = {
    # The same id twice (once dated, once not) is ambiguous: both copies go.
    ("gpt-4o", "duplicate_id"),
    # A bring-your-own-key model whose id holds the route separator.
    ("byok/phi-4", "invalid_id"),
    # Terms not accepted yet, and switched off by a policy.
    ("gemini-3.1-pro-preview", "policy_not_enabled"),
    ("o3", "policy_not_enabled"),
    # Served over a WebSocket transport only.
    ("gpt-5.3-codex-ws", "no_supported_protocol"),
    # A completion model and three embeddings models.
    ("gpt-41-copilot", "not_chat"),
    ("text-embedding-3-small", "not_chat"),
    ("text-embedding-3-small-inference", "not_chat"),
    ("text-embedding-ada-002", "not_chat"),
}


def _check(result: ch.RegistrationResult) -> None:
    routes = {r.model_id: r for r in result.routes}
    assert len(routes) == REALISTIC_ROUTES
    assert {(s.model_id, s.reason) for s in result.skipped} == SKIPPED
    assert len(result.skipped) == 10
    # The preferred protocol of each family; every listed one is kept on the spec.
    assert routes["claude-sonnet-4.6"].protocol is CHAT
    assert routes["claude-sonnet-4.6"].spec.protocols == {CHAT, MESSAGES}
    assert routes["claude-opus-5"].protocol is MESSAGES  # its only endpoint
    assert routes["gpt-5.4"].protocol is RESPONSES
    assert routes["gpt-5.4"].spec.protocols == {CHAT, RESPONSES}
    assert routes["gpt-5.3-codex"].spec.protocols == {RESPONSES}  # ws:/responses ignored
    assert routes["gpt-4.1"].protocol is CHAT  # no supported_endpoints: Chat Completions
    # Names with punctuation are names, shown as given.
    assert routes["claude-opus-4.8"].spec.display_name == "Claude Opus 4.8 – 1M context"
    assert routes["mai-code-1-flash-picker"].spec.display_name == "Raptor's Edge (Preview)"
    # A fractional limit is no limit; the model stays.
    assert routes["grok-4.5"].spec.max_output_tokens is None
    # The prompt limit is kept beside the window, and the service's chat default is marked.
    assert routes["claude-opus-4.8"].spec.max_prompt_tokens == 936_000
    assert routes["claude-opus-4.8"].spec.context_window == 1_000_000
    assert [r.model_id for r in result.routes if r.spec.chat_default] == ["gpt-5-mini"]
    # Copilot Auto's route comes last, its limits the smallest of its pool's.
    auto = result.routes[-1]
    assert (auto.route_id, auto.spec.display_name) == ("github-copilot/auto", "Copilot Auto")
    assert auto.spec.auto is not None
    pool = [routes[model_id].spec for model_id in auto.spec.auto.models]
    assert auto.spec.max_output_tokens == min(s.max_output_tokens or 10**9 for s in pool)
    assert auto.spec.max_prompt_tokens == min(s.max_prompt_tokens or 10**9 for s in pool)
    assert auto.spec.protocols == frozenset().union(*(s.protocols for s in pool))
    # The service's billing note rides on every route it was given for (Auto's is made
    # here, from no entry).
    assert all(r.spec.warnings for r in result.routes if r.model_id != "auto")
    policy = next(s for s in result.skipped if s.model_id == "gemini-3.1-pro-preview")
    assert "(plan and settings: https://github.com/settings/copilot)" in policy.message
    assert "settings/copilot/features" not in policy.message


def test_a_real_inventory_registers_every_usable_model(store: CredentialStore) -> None:
    with (
        GitHubEmulator() as emu,
        GitHubCopilotHost(store=store, transport=emu.transport()) as host,
    ):
        host.login(sleep=lambda _: None)
        catalog = ch.Catalog()
        _check(ch.register_models(catalog, host))
        assert len(catalog) == REALISTIC_ROUTES


def test_a_real_inventory_registers_every_usable_model_async(store: CredentialStore) -> None:
    async def main() -> ch.RegistrationResult:
        with GitHubEmulator() as emu:
            async with AsyncGitHubCopilotHost(store=store, transport=emu.async_transport()) as host:

                async def no_wait(_seconds: float) -> None:
                    return None

                await host.login(sleep=no_wait)
                return await ch.aregister_models(ch.Catalog(), host)

    _check(asyncio.run(main()))
