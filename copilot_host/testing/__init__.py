"""A loopback emulator of GitHub.com and the Copilot API, for tests and demos.

``GitHubEmulator`` serves the device flow, the Copilot token exchange, ``/user``,
``/models`` and minimal ``/chat/completions`` and ``/responses`` answers on 127.0.0.1;
its transports route GitHub's real hostnames there, so the adapter under test keeps its
fixed URLs and the inference-origin allowlist stays strict. ``Scenario`` scripts it.
Nothing in the library imports this package.
"""

from __future__ import annotations

from ._emulator import GitHubEmulator
from ._record import RecordedRequest
from ._scenario import ENDPOINTS, RawAnswer, Scenario, chat_model, default_models, inventory_of

__all__ = [
    "ENDPOINTS",
    "GitHubEmulator",
    "RawAnswer",
    "RecordedRequest",
    "Scenario",
    "chat_model",
    "default_models",
    "inventory_of",
]
