"""Stage: account. What one request is recorded as: its access line, its spend settled, and
its ledger row when a ledger records the gateway's requests.

Each request ends with one access line: method, path, model (``ASKED->SERVED`` when a rule
of :mod:`._names` found another model; ``auto->SERVED`` when Copilot Auto picked it, and
``ASKED->auto->SERVED`` when the name asked went to Auto), status, bytes sent, duration,
``credits=`` when the answer reported a cost, and ``rewrote=`` with the changes applied;
nothing from bodies, keys or tokens. It is written just before the last piece of the
answer goes out (so a client that has its answer can find the line), or at the end when
there was no answer: to the app's ``access_line`` sink when it has one, else to the
``copilot_host.gateway.access`` logger at INFO.

With a ledger (``serve`` and ``run`` open one: :mod:`copilot_host.gateway._ledger`), a
model request's row is begun before it goes upstream (:func:`begin`: the ledger may refuse
it for ``--max-credits-per-day``) and ended when its access line is written, with what the
client got: the status, the tokens and credits the answer reported (its reservation,
estimated, when the answer ended before its cost could be read), the duration and the
changes applied. An answer the gateway gives itself is one row, 0 credits (:func:`answered`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import copilot_host as ch

from .._ledger import Admission, End, OverDailyBudget, Recorder, Start
from ._flow import Flow
from ._resolve import shown
from ._spend import Reservation, Spend, format_credits

__all__ = [
    "ACCESS_LOGGER",
    "Recorded",
    "access_line",
    "answered",
    "begin",
    "begin_later",
    "settle",
    "writer",
]

ACCESS_LOGGER = "copilot_host.gateway.access"
_access = logging.getLogger(ACCESS_LOGGER)


def access_line(flow: Flow) -> str:
    """The request's access line, as it stands now."""
    outcome = flow.outcome
    asked, model = flow.asked, flow.model
    if flow.via or (asked and asked != model):
        model = "->".join(_chain(asked, flow.via, model))
    elif not model:
        model = "-"
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
        if logged:
            return
        logged = True
        if flow.recorded is not None:
            _end(flow, flow.recorded)
        if sink is None and not _access.isEnabledFor(logging.INFO):
            return
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
    recorded = flow.recorded
    if recorded is not None and unread and outcome.credits is None:
        recorded.reservation_spent = True


@dataclass(slots=True)
class Recorded:
    """A request's ledger row while it is in flight: the row, the recorder, and what was
    reserved (counted, estimated, when the answer's cost could not be read)."""

    recorder: Recorder
    row: int
    reserved: float | None
    reservation_spent: bool = False


def _start(
    flow: Flow,
    identity: ch.LoginIdentity,
    route: ch.ModelRoute,
    wall: float,
    reserved: float | None,
) -> Start:
    api = flow.api
    assert api is not None
    # Positional, in Start's field order: a NamedTuple made from keywords parses them in
    # Python, and this runs for every model request.
    return Start(
        wall,  # time
        identity.account,  # login
        flow.agent,
        api.name,  # api
        flow.asked,  # model_asked
        route.model_id,  # model
        reserved,
        tuple(flow.rewrote),
    )


def begin(
    recorder: Recorder,
    flow: Flow,
    identity: ch.LoginIdentity,
    route: ch.ModelRoute,
    *,
    held: Reservation,
    wall: float,
) -> Start | OverDailyBudget | None:
    """Record ``flow`` as in flight before it goes upstream, when that needs no waiting
    (as it usually does not: no coroutine is made then). None once it is kept (the run's
    journal, or a committed row), the daily budget's refusal (nothing recorded then), or
    the start, to be awaited in :func:`begin_later`."""
    start = _start(flow, identity, route, wall=wall, reserved=held.credits)
    admission = recorder.begin_now(start)
    return start if admission is None else _admitted(recorder, flow, held, admission)


async def begin_later(
    recorder: Recorder, flow: Flow, start: Start, held: Reservation
) -> OverDailyBudget | None:
    """The rest of :func:`begin` when it could not keep the start at once."""
    return _admitted(recorder, flow, held, await recorder.begin(start))


def _admitted(
    recorder: Recorder, flow: Flow, held: Reservation, admission: Admission
) -> OverDailyBudget | None:
    if isinstance(admission, OverDailyBudget):
        return admission
    if admission.row is not None:
        flow.recorded = Recorded(recorder, admission.row, held.credits)
    return None


def _duration_ms(flow: Flow) -> int:
    return int((time.perf_counter() - flow.started) * 1000.0)


def _end(flow: Flow, recorded: Recorded) -> None:
    outcome = flow.outcome
    credits, estimated = outcome.credits, outcome.estimated
    if recorded.reservation_spent:
        credits, estimated = recorded.reserved, True
    # Positional, in End's field order (as _start, for the same reason).
    recorded.recorder.end(
        End(
            recorded.row,  # row
            outcome.status or 499,  # status
            outcome.input_tokens,
            outcome.output_tokens,
            outcome.cached_tokens,
            credits,
            estimated and credits is not None,  # credits_estimated
            _duration_ms(flow),
            tuple(flow.rewrote),
        )
    )


def answered(
    recorder: Recorder, flow: Flow, identity: ch.LoginIdentity, route: ch.ModelRoute, wall: float
) -> None:
    """Record an answer the gateway gave itself (count_tokens, server tools, a socket's
    warm-up): one row, 0 credits. A refusal it gave is not a request it served: the access
    line has it, the ledger does not."""
    status = flow.outcome.status
    if not 200 <= status < 300:
        return
    recorder.answered(
        _start(flow, identity, route, wall=wall, reserved=None),
        End(row=0, status=status, credits=0.0, duration_ms=_duration_ms(flow)),
    )
