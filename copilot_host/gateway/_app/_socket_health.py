"""What a gateway's upstream sockets share (:mod:`._copilot_socket`): the connector, the
clock, and each model's failures.

VS Code retries a WebSocket request that failed over HTTP once, and after three such
failures in a row stops using WebSockets for the rest of its session
(microsoft/vscode-copilot-chat ``chatMLFetcher.ts``, ``_maxConsecutiveWebSocketFallbacks``).
The gateway runs for days, so the model's sockets are off for :data:`OFF_SECONDS` instead,
then tried again; one warning says so.
"""

from __future__ import annotations

import logging

import copilot_host as ch

from ._connect import Connector

__all__ = ["FAILURES_BEFORE_OFF", "OFF_SECONDS", "CopilotSockets"]

_log = logging.getLogger("copilot_host.gateway")

# Failures in a row that turn a model's sockets off, and for how long.
FAILURES_BEFORE_OFF = 3
OFF_SECONDS = 15 * 60.0


class CopilotSockets:
    """What a gateway's sockets share: the connector, the clock, each model's failures."""

    def __init__(self, connector: Connector, clock: ch.Clock) -> None:
        self.connector = connector
        self.clock = clock
        self._failures: dict[str, int] = {}
        self._off_until: dict[str, float] = {}

    def usable(self, model: str) -> bool:
        until = self._off_until.get(model)
        return until is None or self.clock.monotonic() >= until

    def failed(self, model: str, why: str) -> None:
        count = self._failures.get(model, 0) + 1
        _log.debug("Copilot's socket failed for %s (%s): over HTTP", model, why)
        if count < FAILURES_BEFORE_OFF:
            self._failures[model] = count
            return
        self._failures.pop(model, None)
        self._off_until[model] = self.clock.monotonic() + OFF_SECONDS
        _log.warning(
            "Copilot's WebSocket failed %d times in a row for %s (last: %s); its requests go "
            "over HTTP for the next %d minutes",
            FAILURES_BEFORE_OFF,
            model,
            why,
            OFF_SECONDS // 60,
        )

    def succeeded(self, model: str) -> None:
        self._failures.pop(model, None)
