"""The application's model catalog: atomic, copy-on-write, every route with an owner."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from .._errors import RouteCollisionError
from ._specs import ModelRoute

__all__ = ["Catalog"]


class Catalog:
    """Routes by id, changed only all-or-nothing.

    Every change builds a new dict under a lock and publishes it with one reference
    assignment, so :meth:`routes` is O(1) and a concurrent reader sees the old set or the
    new one, never a mix. Each route has an owner (``None`` for routes added by hand); an
    id held by one owner is a collision for every other.
    """

    __slots__ = ("_lock", "_owners", "_snapshot")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot: Mapping[str, ModelRoute] = MappingProxyType({})
        self._owners: dict[str, str | None] = {}

    def routes(self) -> Mapping[str, ModelRoute]:
        """An immutable snapshot mapping route id -> route."""
        return self._snapshot

    def get(self, route_id: str) -> ModelRoute | None:
        return self._snapshot.get(route_id)

    def owner_of(self, route_id: str) -> str | None:
        """The owner key a route was added under (``None``: by hand, or absent)."""
        return self._owners.get(route_id)

    def owned_by(self, owner: str | None) -> tuple[str, ...]:
        owners = self._owners
        return tuple(rid for rid in self._snapshot if owners.get(rid) == owner)

    def __len__(self) -> int:
        return len(self._snapshot)

    def __contains__(self, route_id: object) -> bool:
        return route_id in self._snapshot

    def __repr__(self) -> str:
        return f"Catalog({len(self._snapshot)} routes)"

    @staticmethod
    def _as_dict(routes: Iterable[ModelRoute]) -> dict[str, ModelRoute]:
        fresh: dict[str, ModelRoute] = {}
        for route in routes:
            if not isinstance(route, ModelRoute):
                raise TypeError("a catalog holds ModelRoute objects")
            if route.route_id in fresh:
                raise RouteCollisionError(f"route {route.route_id!r} appears twice in one change")
            fresh[route.route_id] = route
        return fresh

    def _commit(self, routes: dict[str, ModelRoute], owners: dict[str, str | None]) -> None:
        # Owners first: a reader that sees the new snapshot must find its owners.
        self._owners = owners
        self._snapshot = MappingProxyType(routes)

    def add_routes(self, routes: Iterable[ModelRoute], *, owner: str | None = None) -> None:
        """Add routes; any id already present (under any owner) raises and adds nothing."""
        fresh = self._as_dict(routes)
        with self._lock:
            current = self._snapshot
            taken = [rid for rid in fresh if rid in current]
            if taken:
                raise RouteCollisionError(
                    f"route {taken[0]!r} is already in the catalog "
                    f"(owner {self._owners.get(taken[0])!r}); nothing was added"
                )
            merged = dict(current)
            merged.update(fresh)
            owners = dict(self._owners)
            owners.update(dict.fromkeys(fresh, owner))
            self._commit(merged, owners)

    def replace_provider(self, owner: str, routes: Iterable[ModelRoute]) -> None:
        """Swap every route of ``owner`` for ``routes`` in one step."""
        if not isinstance(owner, str) or not owner:
            raise ValueError("an owner key is a non-empty string")
        fresh = self._as_dict(routes)
        with self._lock:
            current, owners = self._snapshot, self._owners
            for rid in fresh:
                if rid in current and owners.get(rid) != owner:
                    raise RouteCollisionError(
                        f"route {rid!r} is already held by owner {owners.get(rid)!r}; "
                        "nothing was changed"
                    )
            merged = {rid: r for rid, r in current.items() if owners.get(rid) != owner}
            merged.update(fresh)
            new_owners = {rid: o for rid, o in owners.items() if o != owner}
            new_owners.update(dict.fromkeys(fresh, owner))
            self._commit(merged, new_owners)

    def remove_provider(self, owner: str) -> int:
        """Remove every route of ``owner``; returns how many were removed."""
        with self._lock:
            current, owners = self._snapshot, self._owners
            keep = {rid: r for rid, r in current.items() if owners.get(rid) != owner}
            removed = len(current) - len(keep)
            if removed:
                self._commit(keep, {rid: o for rid, o in owners.items() if o != owner})
            return removed
