"""Every public package's ``__all__``, pinned: a name appears or goes only on purpose (with
a CHANGELOG line, and for a removal a deprecated alias first)."""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from pathlib import Path

import pytest

import copilot_host as ch
from copilot_host._errors import __all__ as ERROR_TREE

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
    ],
    "copilot_host.store": [
        "CredentialStore",
        "Deleted",
        "GatewayKey",
        "GatewayKeyFile",
        "PrivateFile",
        "PrivateFolder",
        "Protection",
        "ProtectionKind",
        "RecordHeader",
        "Saved",
        "default_home",
        "private_folder",
    ],
    "copilot_host.github": [
        "DEFAULT_CLIENT_ID",
        "DEFAULT_EDITOR",
        "KNOWN_NOTIFICATIONS",
        "PROVIDER_ID",
        "AsyncGitHubCopilotHost",
        "Checkup",
        "EditorIdentity",
        "GitHubCopilotHost",
        "IdentityCheck",
        "ProbeCheck",
        "parse_editor",
    ],
    "copilot_host.gateway": [
        "ACCESS_LOGGER",
        "MAX_BODY_BYTES",
        "MODEL_HEADER",
        "REWRITES",
        "AnswerObserver",
        "GatewayApp",
        "GatewayHooks",
        "GatewayServer",
        "ModelNames",
        "ServeOptions",
        "ServingError",
        "create_app",
        "rewrites_from_environment",
        "serve",
        "upstream_transport",
    ],
    "copilot_host.testing": [
        "AUTO_CALLS",
        "AUTO_ONLY_PLANS",
        "CHECKS",
        "COPILOT_CLI_CLIENT_ID",
        "ENDPOINTS",
        "USAGE_PLANS",
        "VSCODE_CLIENT_ID",
        "Auto",
        "DeviceFlow",
        "Faults",
        "GitHubEmulator",
        "Inventory",
        "RateWindow",
        "RawAnswer",
        "RecordedRequest",
        "Replies",
        "Scenario",
        "Session",
        "Sockets",
        "ToolCall",
        "Usage",
        "async_loopback_transport",
        "chat_model",
        "embeddings_model",
        "inventory_of",
        "loopback_socket_connector",
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


# The core's plumbing the gateway and the CLI use (copilot_host._internal), pinned as the
# public names are: a name joins it only on review.
INTERNAL = [
    "AutoPick",
    "Flight",
    "SingleFlight",
    "clean",
    "show_path",
    "redact_line",
    "secrets_generation",
    "last_user_text",
    "read_json_body",
    "request_facts",
    "write_json_body",
    "refusal_of",
    "Accelerations",
    "accelerations",
]


def test_the_internal_reexports_are_the_pinned_ones_and_resolve_lazily() -> None:
    from copilot_host import _internal

    assert _internal.__all__ == INTERNAL
    assert sorted(_internal._EXPORTS) == sorted(INTERNAL)
    for name in INTERNAL:
        module = importlib.import_module(f"copilot_host.{_internal._EXPORTS[name]}")
        assert getattr(_internal, name) is getattr(module, name)
    with pytest.raises(AttributeError):
        _internal.no_such_name  # noqa: B018


def test_the_internal_module_costs_nothing_until_a_name_is_used() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\nfrom copilot_host._internal import clean\n"
        "print(sorted({'httpx2', 'copilot_host._accel'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "name", ["Flight", "SingleFlight", "read_json_body", "request_facts", "clean", "show_path"]
)
def test_names_deprecated_in_0_4_0_are_gone_from_the_root_as_announced(name: str) -> None:
    assert name not in ch.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=name):
            getattr(ch, name)
    # The plumbing itself stays, for the gateway and the CLI.
    from copilot_host import _internal

    assert callable(getattr(_internal, name))


# 0.4.0's gateway names that left its __all__ in 0.5.0: still there, with a warning.
GATEWAY_MOVED = {
    "FORWARDED_REQUEST_HEADERS": "copilot_host.gateway._app",
    "MAX_ANSWER_BYTES": "copilot_host.gateway._app",
    "RELAYED_RESPONSE_HEADERS": "copilot_host.gateway._app",
    "REREGISTER_AFTER": "copilot_host.gateway._app",
    "REWRITES_VARIABLE": "copilot_host.gateway._changes",
    "SERVED_BETAS": "copilot_host.gateway._changes",
    "GRACE": "copilot_host.gateway._server",
    "STOP_SIGNALS": "copilot_host.gateway._server",
    "Hardening": "copilot_host.gateway._server",
    "ServerStack": "copilot_host.gateway._server",
    "bind": "copilot_host.gateway._server",
    "write_stderr_line": "copilot_host.gateway._server",
}


def test_the_gateway_exports_at_most_15_names_and_0_4_0_has_them_all() -> None:
    from copilot_host import gateway

    assert len(gateway.__all__) <= 15
    v040 = PUBLIC["copilot_host.gateway"] + list(GATEWAY_MOVED)
    assert len(set(v040)) == 27  # 0.4.0's 26 and ServingError
    assert set(dir(gateway)) >= set(v040)


@pytest.mark.parametrize("name", sorted(GATEWAY_MOVED))
def test_a_0_4_0_import_of_a_moved_gateway_name_works_with_a_warning(name: str) -> None:
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"copilot_host\.gateway\.{name} is no longer"):
        exec(f"from copilot_host.gateway import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(GATEWAY_MOVED[name]), name)
    from copilot_host import gateway

    with warnings.catch_warnings(), pytest.raises(AttributeError):
        warnings.simplefilter("ignore")
        gateway.no_such_name  # noqa: B018


# -- why each root name is public ------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
# The packages built on the root's names: the CLI and the gateway (public names only), the
# GitHub adapter, the store and the emulator.
BUILT_ON_THE_ROOT = (
    "cli",
    "copilot_host/gateway",
    "copilot_host/github",
    "copilot_host/store",
    "copilot_host/testing",
)
# A root name none of those packages uses stays public only for a reason an application has,
# checked below: README names it ("README"), or a kept public callable's signature does
# (its dotted name under copilot_host). The error tree stays whole without an entry here.
WHY_PUBLIC: dict[str, str] = {
    "CopilotHost": "README",  # the protocol a host of the application's own implements
    "SwitchesIdentity": "README",  # the optional member of a host with a second identity
    "RefreshPolicy": "README",  # register_models(..., policy=...)
    "SessionResolver": "README",  # what the core gives a host of the application's own
    "AsyncSessionResolver": "README",
    "await_device_login": "README",  # the asyncio twin of the CLI's wait_for_device_login
    "RegistrationResult": "register_models",
    "SessionState": "RefreshPolicy.state",
    "OriginAllowlist": "default_allowlist",
}


def _trees(folder: str) -> list[tuple[Path, ast.Module]]:
    return [
        (source, ast.parse(source.read_text(encoding="utf-8")))
        for source in sorted((REPO / folder).rglob("*.py"))
    ]


def _root_aliases(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "copilot_host"
    }


def _from_the_core(node: ast.ImportFrom, source: Path) -> bool:
    """``from copilot_host import X``, or inside the library ``from .._module import X``."""
    if node.level == 0:
        module = node.module or ""
        return module == "copilot_host" or module.startswith("copilot_host._")
    package = source.relative_to(REPO).parent.parts
    base = package[: len(package) - (node.level - 1)]
    return base == ("copilot_host",) and (node.module or "_").startswith("_")


def _root_names_used_by(folder: str) -> set[str]:
    used: set[str] = set()
    for source, tree in _trees(folder):
        aliases = _root_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _from_the_core(node, source):
                used.update(alias.name for alias in node.names)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                used.add(node.attr)
    return used & set(ch.__all__)


def test_the_root_exports_only_names_something_uses_or_an_application_needs() -> None:
    used = set().union(*(_root_names_used_by(folder) for folder in BUILT_ON_THE_ROOT))
    unexplained = set(ch.__all__) - used - set(ERROR_TREE) - set(WHY_PUBLIC)
    assert not unexplained, "deprecate these (or say in WHY_PUBLIC why they stay)"
    assert set(WHY_PUBLIC) | set(ERROR_TREE) <= set(ch.__all__)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name, where in WHY_PUBLIC.items():
        if where == "README":
            assert f"ch.{name}" in readme, name
        else:
            owner: object = ch
            for part in where.split("."):
                owner = getattr(owner, part)
            assert callable(owner)
            assert name in str(inspect.signature(owner)), (name, where)


def test_the_root_keeps_at_most_65_names() -> None:
    assert len(ch.__all__) <= 65


# Private modules with a reviewed __all__ that the CLI may import (import-linter protects
# each: pyproject.toml): the core's plumbing, the gateway's, and the ledger it reads back.
_REVIEWED_PLUMBING = (
    "copilot_host._internal",
    "copilot_host.gateway._plumbing",
    "copilot_host.gateway._ledger",
)


@pytest.mark.parametrize("folder", ["cli", "copilot_host/gateway"])
def test_the_cli_and_the_gateway_use_only_public_names(folder: str) -> None:
    """Only names in a public package's ``__all__`` (or the reviewed
    ``copilot_host._internal``): nothing deprecated. Which modules they may import at all is
    import-linter's (pyproject.toml; .ci/run runs lint-imports)."""
    for source, tree in _trees(folder):
        aliases = _root_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] != "copilot_host":
                    continue
                if node.module not in _REVIEWED_PLUMBING:
                    assert not any(p.startswith("_") for p in parts[1:]), (source, node.module)
                public = importlib.import_module(node.module).__all__
                for alias in node.names:
                    assert alias.name in public, (source.name, node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "copilot_host":
                        assert not any(p.startswith("_") for p in parts[1:]), (source, alias.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                assert node.attr in ch.__all__, (source.name, node.attr)


# -- documentation constants ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("copilot_host.gateway._changes", "SERVED_BETAS"),
        ("copilot_host.gateway._app", "FORWARDED_REQUEST_HEADERS"),
        ("copilot_host.gateway._app", "RELAYED_RESPONSE_HEADERS"),
        ("copilot_host.github", "KNOWN_NOTIFICATIONS"),
    ],
)
def test_public_constants_cannot_be_changed(module: str, name: str) -> None:
    """The code reads copies made at import, so a changed constant would change nothing:
    they refuse to change instead."""
    value = getattr(importlib.import_module(module), name)
    assert len(value) > 0
    if isinstance(value, frozenset):
        assert not hasattr(value, "add")
        return
    with pytest.raises(TypeError):
        value["x-new"] = "anything"
    with pytest.raises(TypeError):
        del value[next(iter(value))]
