"""The one place that knows which headers GitHub and the Copilot API expect.

The Copilot API serves known editors only, and gates new models on the editor's version:
a stale identity gets ``model_not_supported_in_version`` for new models and, once GitHub
retires it, HTTP 466 for everything. The default identity below is therefore the newest
pairing that VS Code's own Copilot extension has shipped with (docs/WIRE.md, "Editor
identity", says where each value was read and how to update them together); an embedding
application may present its own (``EditorIdentity``) and its own OAuth app
(``client_id``), always as constructor arguments: the library never reads the environment
(the CLI alone reads ``COPILOT_HOST_EDITOR`` and passes what it parsed here, through
:func:`parse_editor`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .._version import __version__

if TYPE_CHECKING:
    from .._hosts import CopilotSession

__all__ = [
    "DEFAULT_CLIENT_ID",
    "DEFAULT_EDITOR",
    "REST_API_VERSION",
    "TOKEN_API_VERSION",
    "EditorIdentity",
    "CLI_INTEGRATION_ID",
    "check_client_id",
    "cli_headers",
    "cli_user_agent",
    "parse_editor",
    "copilot_headers",
    "exchange_headers",
    "oauth_headers",
    "rest_headers",
    "session_headers",
]

# The OAuth app GitHub's own Copilot editors log in with; the Copilot token exchange
# only accepts credentials minted for an app GitHub has enabled for Copilot.
DEFAULT_CLIENT_ID = "Iv1.b507a08c87ecfe98"

# The api.github.com REST version for `GET /user`: a REST endpoint rejects Copilot-API
# version dates, so the two are kept apart.
REST_API_VERSION = "2022-11-28"
# What VS Code's Copilot extension sends to the token exchange (copilot_internal/v2/token),
# which is versioned apart from the inference API.
TOKEN_API_VERSION = "2025-04-01"  # noqa: S105 - a version date, not a secret

# Printable ASCII without spaces at the ends: header values that can never inject a line.
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?")
_CLIENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True, slots=True)
class EditorIdentity:
    """How requests introduce themselves to the Copilot API.

    The Copilot API admits requests from known integrations only, so the defaults name the
    integration GitHub's own chat clients use; ``user_agent`` also says which library sent it.
    """

    # VS Code's Copilot extension 0.68.0 (microsoft/vscode extensions/copilot/package.json)
    # with the VS Code release it pairs with, and the API version @vscode/copilot-api 0.5.2
    # (the release that extension depends on) writes over every Copilot API call in
    # `_mixinHeaders`: docs/WIRE.md, "Editor identity", records the sources and the update
    # procedure.
    editor_version: str = "vscode/1.140.0"
    plugin_version: str = "copilot-chat/0.68.0"
    integration_id: str = "vscode-chat"
    user_agent: str = f"GitHubCopilotChat/0.68.0 copilot-host/{__version__}"
    api_version: str = "2026-08-01"

    def __post_init__(self) -> None:
        for name in (
            "editor_version",
            "plugin_version",
            "integration_id",
            "user_agent",
            "api_version",
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or not _HEADER_VALUE.fullmatch(value):
                raise ValueError(f"EditorIdentity.{name} must be 1-200 printable ASCII characters")


DEFAULT_EDITOR = EditorIdentity()

# "vscode/1.140.0 copilot-chat/0.68.0": the two versions a person may override, as VS
# Code's own headers spell them (dotted numbers, as the service compares them).
_OVERRIDE = re.compile(
    r"vscode/(\d{1,4}(?:\.\d{1,6}){1,3}) copilot-chat/(\d{1,4}(?:\.\d{1,6}){1,3})"
)


def parse_editor(text: str, base: EditorIdentity = DEFAULT_EDITOR) -> EditorIdentity:
    """``base`` presenting the editor and extension versions ``text`` names.

    ``text`` is exactly two tokens, ``vscode/X.Y.Z copilot-chat/A.B.C``; anything else
    raises ``ValueError``. ``Editor-Version``, ``Editor-Plugin-Version`` and the
    ``GitHubCopilotChat/...`` part of ``User-Agent`` follow it; the API version does not
    (it is the API copilot-host speaks, not the editor it claims to be).
    """
    match = _OVERRIDE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            "expected two tokens like 'vscode/1.140.0 copilot-chat/0.68.0', "
            f"got {text.strip()[:80]!r}"
            if isinstance(text, str)
            else "expected a string"
        )
    vscode, chat = match.groups()
    return replace(
        base,
        editor_version=f"vscode/{vscode}",
        plugin_version=f"copilot-chat/{chat}",
        user_agent=f"GitHubCopilotChat/{chat} copilot-host/{__version__}",
    )


def check_client_id(client_id: object) -> str:
    """An OAuth client id goes into a form body: keep it to a short, plain token."""
    if not isinstance(client_id, str) or not _CLIENT_ID.fullmatch(client_id):
        raise ValueError("client_id must be 1-100 letters, digits and . _ -")
    return client_id


def oauth_headers(editor: EditorIdentity) -> dict[str, str]:
    """github.com device-flow requests: ask for JSON (GitHub answers forms otherwise)."""
    return {
        "Accept": "application/json",
        "User-Agent": editor.user_agent,
        "Editor-Version": editor.editor_version,
        "Editor-Plugin-Version": editor.plugin_version,
    }


def exchange_headers(editor: EditorIdentity) -> dict[str, str]:
    """The Copilot token exchange on api.github.com (``Authorization`` added by the caller)."""
    return {
        "Accept": "application/json",
        "User-Agent": editor.user_agent,
        "Editor-Version": editor.editor_version,
        "Editor-Plugin-Version": editor.plugin_version,
        "X-GitHub-Api-Version": TOKEN_API_VERSION,
    }


def rest_headers(editor: EditorIdentity) -> dict[str, str]:
    """Plain api.github.com REST calls (``GET /user``)."""
    return {
        "Accept": "application/json",
        "User-Agent": editor.user_agent,
        "X-GitHub-Api-Version": REST_API_VERSION,
    }


# The Copilot CLI's identity as @github/copilot 1.0.102 builds it (docs/WIRE.md, "The
# Copilot CLI's identity", says how each value was read and how to refresh them): its
# runtime's `supportPackageEditorVersionCurrent()` and `supportPackageUserAgentCurrent()`,
# and the integration id `cli-main.js` sends unless GITHUB_COPILOT_INTEGRATION_ID is set.
# No Editor-Plugin-Version, and no Copilot-Harness-Id: the CLI sends that one only beside
# its MCP headers, never on inference. The User-Agent's comment is the OS (node's
# `process.platform`, which Python's `sys.platform` spells the same way on the three
# platforms the CLI ships for), the node version the package embeds, and `term/unknown`,
# the CLI's value when no TERM_PROGRAM names a terminal (the library never reads the
# environment); copilot-host names itself after it.
CLI_INTEGRATION_ID = "copilot-developer-cli"
CLI_VERSION = "copilot/1.0.102"
CLI_NODE_VERSION = "v24.20.0"


def _cli_platform() -> str:
    import sys

    return sys.platform if sys.platform in ("linux", "darwin", "win32") else "linux"


def cli_user_agent() -> str:
    """``copilot/<v> (<os> <node>) term/unknown copilot-host/<v>``."""
    return (
        f"{CLI_VERSION} ({_cli_platform()} {CLI_NODE_VERSION}) term/unknown "
        f"copilot-host/{__version__}"
    )


def cli_headers(editor: EditorIdentity) -> dict[str, str]:
    """Every Copilot API request under the Copilot CLI's identity (the API version stays
    copilot-host's)."""
    return {
        "Editor-Version": CLI_VERSION,
        "Copilot-Integration-Id": CLI_INTEGRATION_ID,
        "User-Agent": cli_user_agent(),
        "X-GitHub-Api-Version": editor.api_version,
    }


def copilot_headers(editor: EditorIdentity) -> dict[str, str]:
    """Every request to a Copilot inference origin: discovery and each model request."""
    return {
        "Editor-Version": editor.editor_version,
        "Editor-Plugin-Version": editor.plugin_version,
        "Copilot-Integration-Id": editor.integration_id,
        "User-Agent": editor.user_agent,
        "X-GitHub-Api-Version": editor.api_version,
    }


def session_headers(session: CopilotSession, identity: Mapping[str, str]) -> dict[str, str]:
    """A request of the adapter's own to the inference origin (discovery, Auto's session
    calls): the identity's headers, JSON asked for, and the session bearer."""
    headers = dict(identity)
    headers["Accept"] = "application/json"
    headers["Authorization"] = f"Bearer {session.token.reveal()}"
    return headers
