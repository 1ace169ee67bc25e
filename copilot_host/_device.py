"""Waiting for a person to approve a device login, for any :class:`CopilotHost`.

The host answers one poll at a time; this loop owns the pacing (RFC 8628 section 3.5):
the first poll comes a little after the interval, the slowest interval the host has asked
for is kept for every later poll, and the login ends at its deadline on the monotonic
clock. The application owns cancellation: a ``threading.Event`` in the blocking loop,
ordinary task cancellation in the asyncio one. A cancelled wait stores nothing, because
the host persists only inside the poll that returns ``Authorized``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Protocol, cast

from ._clock import SYSTEM_CLOCK, Clock
from ._errors import DeviceCodeExpiredError, LoginCancelledError
from ._hosts import Authorized, CopilotDeviceLogin, LoginIdentity, Pending

__all__ = [
    "DRIFT_FACTOR",
    "MIN_INTERVAL",
    "await_device_login",
    "cancelled",
    "check_deadline",
    "first_interval",
    "next_pause",
    "pace",
    "pause",
    "wait_for_device_login",
]

# Virtual machines' clocks drift; polling at exactly the interval risks a slow_down.
DRIFT_FACTOR = 1.2
MIN_INTERVAL = 1.0


class _Polls(Protocol):
    """The one method of :class:`CopilotHost` this loop needs."""

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized: ...


class _AsyncPolls(Protocol):
    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized: ...


# -- the pacing, pure: every login loop (the generic ones below, and a host's own steps) --


def _expired() -> DeviceCodeExpiredError:
    return DeviceCodeExpiredError(
        "the device code expired before the login was approved; run the login again"
    )


def cancelled() -> LoginCancelledError:
    return LoginCancelledError("the login was cancelled; nothing was stored")


def first_interval(login: CopilotDeviceLogin) -> float:
    """The interval to start with: the server's, and never under a second."""
    return max(login.interval, MIN_INTERVAL)


def next_pause(interval: float, login: CopilotDeviceLogin, now: float) -> float:
    """Seconds to wait before the next poll; raises when the deadline has come."""
    remaining = login.deadline - now
    if remaining <= 0:
        raise _expired()
    return min(interval * DRIFT_FACTOR, remaining)


def check_deadline(login: CopilotDeviceLogin, now: float) -> None:
    """After a wait: a deadline passed while waiting ends the login."""
    if now >= login.deadline:
        raise _expired()


def pace(
    login: CopilotDeviceLogin, clock: Clock
) -> Generator[float | CopilotDeviceLogin, object, LoginIdentity]:
    """The one device-login loop, sans-IO: yields a pause (seconds to wait, then send
    None) or the login to poll now (then send the poll's result); returns who logged in.

    Every driver (the two below, and a host's own login steps) only waits and polls.
    """
    interval = first_interval(login)
    while True:
        yield next_pause(interval, login, clock.monotonic())
        check_deadline(login, clock.monotonic())
        result = yield dataclasses.replace(login, interval=interval)
        if isinstance(result, Authorized):
            return result.identity
        if not isinstance(result, Pending):
            raise TypeError("a device-login poll answers Pending or Authorized")
        interval = max(interval, result.interval)


def pause(
    seconds: float, cancel: threading.Event | None, sleep: Callable[[float], None] | None
) -> None:
    """One blocking wait between polls. Without an injected ``sleep`` a set ``cancel``
    wakes it at once; an injected one is called as is, ``cancel`` checked around it."""
    if cancel is not None and cancel.is_set():
        raise cancelled()
    if sleep is None and cancel is not None:
        if cancel.wait(seconds):
            raise cancelled()
    else:
        (sleep or time.sleep)(seconds)
    if cancel is not None and cancel.is_set():
        raise cancelled()


def wait_for_device_login(
    host: _Polls,
    login: CopilotDeviceLogin,
    *,
    cancel: threading.Event | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> LoginIdentity:
    """Poll ``host`` until the person approves, denies, the code expires or ``cancel`` is set.

    With the default ``sleep``, a set ``cancel`` wakes the wait at once; an injected
    ``sleep`` (tests, custom schedulers) is called as is and ``cancel`` checked around it.
    """
    steps = pace(login, clock)
    wait = None if sleep is time.sleep else sleep
    try:
        step = next(steps)
        while True:
            if isinstance(step, CopilotDeviceLogin):
                step = steps.send(host.poll_device_login(step))
            else:
                pause(step, cancel, wait)
                step = steps.send(None)
    except StopIteration as done:
        return cast(LoginIdentity, done.value)


async def await_device_login(
    host: _AsyncPolls,
    login: CopilotDeviceLogin,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Clock = SYSTEM_CLOCK,
) -> LoginIdentity:
    """The asyncio twin of :func:`wait_for_device_login`; cancel the task to stop it."""
    steps = pace(login, clock)
    try:
        step = next(steps)
        while True:
            if isinstance(step, CopilotDeviceLogin):
                step = steps.send(await host.poll_device_login(step))
            else:
                await sleep(step)
                step = steps.send(None)
    except StopIteration as done:
        return cast(LoginIdentity, done.value)
