"""What every handler receives: the emulator's record, its clock and its one lock, the
scenario it runs, and each concern's memory (made by that concern's module on first use).

Each rule models what the real service was seen to do; docs/EMULATOR.md lists the facts and
where they were observed.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from ._answers import Answer
from ._groups import (
    Auto,
    DeviceFlow,
    Faults,
    Inventory,
    RateWindow,
    Replies,
    Session,
    Sockets,
    Usage,
)
from ._record import RecordedRequest

__all__ = ["EmulatorState", "Handler", "Script", "editor_version"]

_NUMBERS = re.compile(r"\d+(?:\.\d+)*")
_Part = TypeVar("_Part")


def editor_version(text: str) -> tuple[int, ...]:
    """The numeric version in an ``Editor-Version`` (``vscode/1.104.1`` -> (1, 104, 1));
    a value without one counts as the oldest."""
    match = _NUMBERS.search(text.rpartition("/")[2])
    return tuple(int(part) for part in match.group().split(".")) if match else (0,)


class Script(Protocol):
    """What the handlers read of a ``Scenario``: its groups, the plan's derived facts and
    its checks. (``Scenario`` checks its endpoint names against the routing table, which
    names the handlers: they see it through this, so no module imports its own importer.)"""

    @property
    def login(self) -> DeviceFlow: ...
    @property
    def session(self) -> Session: ...
    @property
    def inventory(self) -> Inventory: ...
    @property
    def replies(self) -> Replies: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def faults(self) -> Faults: ...
    @property
    def auto(self) -> Auto: ...
    @property
    def sockets(self) -> Sockets: ...
    @property
    def auto_only_plan(self) -> bool: ...
    @property
    def session_sku(self) -> str: ...
    @property
    def rate_windows(self) -> Mapping[str, RateWindow]: ...
    def strict(self, check: str) -> bool: ...


class EmulatorState:
    """What the emulated GitHub saw, the clock it answers by, and the memory of each
    concern (:meth:`part`), behind one lock."""

    def __init__(self, scenario: Script) -> None:
        self.scenario = scenario
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.refused: list[str] = []
        self._generation = 0
        self._parts: dict[object, object] = {}
        self._making = threading.Lock()
        # When the emulator started, by its (possibly skewed) clock: windows reset from here.
        self.started = self.now()

    def now(self) -> float:
        return time.time() + self.scenario.session.clock_skew

    def part(self, make: Callable[[EmulatorState], _Part]) -> _Part:
        """The memory ``make`` (a concern's class, built from this state) keeps for this
        emulator: made on first use, the same object from then on."""
        found = self._parts.get(make)
        if found is None:
            with self._making:
                found = self._parts.get(make)
                if found is None:
                    found = self._parts[make] = make(self)
        return cast(_Part, found)

    def remember(self, record: RecordedRequest) -> tuple[int, int]:
        with self.lock:
            self.requests.append(record)
            return self._generation, len(self.requests) - 1

    def update(self, where: tuple[int, int], **changes: Any) -> None:
        with self.changed:
            generation, index = where
            if generation != self._generation:
                return  # the test cleared the record meanwhile
            self.requests[index] = dataclasses.replace(self.requests[index], **changes)
            self.changed.notify_all()

    def clear(self) -> None:
        with self.lock:
            self._generation += 1
            self.requests.clear()
            self.refused.clear()


# An endpoint's answer to one request: what each row of the routing table names.
Handler = Callable[[EmulatorState, RecordedRequest], Answer]
