"""The GitHub.com adapter: the only code that knows GitHub's URLs and JSON.

``GitHubCopilotHost`` (threads) and ``AsyncGitHubCopilotHost`` (asyncio) implement the
:class:`copilot_host.CopilotHost` seam: device-flow login, the Copilot session exchange,
model discovery and the editor identity headers. The authority is fixed to GitHub.com;
the only test seam is the httpx2 transport passed to the constructor.
"""

from __future__ import annotations

from ._async_host import AsyncGitHubCopilotHost
from ._checkup import Checkup, IdentityCheck, ProbeCheck
from ._core import PROVIDER_ID
from ._exchange import KNOWN_NOTIFICATIONS
from ._headers import DEFAULT_CLIENT_ID, DEFAULT_EDITOR, EditorIdentity, parse_editor
from ._host import GitHubCopilotHost

__all__ = [
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
]
