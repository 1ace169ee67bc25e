"""While a request is relayed: what happens when its client hangs up.

ASGI tells the app with ``http.disconnect``; the watcher then cancels the relay at once,
which closes the upstream connection even while upstream is silent. With a budget
(``drain``), the answer is instead read to its end with nothing sent on, bounded by
:data:`DRAIN_SECONDS` and :data:`~._relay.MAX_ANSWER_BYTES`, so that the cost it reports
counts.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._flow import Flow, Message
from ._relay import MAX_ANSWER_BYTES

__all__ = ["DRAIN_SECONDS", "HangUp"]

# How long, with a budget set, an answer whose client hung up is still read for its cost.
DRAIN_SECONDS = 60.0


class HangUp:
    """While a request is relayed: waits for its client to hang up (ASGI's
    ``http.disconnect``), then cancels the relay at once, which closes the upstream
    connection even while upstream is silent; or, with ``drain``, lets the relay read the
    answer to its end (for the cost it reports) with nothing sent on, for at most
    :data:`DRAIN_SECONDS` and :data:`MAX_ANSWER_BYTES`, and cancels it past either."""

    __slots__ = ("_call", "_drained", "_task", "_timer", "cut", "drain", "gone")

    def __init__(self, call: Flow, task: asyncio.Task[Any], *, drain: bool) -> None:
        self._call = call
        self._task = task
        self.drain = drain
        self.gone = False
        # The drain was stopped before the answer ended.
        self.cut = False
        self._drained = 0
        self._timer: asyncio.TimerHandle | None = None

    def _stop_draining(self) -> None:
        self.cut = True
        self._task.cancel()

    async def watch(self) -> None:
        call = self._call
        while True:
            message = await call.receive()
            if message["type"] == "http.disconnect":
                if not call.outcome.done:
                    self.gone = True
                    if self.drain:
                        loop = asyncio.get_running_loop()
                        self._timer = loop.call_later(DRAIN_SECONDS, self._stop_draining)
                    else:
                        self._task.cancel()
                return

    async def send(self, message: Message) -> None:
        if not self.gone:
            await self._call.send(message)
            return
        self._drained += len(message.get("body", b""))
        if self._drained > MAX_ANSWER_BYTES and not self.cut:
            self._stop_draining()

    def end(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
