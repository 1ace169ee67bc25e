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


# Names the root no longer exports: still resolved, with a DeprecationWarning, for one
# minor version. (name: (module, the release that deprecated it, what to use))
# SystemClock and redact, deprecated in 0.3.0, went in 0.4.0 as announced.
_DEPRECATED: dict[str, tuple[str, str, str]] = {
    # Plumbing of the gateway and the CLI, which reach it through copilot_host._internal.
    **{
        name: (module, "0.4.0", "it is the library's own plumbing, not an API")
        for name, module in (
            ("Flight", "_flight"),
            ("SingleFlight", "_flight"),
            ("read_json_body", "_sessions._inspect"),
            ("request_facts", "_sessions._inspect"),
            ("clean", "_safety._text"),
            ("show_path", "_safety._text"),
        )
    },
}
# The release after the one that deprecated a name removes it.
_REMOVED_IN = {"0.4.0": "0.5.0"}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        deprecated = _DEPRECATED.get(name)
        if deprecated is None:
            raise AttributeError(f"module 'copilot_host' has no attribute {name!r}")
        import warnings

        module_name, since, instead = deprecated
        warnings.warn(
            f"copilot_host.{name} is deprecated ({since}) and goes in {_REMOVED_IN[since]}: "
            f"{instead}",
            DeprecationWarning,
            stacklevel=2,
        )
        # Not cached in the module: each use warns.
        return getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
