"""The emulator's state, one concern per class, each building on the one before:
recording (what happened), usage (quota, windows), accounts and tokens, the inventory,
inference. ``EmulatorState`` in ``_server`` is the last of them.

Each rule models what the real service was seen to do; docs/EMULATOR.md lists the facts and
where they were observed.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import threading
import time
import urllib.parse
from typing import Any

from ._answers import (
    Answer,
    copilot_error,
    json_answer,
    refused,
)
from ._record import RecordedRequest
from ._scenario import Scenario

__all__ = ["Recording", "UsageState", "editor_version"]

_NUMBERS = re.compile(r"\d+(?:\.\d+)*")


def editor_version(text: str) -> tuple[int, ...]:
    """The numeric version in an ``Editor-Version`` (``vscode/1.104.1`` -> (1, 104, 1));
    a value without one counts as the oldest."""
    match = _NUMBERS.search(text.rpartition("/")[2])
    return tuple(int(part) for part in match.group().split(".")) if match else (0,)


class Recording:
    """What the emulator saw and the clock it answers by, behind the state's one lock."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.refused: list[str] = []
        self._generation = 0

    def now(self) -> float:
        return time.time() + self.scenario.clock_skew

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


class UsageState(Recording):
    """The account's quota, its rate-limit windows, and the headers that report them."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        # What the account has used of its quota, in the plan's unit.
        self._quota_used = scenario.quota_used
        # Rate-limit windows: percentage left, and when each resets (epoch seconds).
        started = self.now()
        self._window_left = {name: w.remaining for name, w in scenario.rate_windows.items()}
        self._window_reset = {
            name: started + w.resets_in
            for name, w in scenario.rate_windows.items()
            if w.resets_in is not None
        }

    @property
    def quota_used(self) -> float:
        """What the account has used of its quota so far, in the plan's unit."""
        with self.lock:
            return self._quota_used

    def _reset(self) -> datetime.datetime:
        """Quotas reset at midnight UTC on the first day of the next month."""
        now = datetime.datetime.fromtimestamp(self.now(), datetime.UTC)
        year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        return datetime.datetime(year, month, 1, tzinfo=datetime.UTC)

    def _quota_state(self) -> tuple[float, float, float]:
        """(entitlement, remaining, percent remaining) of the scripted quota."""
        entitlement = self.scenario.quota_entitlement
        with self.lock:
            remaining = entitlement - self._quota_used
        percent = max(0.0, remaining / entitlement * 100) if entitlement else 0.0
        return entitlement, remaining, percent

    def _exhausted(self) -> bool:
        _, remaining, _ = self._quota_state()
        return remaining <= 0 and not self.scenario.overage_permitted

    def _quota_headers(self) -> tuple[tuple[str, str], ...]:
        """What the service sends on inference answers: the account's quota snapshot and
        the usage rate-limit windows, each ``ent&ov&ovPerm&rem&rst`` URL-encoded."""
        s = self.scenario
        entitlement, remaining, percent = self._quota_state()
        reset = self._reset().strftime("%Y-%m-%dT%H:%M:%SZ")
        overage = max(0.0, -remaining)
        snapshot = urllib.parse.urlencode(
            {
                "ent": f"{entitlement:g}",
                "ov": f"{overage:.1f}",
                "ovPerm": "true" if s.overage_permitted else "false",
                "rem": f"{percent:.1f}",
                "rst": reset,
            }
        )
        name = "chat" if s.usage_plan == "free" else "premium_interactions"
        headers = [(f"x-quota-snapshot-{name}", snapshot)]
        with self.lock:
            left = dict(self._window_left)
        for window, spec in s.rate_windows.items():
            value = urllib.parse.urlencode(
                {
                    "ent": f"{spec.entitlement:g}",
                    "rem": f"{max(0.0, left[window]):.1f}",
                    "rst": self._window_resets(window).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
            headers.append((f"x-usage-ratelimit-{window}", value))
        return tuple(headers)

    def _window_resets(self, window: str) -> datetime.datetime:
        at = self._window_reset.get(window)
        if at is None:
            return self._reset()
        return datetime.datetime.fromtimestamp(at, datetime.UTC)

    def _rate_limited(self) -> Answer | None:
        """429 when a scripted rate-limit window is spent (the weekly one first)."""
        with self.lock:
            left = dict(self._window_left)
        for window in ("weekly", "session"):
            if window not in left or left[window] > 0:
                continue
            wait = max(1, int(self._window_resets(window).timestamp() - self.now()))
            if window == "weekly":
                # github/copilot-cli #2769 and microsoft/vscode #311205 quote this answer.
                message = "Sorry, you've exceeded your weekly rate limit."
                code = "user_weekly_rate_limited"
            else:
                message = (
                    "Sorry, you've hit a rate limit that restricts the number of Copilot "
                    "model requests you can make within a specific time period. Please try "
                    f"again in {max(1, round(wait / 3600))} hours."
                )
                code = "user_global_rate_limited"
            answer = copilot_error(429, message, code)
            answer = dataclasses.replace(
                answer,
                headers=(*answer.headers, ("Retry-After", str(wait)), *self._quota_headers()),
            )
            return refused(f"{window}_window", f"{window} window spent", answer)
        return None

    def _quota_exceeded(self) -> Answer:
        return json_answer(
            402,
            {
                "error": {
                    "message": "You have exceeded your Copilot quota for this period.",
                    "code": "quota_exceeded",
                }
            },
            *self._quota_headers(),
        )

    def _charge(self, cost: float) -> None:
        """One model answer served: its cost (or one request) and each window's use."""
        s = self.scenario
        with self.lock:
            credits = s.usage_plan in ("credits", "student")
            self._quota_used += cost if credits else 1
            for window, spec in s.rate_windows.items():
                self._window_left[window] -= spec.per_request
