"""The gateway's own catalog: registered on first use, again when the login changes, and
at least every 30 minutes; and the ``GET /v1/models`` documents made from it.

Every request asks :meth:`Registry.current` for the routes. That reads the host's
``availability()`` (one cached ``stat()``): no login is ``NotLoggedInError`` (503), the
same login as the routes' is the routes as they are, and a new login (a logout and login
again, another account) waits for a registration made for it. Concurrent requests share
one registration: a :class:`copilot_host._internal.SingleFlight`, the one the session resolver
shares its exchange by, run as its own task so a client that hangs up stops only its own
wait, never the registration the others wait for. A registration that fails is reported
to every request for the next second without another attempt, so a burst while GitHub is
down costs one registration a second.
When the routes are 30 minutes old, a request starts a registration in the background and
is served by the routes it has; if that fails, the old routes stay and it is tried again
a minute later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial

import copilot_host as ch
from copilot_host._internal import Flight, SingleFlight

from .._protocols import Api, models_api
from ._names import ModelNames, NameTable

__all__ = ["REREGISTER_AFTER", "Registry", "Snapshot"]

_log = logging.getLogger("copilot_host.gateway")

# The APIs whose model lists GET /v1/models answers with (OpenAI's and Anthropic's).
LISTED = (models_api(None), models_api(b"2023-06-01"))

# Routes are registered again at least this often, so models the account gains or loses
# show up without a restart.
REREGISTER_AFTER = 30 * 60.0
# After a background re-registration failed, the routes in hand stay; try again after this.
RETRY_AFTER_FAILURE = 60.0
# A failed registration is reported to everyone for this long before the next attempt.
FAILURE_MEMORY = 1.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The routes registered for one login, indexed by model id and route id."""

    identity: ch.LoginIdentity
    by_name: Mapping[str, ch.ModelRoute]
    # GET /v1/models as each kind of client reads it (._protocols.models_api), made once.
    lists: Mapping[Api, bytes]
    due: float  # monotonic time of the next re-registration
    names: NameTable  # how a request's model name finds its route (._names)

    def find(self, name: str) -> ch.ModelRoute | None:
        return self.by_name.get(name)


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
        # The registration in flight, and the one that failed, by login: told again for
        # FAILURE_MEMORY seconds; after a background one failed, the next waits
        # RETRY_AFTER_FAILURE.
        self._flights: SingleFlight[ch.LoginIdentity, Snapshot] = SingleFlight()
        self.registrations = 0
        # Set by the first registration that succeeds.
        self.registered = asyncio.Event()

    @property
    def catalog(self) -> ch.Catalog:
        return self._catalog

    @property
    def snapshot(self) -> Snapshot | None:
        """The routes in hand, without registering; None before the first registration."""
        return self._snapshot

    async def current(self) -> Snapshot:
        """The routes to serve this request with; raises what a client must be told."""
        identity = self._host.availability()
        if identity is None:
            self._snapshot = None
            raise ch.NotLoggedInError("no GitHub login on this machine")
        snapshot = self._snapshot
        now = self._clock.monotonic()
        flights = self._flights
        if snapshot is not None and snapshot.identity == identity:
            if now >= snapshot.due and not flights.out() and not flights.backing_off(identity, now):
                # Old routes keep serving while new ones are made.
                self._start(identity, background=True)
            return snapshot
        failed = flights.recall(identity, now)
        if failed is not None:
            raise failed
        flight = flights.flying()
        if flight is None or flight.key != identity:
            flight = self._start(identity, background=False)
        # A client that hangs up stops this wait only; the registration goes on.
        return await flight.landed()

    def add_aliases(self, aliases: Mapping[str, str]) -> None:
        """Serve more names (``run``'s agent profiles): aliases given at start win, and
        the routes in hand take the new names at once."""
        names = replace(self._names, aliases={**aliases, **self._names.aliases})
        self._names = names
        snapshot = self._snapshot
        if snapshot is not None:
            self._snapshot = replace(snapshot, names=NameTable(snapshot.names.routes, names))

    def serve_auto_by_default(self) -> None:
        """On a plan that can use only Copilot Auto, serve the names no rule finds with
        ``auto`` (``run``: its command's usual model names); a default model given at start
        wins."""
        names = replace(self._names, auto_default=True)
        self._names = names
        snapshot = self._snapshot
        if snapshot is not None:
            self._snapshot = replace(snapshot, names=NameTable(snapshot.names.routes, names))

    def stale(self) -> None:
        """The routes no longer fit the account (its inference origin moved): register
        again before the next request is served."""
        self._snapshot = None

    def _start(
        self, identity: ch.LoginIdentity, *, background: bool
    ) -> Flight[ch.LoginIdentity, Snapshot]:
        # One registration at a time: one for another login starts after the one out.
        flight = self._flights.start(identity)
        flight.launch(
            self._register,
            partial(self._registered, flight, background=background),
            name="copilot-host gateway registration",
        )
        return flight

    async def _register(self) -> ch.RegistrationResult:
        self.registrations += 1
        # Embeddings models too: the gateway serves them on /v1/embeddings.
        return await ch.aregister_models(
            self._catalog, self._host, clock=self._clock, embeddings=True
        )

    def _registered(
        self,
        flight: Flight[ch.LoginIdentity, Snapshot],
        result: ch.RegistrationResult | BaseException,
        *,
        background: bool,
    ) -> Snapshot | BaseException:
        """What the registration ``flight`` gives its waiters: the new routes, the routes
        in hand (a background one failed) or the failure."""
        self._flights.retire(flight)
        identity = flight.key
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                return result  # cancelled (the gateway is closing): so are its waiters
            now = self._clock.monotonic()
            kept = self._snapshot
            if background and kept is not None and kept.identity == identity:
                # The routes in hand keep serving; no request is told of this failure.
                self._flights.remember(
                    identity, result, until=now, retry_at=now + RETRY_AFTER_FAILURE
                )
                return kept
            self._flights.remember(identity, result, until=now + FAILURE_MEMORY)
            return result
        self._flights.forget()
        by_name: dict[str, ch.ModelRoute] = {}
        for route in result.routes:
            by_name[route.model_id] = route
            by_name[route.route_id] = route
        lists = {api: api.model_list(result.routes) for api in LISTED}
        names = NameTable(result.routes, self._names)
        for line in names.missing_targets():
            # Once per registration: the alias answers 404 naming both until the model
            # comes back or the gateway is started without it.
            _log.warning("%s (requests for it get 404)", line)
        snapshot = Snapshot(
            identity=identity,
            by_name=by_name,
            lists=lists,
            due=self._clock.monotonic() + REREGISTER_AFTER,
            names=names,
        )
        if self._host.availability() == identity:
            self._snapshot = snapshot
        self.registered.set()
        return snapshot

    async def aclose(self) -> None:
        flight = self._flights.flying()
        task = None if flight is None else flight.task
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
