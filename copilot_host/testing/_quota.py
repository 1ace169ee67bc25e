"""The account's quota and rate-limit windows: what is used, the headers that report it on
model answers, and the refusals once it is spent."""

from __future__ import annotations

import dataclasses
import datetime
import urllib.parse

from ._answers import Answer, copilot_error, json_answer, refused
from ._state import EmulatorState

__all__ = ["Quota"]


class Quota:
    """What the account has used of its quota and of each rate-limit window
    (``state.part(Quota)``)."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state
        usage = state.scenario.usage
        # What the account has used of its quota, in the plan's unit.
        self._used = usage.quota_used
        # Rate-limit windows: percentage left, and when each resets (epoch seconds).
        windows = state.scenario.rate_windows
        self._window_left = {name: w.remaining for name, w in windows.items()}
        self._window_reset = {
            name: state.started + w.resets_in
            for name, w in windows.items()
            if w.resets_in is not None
        }

    @property
    def used(self) -> float:
        """What the account has used of its quota so far, in the plan's unit."""
        with self._state.lock:
            return self._used

    def reset(self) -> datetime.datetime:
        """Quotas reset at midnight UTC on the first day of the next month."""
        now = datetime.datetime.fromtimestamp(self._state.now(), datetime.UTC)
        year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        return datetime.datetime(year, month, 1, tzinfo=datetime.UTC)

    def left(self) -> tuple[float, float, float]:
        """(entitlement, remaining, percent remaining) of the scripted quota."""
        entitlement = self._state.scenario.usage.quota_entitlement
        with self._state.lock:
            remaining = entitlement - self._used
        percent = max(0.0, remaining / entitlement * 100) if entitlement else 0.0
        return entitlement, remaining, percent

    def exhausted(self) -> bool:
        _, remaining, _ = self.left()
        return remaining <= 0 and not self._state.scenario.usage.overage_permitted

    def headers(self) -> tuple[tuple[str, str], ...]:
        """What the service sends on inference answers: the account's quota snapshot and
        the usage rate-limit windows, each ``ent&ov&ovPerm&rem&rst`` URL-encoded."""
        scenario = self._state.scenario
        usage = scenario.usage
        entitlement, remaining, percent = self.left()
        reset = self.reset().strftime("%Y-%m-%dT%H:%M:%SZ")
        overage = max(0.0, -remaining)
        snapshot = urllib.parse.urlencode(
            {
                "ent": f"{entitlement:g}",
                "ov": f"{overage:.1f}",
                "ovPerm": "true" if usage.overage_permitted else "false",
                "rem": f"{percent:.1f}",
                "rst": reset,
            }
        )
        name = "chat" if usage.usage_plan == "free" else "premium_interactions"
        headers = [(f"x-quota-snapshot-{name}", snapshot)]
        with self._state.lock:
            left = dict(self._window_left)
        for window, spec in scenario.rate_windows.items():
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
            return self.reset()
        return datetime.datetime.fromtimestamp(at, datetime.UTC)

    def rate_limited(self) -> Answer | None:
        """429 when a scripted rate-limit window is spent (the weekly one first)."""
        with self._state.lock:
            left = dict(self._window_left)
        for window in ("weekly", "session"):
            if window not in left or left[window] > 0:
                continue
            wait = max(1, int(self._window_resets(window).timestamp() - self._state.now()))
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
                headers=(*answer.headers, ("Retry-After", str(wait)), *self.headers()),
            )
            return refused(f"{window}_window", f"{window} window spent", answer)
        return None

    def exceeded(self) -> Answer:
        """402 ``quota_exceeded``, with the quota headers."""
        return json_answer(
            402,
            {
                "error": {
                    "message": "You have exceeded your Copilot quota for this period.",
                    "code": "quota_exceeded",
                }
            },
            *self.headers(),
        )

    def charge(self, cost: float) -> None:
        """One model answer served: its cost (or one request) and each window's use."""
        scenario = self._state.scenario
        with self._state.lock:
            credits = scenario.usage.usage_plan in ("credits", "student")
            self._used += cost if credits else 1
            for window, spec in scenario.rate_windows.items():
                self._window_left[window] -= spec.per_request
