"""Every public package's ``__all__``, pinned: a name appears or goes only on purpose (with
a CHANGELOG line, and for a removal a deprecated alias first)."""

from __future__ import annotations

import importlib
import warnings

import pytest

import copilot_host as ch

PUBLIC = {
    "copilot_host": [
        "__version__",
        "AccessDeniedError",
        "ApiProtocol",
        "AsyncCopilotHost",
        "AsyncSessionResolver",
        "Authorized",
        "Catalog",
        "ClientOutdatedError",
        "Clock",
        "CopilotAuth",
        "CopilotDeviceLogin",
        "CopilotEndpoint",
        "CopilotHost",
        "CopilotHostError",
        "CopilotSession",
        "CopilotUsage",
        "DeviceCodeExpiredError",
        "EntitlementError",
        "Flight",
        "Inventory",
        "KeyringUnavailableError",
        "LoginCancelledError",
        "LoginChangedError",
        "LoginError",
        "LoginIdentity",
        "LoginRevokedError",
        "ModelBilling",
        "ModelRoute",
        "ModelSpec",
        "ModelValidationError",
        "NoEligibleModelsError",
        "NotLoggedInError",
        "OriginAllowlist",
        "OriginError",
        "Pending",
        "Quota",
        "QuotaExceededError",
        "RedactingFilter",
        "RefreshPolicy",
        "RegistrationResult",
        "RequestFacts",
        "ResponseError",
        "RouteCollisionError",
        "SYSTEM_CLOCK",
        "Secret",
        "ServerError",
        "SessionError",
        "SessionResolver",
        "SessionState",
        "SingleFlight",
        "SkippedModel",
        "StoreCorruptError",
        "StoreError",
        "StoreInsecureError",
        "StoreLockedError",
        "StoreVersionError",
        "SwitchesIdentity",
        "TokenPrices",
        "TransportError",
        "aregister_models",
        "await_device_login",
        "clean",
        "default_allowlist",
        "install_redaction",
        "mask_secrets",
        "read_json_body",
        "register_models",
        "register_secret",
        "request_facts",
        "show_path",
        "wait_for_device_login",
    ],
    "copilot_host.store": [
        "CredentialStore",
        "Deleted",
        "GatewayKey",
        "GatewayKeyFile",
        "Protection",
        "ProtectionKind",
        "RecordHeader",
        "Saved",
        "default_home",
    ],
    "copilot_host.github": [
        "DEFAULT_CLIENT_ID",
        "DEFAULT_EDITOR",
        "KNOWN_NOTIFICATIONS",
        "PROVIDER_ID",
        "AsyncGitHubCopilotHost",
        "EditorIdentity",
        "GitHubCopilotHost",
        "parse_editor",
    ],
    "copilot_host.gateway": [
        "ACCESS_LOGGER",
        "FORWARDED_REQUEST_HEADERS",
        "MAX_ANSWER_BYTES",
        "MAX_BODY_BYTES",
        "MODEL_HEADER",
        "RELAYED_RESPONSE_HEADERS",
        "REREGISTER_AFTER",
        "SERVED_BETAS",
        "AnswerObserver",
        "GatewayApp",
        "GatewayHooks",
        "ModelNames",
        "create_app",
    ],
    "copilot_host.testing": [
        "CHECKS",
        "ENDPOINTS",
        "USAGE_PLANS",
        "VSCODE_CLIENT_ID",
        "GitHubEmulator",
        "RawAnswer",
        "RecordedRequest",
        "Scenario",
        "async_loopback_transport",
        "chat_model",
        "inventory_of",
        "loopback_transport",
        "minimal_models",
        "realistic_models",
        "token_billing",
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_are_the_pinned_ones(module: str) -> None:
    assert importlib.import_module(module).__all__ == PUBLIC[module]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_resolves(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in PUBLIC[module]:
        assert getattr(loaded, name) is not None, name


@pytest.mark.parametrize(
    ("name", "module"), [("SystemClock", "_clock"), ("redact", "_safety._redact")]
)
def test_names_trimmed_from_the_root_still_resolve_with_a_warning(name: str, module: str) -> None:
    assert name not in ch.__all__
    with pytest.warns(DeprecationWarning, match=f"copilot_host.{name} is deprecated"):
        value = getattr(ch, name)
    assert value is getattr(importlib.import_module(f"copilot_host.{module}"), name)
    with warnings.catch_warnings(), pytest.raises(AttributeError):
        warnings.simplefilter("ignore")
        ch.no_such_name  # noqa: B018
