"""copilot-host: a credential host for applications that embed GitHub Copilot models.

Public names resolve lazily (PEP 562), so ``import copilot_host`` costs almost nothing and
imports none of httpx2, cryptography or keyring until a name that needs them is
used. The GitHub.com adapter lives in :mod:`copilot_host.github`, the durable store in
:mod:`copilot_host.store`, and the loopback emulator in :mod:`copilot_host.testing`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import __all__ as _ERROR_NAMES  # dependency-free: the tree is cheap to load
from ._version import __version__

if TYPE_CHECKING:
    from ._api import ApiProtocol
    from ._catalog._catalog import Catalog
    from ._catalog._register import RegistrationResult, aregister_models, register_models
    from ._catalog._specs import ModelRoute
    from ._clock import SYSTEM_CLOCK, Clock
    from ._device import await_device_login, wait_for_device_login
    from ._errors import (
        AccessDeniedError,
        ClientOutdatedError,
        CopilotHostError,
        DeviceCodeExpiredError,
        EntitlementError,
        KeyringUnavailableError,
        LoginCancelledError,
        LoginChangedError,
        LoginError,
        LoginRevokedError,
        ModelValidationError,
        NoEligibleModelsError,
        NotLoggedInError,
        OriginError,
        QuotaExceededError,
        ResponseError,
        RouteCollisionError,
        ServerError,
        SessionError,
        StoreCorruptError,
        StoreError,
        StoreInsecureError,
        StoreLockedError,
        StoreVersionError,
        TransportError,
    )
    from ._hosts import (
        AsyncCopilotHost,
        Authorized,
        CopilotDeviceLogin,
        CopilotHost,
        CopilotSession,
        LoginIdentity,
        Pending,
    )
    from ._models import (
        Inventory,
        ModelBilling,
        ModelSpec,
        SkippedModel,
        TokenPrices,
    )
    from ._origin import CopilotEndpoint, OriginAllowlist, default_allowlist
    from ._safety._redact import (
        RedactingFilter,
        install_redaction,
        mask_secrets,
        register_secret,
    )
    from ._safety._secret import Secret
    from ._sessions._auth import CopilotAuth
    from ._sessions._inspect import RequestFacts
    from ._sessions._pipeline import SwitchesIdentity
    from ._sessions._policy import RefreshPolicy, SessionState
    from ._sessions._resolver import AsyncSessionResolver, SessionResolver
    from ._usage import CopilotUsage, Quota

_EXPORTS: dict[str, str] = {
    "CopilotAuth": "_sessions._auth",
    "Catalog": "_catalog._catalog",
    "Clock": "_clock",
    "SYSTEM_CLOCK": "_clock",
    "await_device_login": "_device",
    "wait_for_device_login": "_device",
    **dict.fromkeys(_ERROR_NAMES, "_errors"),
    "ApiProtocol": "_api",
    "Inventory": "_models",
    "ModelRoute": "_catalog._specs",
    "ModelSpec": "_models",
    "ModelBilling": "_models",
    "TokenPrices": "_models",
    "SkippedModel": "_models",
    "CopilotUsage": "_usage",
    "Quota": "_usage",
    "CopilotEndpoint": "_origin",
    "OriginAllowlist": "_origin",
    "default_allowlist": "_origin",
    "RequestFacts": "_sessions._inspect",
    "SwitchesIdentity": "_sessions._pipeline",
    "RefreshPolicy": "_sessions._policy",
    "SessionState": "_sessions._policy",
    "RegistrationResult": "_catalog._register",
    "RedactingFilter": "_safety._redact",
    "install_redaction": "_safety._redact",
    "mask_secrets": "_safety._redact",
    "register_secret": "_safety._redact",
    "aregister_models": "_catalog._register",
    "register_models": "_catalog._register",
    "AsyncSessionResolver": "_sessions._resolver",
    "SessionResolver": "_sessions._resolver",
    "AsyncCopilotHost": "_hosts",
    "Authorized": "_hosts",
    "CopilotDeviceLogin": "_hosts",
    "CopilotHost": "_hosts",
    "CopilotSession": "_hosts",
    "LoginIdentity": "_hosts",
    "Pending": "_hosts",
    "Secret": "_safety._secret",
}

# Literal, so type checkers see the exports; a test keeps it equal to _EXPORTS.
__all__ = [
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
    "default_allowlist",
    "install_redaction",
    "mask_secrets",
    "register_models",
    "register_secret",
    "wait_for_device_login",
]


# Names the root no longer exports go one minor version after their deprecation: SystemClock
# and redact (deprecated in 0.3.0) in 0.4.0; Flight, SingleFlight, read_json_body,
# request_facts, clean and show_path (deprecated in 0.4.0) in 0.5.0, as announced. The
# gateway and the CLI reach that plumbing through copilot_host._internal.


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'copilot_host' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
