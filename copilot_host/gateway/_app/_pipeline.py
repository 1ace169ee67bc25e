"""A model request through the stages, in order: intake, resolve, change, admit, relay, account.

:class:`Pipeline` holds what the stages share (the routes, the table of changes as this
gateway applies it, the budget, the hooks, the upstream client) and runs one
:class:`~._flow.Flow` through them:

1. **intake** (:mod:`._intake`): the body read whole and in time, parsed once;
2. **resolve** (:mod:`._resolve`): the route the model name finds;
3. an answer the gateway gives itself for the path (count_tokens), whatever the budget;
   off the event loop for a body over 1 MiB;
4. **change** (:mod:`copilot_host.gateway._changes`): the table's request changes, or the
   gateway's own answer (server tools, a socket's warm-up: never billed, so given whatever
   the budget), and the body that goes upstream; off the event loop for a body over 1 MiB;
5. **admit** (:mod:`._admit`): a spent budget refuses (with the status the sending agent
   stops on); then the request's reservation against the budget;
6. **relay** (:mod:`._relay`): upstream through ``route.auth``, the answer back through the
   table's answer changes, masked, while a watcher waits for the client to hang up
   (:mod:`._hangup`); a request that came on a socket goes through that socket's upstream
   (``flow.upstream``: Copilot's own WebSocket for a model that lists it,
   :mod:`._copilot_socket`), which answers the same way;
7. **account** (:mod:`._account`): the spend settled (the access line is written as the
   answer ends, by :mod:`._app`).

``GET /v1/models`` and ``GET /v1/models/{name}`` are answered from the routes (:meth:`models`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

import httpx2

import copilot_host as ch
from copilot_host._internal import AutoPick, clean

from .._agents import agent_of, budget_status
from .._changes import AnswerPass, ApiChanges, Changes, LocalAnswer, RequestEdit
from .._json import dumps
from .._ledger import Recorder, Start
from .._protocols import Api, models_api
from ._access import Refusal
from ._account import answered, begin, begin_later, settle
from ._admit import admit, over_daily, spent
from ._costs import CostReader
from ._flow import CLOSE, Flow
from ._hangup import HangUp
from ._hooks import GatewayHooks, both
from ._intake import OFF_LOOP_ABOVE, read_body, read_request
from ._names import MAX_MODEL_NAME, NotFound, Served
from ._registry import Registry
from ._relay import AnswerTooLarge, Relayed, Upstream, relay
from ._resolve import name_too_long, resolve, shown, unknown_model
from ._spend import Reservation, Spend

__all__ = ["MODEL_HEADER", "MODEL_PREFIX", "MODELS", "Pipeline"]

_log = logging.getLogger("copilot_host.gateway")

MODELS = "/v1/models"
MODEL_PREFIX = "/v1/models/"
# On every answer relayed from a route: the Copilot model that served it.
MODEL_HEADER = "x-copilot-host-model"
_MODEL_HEADER = MODEL_HEADER.encode("ascii")
_EVENT_STREAM = b"text/event-stream"
_JSON = b"application/json"


def _served_by(route: ch.ModelRoute) -> tuple[tuple[bytes, bytes], ...]:
    return ((_MODEL_HEADER, route.model_id.encode("ascii")),)


class Pipeline:
    """The stages of a model request and what they share (see the module docstring)."""

    def __init__(
        self,
        registry: Registry,
        changes: Changes,
        spend: Spend,
        hooks: GatewayHooks,
        upstream: Callable[[], httpx2.AsyncClient],
    ) -> None:
        self.registry = registry
        self.changes = changes
        self.spend = spend
        self.hooks = hooks
        self._upstream = upstream
        # Numbers for the ids of the answers the gateway writes itself.
        self._serials = itertools.count(1)
        # Who sends the requests a rule of ._agents does not name (``run``: its agent).
        self.agent = "other"
        # Where each model request is recorded (serve's and run's ledger), and the wall
        # clock its rows are timed by.
        self.recorder: Recorder | None = None
        self.clock: ch.Clock = ch.SYSTEM_CLOCK

    # -- GET /v1/models ------------------------------------------------------------------

    async def models(self, flow: Flow) -> None:
        api = models_api(flow.headers.values.get(b"anthropic-version"))
        if flow.path == MODELS:
            snapshot = await self.registry.current()
            await flow.answer(200, snapshot.lists[api])
            return
        name = flow.path[len(MODEL_PREFIX) :]
        if len(name) > MAX_MODEL_NAME:
            flow.asked = flow.model = shown(name[:65], 64)
            await flow.refuse(name_too_long())
            return
        snapshot = await self.registry.current()
        found = snapshot.names.resolve(name, api.protocol if api.own_models_only else None)
        flow.asked = shown(name, 64)
        if not isinstance(found, Served):
            flow.model = flow.asked
            await flow.refuse(
                Refusal(found.status, found.code, found.message)
                if isinstance(found, NotFound)
                else unknown_model(name)
            )
            return
        route = found.route
        flow.model = route.model_id
        await flow.answer(200, ch.mask_secrets(dumps(api.model_entry(route))), _served_by(route))

    # -- a model request -----------------------------------------------------------------

    async def inference(self, flow: Flow, api: Api) -> None:
        body = await read_body(flow.receive, flow.headers, flow.task)
        if isinstance(body, Refusal):
            await flow.refuse(body)
            return
        if body is None:
            return  # the client hung up while sending
        flow.body_read = True
        flow.api = api
        parsed = await read_request(body, api)
        if isinstance(parsed, Refusal):
            await flow.refuse(parsed)
            return
        found = await resolve(flow, self.registry, parsed, api)
        if isinstance(found, Refusal):
            await flow.refuse(found)
            return
        served, identity = found
        route = served.route
        flow.agent = agent_of(flow.headers.values, self.agent)
        changes = self.changes.of(api, flow.transport)
        edit = RequestEdit(api, parsed.value, route, flow.headers.all(b"anthropic-beta"))
        edit.asked = flow.asked
        own = self.changes.paths.get(flow.path)
        if own is not None:
            # Never upstream, never billed, served whatever the budget; off the event loop
            # for a large body, as the changes are.
            answer = (
                await asyncio.to_thread(own.local, edit)
                if len(body) > OFF_LOOP_ABOVE
                else own.local(edit)
            )
            if answer is not None:
                flow.rewrote = [own.name]  # the change that answered, as the line says
                await self._answer_locally(flow, route, answer, identity)
                return
        edit.serial = next(self._serials)
        if len(body) > OFF_LOOP_ABOVE:
            upstream_body = await asyncio.to_thread(_change, changes, edit, body)
        else:
            upstream_body = _change(changes, edit, body)
        flow.rewrote = edit.applied
        if edit.local is not None:
            # The gateway's own answer (server tools, a socket's warm-up, a refusal of a
            # shape it cannot send): never upstream, never billed, whatever the budget.
            await self._answer_locally(flow, route, edit.local, identity)
            return
        refused = spent(self.spend, budget_status(flow.agent))
        if refused is not None:
            await flow.refuse(refused)
            return
        assert upstream_body is not None
        known = parsed.facts
        # Every field of the facts, with the model upstream knows (dataclasses.replace
        # costs several times this; tests/gateway/test_units.py pins the fields).
        facts = ch.RequestFacts(
            vision=known.vision, initiator=known.initiator, model=route.model_id
        )
        # Admitted last: every way out of this request after here releases the
        # reservation (the relay settles it).
        held = await self._admitted(flow, route, identity, upstream_body, edit.value)
        if held is None:
            return
        answers = changes.answers(edit)
        # The parsed tree goes before the request does: only the bytes travel on.
        del parsed
        edit.release()
        await self._relay(
            flow,
            edit,
            changes,
            upstream_body,
            facts=facts,
            identity=identity,
            held=held,
            answers=answers,
            pick=served.pick,
        )

    async def _admitted(
        self,
        flow: Flow,
        route: ch.ModelRoute,
        identity: ch.LoginIdentity,
        body: bytes,
        value: dict[str, Any],
    ) -> Reservation | None:
        """Stage: admit. The request's reservation against the run's budget, and its
        ledger row begun (which the daily budget may refuse); None once it was refused."""
        api = flow.api
        assert api is not None
        held = admit(self.spend, api, route, body, value)
        if isinstance(held, Refusal):
            await flow.refuse(held)
            return None
        recorder = self.recorder
        if recorder is None:
            return held
        try:
            over = begin(recorder, flow, identity, route, held=held, wall=self.clock.time())
            if isinstance(over, Start):
                over = await begin_later(recorder, flow, over, held)
        except BaseException:
            self.spend.release(held)  # its client left before it went upstream
            raise
        if over is not None:
            self.spend.release(held)
            await flow.refuse(over_daily(over.message(), budget_status(flow.agent)))
            return None
        return held

    async def _answer_locally(
        self, flow: Flow, route: ch.ModelRoute, answer: LocalAnswer, identity: ch.LoginIdentity
    ) -> None:
        await flow.answer(
            answer.status,
            answer.body,
            _served_by(route),
            content_type=_EVENT_STREAM if answer.stream else _JSON,
        )
        if self.recorder is not None:
            answered(self.recorder, flow, identity, route, self.clock.time())

    async def _relay(
        self,
        flow: Flow,
        edit: RequestEdit,
        changes: ApiChanges,
        body: bytes,
        *,
        facts: ch.RequestFacts,
        identity: ch.LoginIdentity,
        held: Reservation,
        answers: AnswerPass | None,
        pick: AutoPick | None,
    ) -> None:
        task = flow.task
        outcome = flow.outcome
        route = edit.route
        # With a budget, a client that hangs up does not end the upstream request: its
        # answer is read to the end (bounded) so that the cost it reports counts.
        hangup = HangUp(flow, task, drain=self.spend.max_credits is not None)
        auth = route.auth
        if isinstance(auth, ch.CopilotAuth):
            # What the gateway read already, so route.auth reads neither body nor login
            # (nor, for Copilot Auto, picks again: the body names its pick already).
            auth = auth.for_request(facts, identity, pick)
        hooks = self.hooks
        # HTTP, unless the request came on a socket that has an upstream of its own.
        upstream: Upstream = flow.upstream or relay
        call = Relayed(
            edit,
            changes,
            flow.headers,
            hangup.send,
            outcome,
            auth=auth,
            header_filter=hooks.request_headers,
            observer=both(
                CostReader(outcome, edit.api.tokens, _usage_prices(edit.api, route)),
                hooks.observe(route) if hooks.observe else None,
            ),
            extra_headers=(*_served_by(route), *((CLOSE,) if flow.close else ())),
            answers=answers,
            facts=facts,
        )
        watcher = task.get_loop().create_task(hangup.watch())
        try:
            await upstream(self._upstream(), body, call)
        except asyncio.CancelledError:
            if hangup.gone and task.uncancel() == 0:
                _log.debug(
                    "client hung up: upstream request for %s %s",
                    route.model_id,
                    "read for its cost until cut" if hangup.drain else "cancelled",
                )
                return
            raise
        except ch.OriginError as exc:
            if exc.code == "origin_mismatch":
                # The account's inference origin moved: these routes point at the old one.
                self.registry.stale()
            raise
        except AnswerTooLarge:
            raise ch.ResponseError(
                "the Copilot API's answer was larger than the gateway relays",
                code="response_too_large",
            ) from None
        finally:
            watcher.cancel()
            hangup.end()
            # An answer that ended before its cost could be read (a cut drain, a client
            # gone, a stream broken off) was served and may be billed: its reservation
            # counts. A request that failed before any answer was not.
            unread = hangup.cut or (
                not outcome.done and (hangup.gone or 200 <= outcome.status < 300)
            )
            settle(self.spend, flow, held, unread=unread)
        if outcome.upstream_id and _log.isEnabledFor(logging.DEBUG):
            # Tested first: the id's cleaning would otherwise run on every request.
            _log.debug(
                "%s answered %d (GitHub request id %s)",
                route.url,
                outcome.status,
                clean(outcome.upstream_id, limit=80),
            )


def _usage_prices(api: Api, route: ch.ModelRoute) -> ch.TokenPrices | None:
    """The prices an answer reporting no cost is priced at (its API's ``prices_usage``)."""
    billing = route.spec.billing
    return billing.prices if api.prices_usage and billing is not None else None


def _change(changes: ApiChanges, edit: RequestEdit, body: bytes) -> bytes | None:
    """Stage: change (see the module docstring): the body that goes upstream, or None when
    the gateway answers the request itself (``edit.local``)."""
    changes.request(edit)
    if edit.local is not None:
        return None
    return changes.body(edit, body)
