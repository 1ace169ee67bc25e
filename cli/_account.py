"""Whose models a gateway serves (:class:`Account`): this login's or the emulator's. A leaf,
so that the modules making one (``_gateway.account``, ``_emulated``) and those using one
(``serve``, ``run``) need not import each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

    from copilot_host import Clock
    from copilot_host.github import AsyncGitHubCopilotHost
    from copilot_host.store import CredentialStore

__all__ = ["Account"]


@dataclass(frozen=True)
class Account:
    """Whose models the gateway serves: the store to read the login from, a maker of the
    asynchronous host (called on the gateway's loop), of the upstream transport and of
    the connector of Copilot's WebSocket (``create_app``'s ``sockets``; None: its
    default)."""

    store: CredentialStore
    make_host: Callable[[], AsyncGitHubCopilotHost]
    make_transport: Callable[[], httpx2.AsyncBaseTransport] | None
    emulator: bool = False
    clock: Clock | None = None
    make_sockets: Callable[[], Any] | None = None
