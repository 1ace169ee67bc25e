"""Stage: account. What one request is recorded as: its access line, and its spend settled.

Each request ends with one access line: method, path, model (``ASKED->SERVED`` when a rule
of :mod:`._names` found another model; ``auto->SERVED`` when Copilot Auto picked it, and
``ASKED->auto->SERVED`` when the name asked went to Auto), status, bytes sent, duration,
``credits=`` when the answer reported a cost, and ``rewrote=`` with the changes applied;
nothing from bodies, keys or tokens. It is written just before the last piece of the
answer goes out (so a client that has its answer can find the line), or at the end when
there was no answer: to the app's ``access_line`` sink when it has one, else to the
``copilot_host.gateway.access`` logger at INFO.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ._flow import Flow
from ._resolve import shown
from ._spend import Reservation, Spend, format_credits

__all__ = ["ACCESS_LOGGER", "access_line", "settle", "writer"]

ACCESS_LOGGER = "copilot_host.gateway.access"
_access = logging.getLogger(ACCESS_LOGGER)


def access_line(flow: Flow) -> str:
    """The request's access line, as it stands now."""
    outcome = flow.outcome
    model = "->".join(_chain(flow.asked, flow.via, flow.model))
    line = (
        f"{flow.method} {shown(flow.path)} model={model} status={outcome.status or 499} "
        f"bytes={outcome.sent} {(time.perf_counter() - flow.started) * 1000.0:.1f}ms"
    )
    if outcome.credits is not None:
        line += f" credits={format_credits(outcome.credits)}"
    if flow.rewrote:
        line += " rewrote=" + ",".join(flow.rewrote)
    return line


def _chain(*names: str) -> list[str]:
    """The names a request went through, each once, in order (an empty one left out)."""
    chain: list[str] = []
    for name in names:
        if name and (not chain or chain[-1] != name):
            chain.append(name)
    return chain or ["-"]


def writer(flow: Flow, sink: Callable[[str], None] | None) -> Callable[[], None]:
    """The flow's one access-line writer: to ``sink``, else the access logger (skipped
    when that logger would drop the line); writes once however often it is called."""
    logged = False

    def log() -> None:
        nonlocal logged
        if logged or (sink is None and not _access.isEnabledFor(logging.INFO)):
            return
        logged = True
        line = access_line(flow)
        if sink is not None:
            sink(line)
            return
        # The record made here and handed to the logger's handlers as .info() would,
        # without its search of the stack for the caller (the same every time).
        _access.handle(
            _access.makeRecord(ACCESS_LOGGER, logging.INFO, __file__, 0, line, (), None, "log")
        )

    return log


def settle(spend: Spend, flow: Flow, held: Reservation, *, unread: bool) -> None:
    """The request's reservation released and what its answer cost counted (its
    reservation, when the answer ended before its cost could be read: ``unread``)."""
    outcome = flow.outcome
    spend.settle(held, outcome.credits, unread=unread, estimated=outcome.estimated)
    spend.quota(outcome.quota)
