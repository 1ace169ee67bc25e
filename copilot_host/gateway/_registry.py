"""The gateway's own catalog: registered on first use, again when the login changes, and
at least every 30 minutes; and the ``GET /v1/models`` documents made from it.

Every request asks :meth:`Registry.current` for the routes. That reads the host's
``availability()`` (one cached ``stat()``): no login is ``NotLoggedInError`` (503), the
same login as the routes' is the routes as they are, and a new login (a logout and login
again, another account) waits for a registration made for it. Concurrent requests share
one registration, run as its own task so a client that hangs up cannot cancel it for the
others. A registration that fails is reported to every request for the next second
without another attempt, so a burst while GitHub is down costs one registration a second.
When the routes are 30 minutes old, a request starts a registration in the background and
is served by the routes it has; if that fails, the old routes stay and it is tried again
a minute later.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import copilot_host as ch

from ._names import ModelNames, NameTable

__all__ = [
    "PROTOCOL_OF_PATH",
    "REREGISTER_AFTER",
    "Registry",
    "Snapshot",
    "anthropic_entry",
    "endpoints_of",
    "openai_entry",
]

# The gateway's paths and the protocol each speaks.
PROTOCOL_OF_PATH: Mapping[str, ch.ApiProtocol] = {
    "/v1/chat/completions": ch.ApiProtocol.OPENAI_CHAT,
    "/v1/responses": ch.ApiProtocol.OPENAI_RESPONSES,
    "/v1/messages": ch.ApiProtocol.ANTHROPIC_MESSAGES,
}
_PATH_OF = {protocol: path for path, protocol in PROTOCOL_OF_PATH.items()}

_log = logging.getLogger("copilot_host.gateway")

# Routes are registered again at least this often, so models the account gains or loses
# show up without a restart.
REREGISTER_AFTER = 30 * 60.0
# After a background re-registration failed, the routes in hand stay; try again after this.
RETRY_AFTER_FAILURE = 60.0
# A failed registration is reported to everyone for this long before the next attempt.
FAILURE_MEMORY = 1.0


def endpoints_of(route: ch.ModelRoute) -> list[str]:
    """The gateway paths a route may be called on, in order of preference."""
    return [_PATH_OF[p] for p in ch.ApiProtocol if p in route.spec.protocols]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The routes registered for one login, indexed by model id and route id."""

    identity: ch.LoginIdentity
    by_name: Mapping[str, ch.ModelRoute]
    openai_list: bytes
    anthropic_list: bytes
    due: float  # monotonic time of the next re-registration
    names: NameTable  # how a request's model name finds its route (._names)

    def find(self, name: str) -> ch.ModelRoute | None:
        return self.by_name.get(name)


def openai_entry(route: ch.ModelRoute, owner: str) -> dict[str, Any]:
    spec = route.spec
    return {
        "id": route.model_id,
        "object": "model",
        # The inventory does not say when a model was released.
        "created": 0,
        "owned_by": owner,
        "route_id": route.route_id,
        "display_name": spec.display_name,
        "endpoints": endpoints_of(route),
        "context_window": spec.context_window,
        "max_output_tokens": spec.max_output_tokens,
        "input_modalities": list(spec.input_modalities),
        "supports_reasoning": spec.supports_reasoning,
        "picker_enabled": spec.picker_enabled,
        # What the model costs, as `copilot-host models --json` shows it.
        "billing": None if spec.billing is None else spec.billing.document(),
    }


def anthropic_entry(route: ch.ModelRoute) -> dict[str, Any]:
    spec = route.spec
    return {
        "type": "model",
        "id": route.model_id,
        "display_name": spec.display_name,
        # Anthropic's documented value when the release date is unknown.
        "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": spec.context_window,
        "max_tokens": spec.max_output_tokens,
    }


def _documents(routes: tuple[ch.ModelRoute, ...], owner: str) -> tuple[bytes, bytes]:
    ordered = sorted(routes, key=lambda r: r.model_id)
    openai = {"object": "list", "data": [openai_entry(r, owner) for r in ordered]}
    # Anthropic clients can call /v1/messages only: they are shown the models served there.
    speaking = [
        anthropic_entry(r) for r in ordered if ch.ApiProtocol.ANTHROPIC_MESSAGES in r.spec.protocols
    ]
    anthropic = {
        "data": speaking,
        "has_more": False,
        "first_id": speaking[0]["id"] if speaking else None,
        "last_id": speaking[-1]["id"] if speaking else None,
    }
    return (
        ch.mask_secrets(json.dumps(openai, ensure_ascii=False).encode("utf-8")),
        ch.mask_secrets(json.dumps(anthropic, ensure_ascii=False).encode("utf-8")),
    )


class Registry:
    """The routes for the current login (see the module docstring). Event-loop bound."""

    def __init__(
        self, host: ch.AsyncCopilotHost, clock: ch.Clock, names: ModelNames | None = None
    ) -> None:
        self._host = host
        self._clock = clock
        self._names = names if names is not None else ModelNames()
        self._catalog = ch.Catalog()
        self._snapshot: Snapshot | None = None
        self._task: asyncio.Task[Snapshot] | None = None
        self._task_identity: ch.LoginIdentity | None = None
        # The registration that failed, by login: told again for FAILURE_MEMORY seconds;
        # after a background one failed, the next waits RETRY_AFTER_FAILURE.
        self._failed: ch.FailureMemory[ch.LoginIdentity] = ch.FailureMemory()
        self.registrations = 0

    @property
    def catalog(self) -> ch.Catalog:
        return self._catalog

    async def current(self) -> Snapshot:
        """The routes to serve this request with; raises what a client must be told."""
        identity = self._host.availability()
        if identity is None:
            self._snapshot = None
            raise ch.NotLoggedInError("no GitHub login on this machine")
        snapshot = self._snapshot
        now = self._clock.monotonic()
        if snapshot is not None and snapshot.identity == identity:
            if (
                now >= snapshot.due
                and self._task is None
                and not self._failed.backing_off(identity, now)
            ):
                # Old routes keep serving while new ones are made.
                self._start(identity, background=True)
            return snapshot
        failed = self._failed.recall(identity, now)
        if failed is not None:
            raise failed
        task = self._start(identity, background=False)
        # Shielded: a client that hangs up stops waiting, the registration goes on.
        return await asyncio.shield(task)

    def stale(self) -> None:
        """The routes no longer fit the account (its inference origin moved): register
        again before the next request is served."""
        self._snapshot = None

    def _start(self, identity: ch.LoginIdentity, *, background: bool) -> asyncio.Task[Snapshot]:
        task = self._task
        if task is not None and self._task_identity == identity:
            return task
        previous = task
        task = asyncio.get_running_loop().create_task(
            self._register(identity, previous, background=background),
            name="copilot-host gateway registration",
        )
        self._task = task
        self._task_identity = identity
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Snapshot]) -> None:
        if self._task is task:
            self._task = None
            self._task_identity = None
        if not task.cancelled():
            # Retrieved here so a background failure nobody awaited is not reported as
            # "exception never retrieved"; waiters get it from the task themselves.
            task.exception()

    async def _register(
        self,
        identity: ch.LoginIdentity,
        previous: asyncio.Task[Snapshot] | None,
        *,
        background: bool,
    ) -> Snapshot:
        if previous is not None:
            # One registration at a time: the catalog is swapped by whichever ends last.
            await asyncio.wait([previous])
        self.registrations += 1
        try:
            result = await ch.aregister_models(self._catalog, self._host, clock=self._clock)
        except Exception as exc:
            now = self._clock.monotonic()
            kept = self._snapshot
            if background and kept is not None and kept.identity == identity:
                # The routes in hand keep serving; no request is told of this failure.
                self._failed.remember(identity, exc, until=now, retry_at=now + RETRY_AFTER_FAILURE)
                return kept
            self._failed.remember(identity, exc, until=now + FAILURE_MEMORY)
            raise
        self._failed.forget()
        by_name: dict[str, ch.ModelRoute] = {}
        for route in result.routes:
            by_name[route.model_id] = route
            by_name[route.route_id] = route
        openai_list, anthropic_list = _documents(result.routes, result.provider_id)
        names = NameTable(result.routes, self._names)
        for line in names.missing_targets():
            # Once per registration: the alias answers 404 naming both until the model
            # comes back or the gateway is started without it.
            _log.warning("%s (requests for it get 404)", line)
        snapshot = Snapshot(
            identity=identity,
            by_name=by_name,
            openai_list=openai_list,
            anthropic_list=anthropic_list,
            due=self._clock.monotonic() + REREGISTER_AFTER,
            names=names,
        )
        if self._host.availability() == identity:
            self._snapshot = snapshot
        return snapshot

    async def aclose(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
