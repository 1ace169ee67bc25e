"""A loopback emulator of GitHub.com and the Copilot API, for tests and demos.

``GitHubEmulator`` serves the device flow, the Copilot token exchange, ``/user``,
``/models``, the three model protocols (``/chat/completions``, ``/responses`` and
``/v1/messages``, whole or streamed), ``/embeddings`` and Copilot's Responses WebSocket
(``wss://{api}/responses``, on a port of its own) on 127.0.0.1, refusing what the
real service refuses with its real status, body and content type; its transports route
GitHub's real hostnames there, so the adapter under test keeps its fixed URLs and the
inference-origin allowlist stays strict. ``Scenario`` scripts it. Nothing in the library
imports this package, and it needs nothing beyond the library's own dependencies.
"""

from __future__ import annotations

from ._emulator import GitHubEmulator
from ._groups import (
    AUTO_CALLS,
    AUTO_ONLY_PLANS,
    COPILOT_CLI_CLIENT_ID,
    USAGE_PLANS,
    VSCODE_CLIENT_ID,
    Auto,
    DeviceFlow,
    Faults,
    Inventory,
    RateWindow,
    RawAnswer,
    Replies,
    Session,
    Sockets,
    Usage,
)
from ._inventory import (
    chat_model,
    embeddings_model,
    inventory_of,
    minimal_models,
    realistic_models,
    token_billing,
)
from ._protocols import ToolCall
from ._record import RecordedRequest
from ._routes import ENDPOINTS
from ._scenario import CHECKS, Scenario
from ._transport import async_loopback_transport, loopback_socket_connector, loopback_transport

__all__ = [
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
]
