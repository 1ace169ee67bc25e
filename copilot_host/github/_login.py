"""The device-flow login as steps (sans-IO), written once for both hosts.

A login is a generator of steps: send a request (``Send``), wait (``Wait``), show the code
to the person (``Show``), check the store can keep the login (``Check``), keep it
(``Keep``). The blocking and asyncio hosts each drive it with their own I/O, the way
httpx drives an auth flow, so the protocol (RFC 8628 pacing, the entitlement check before
anything is stored, the order of the steps) exists in one place.

What the person authorizes is stored only in the ``Keep`` step, after GitHub granted a
Copilot session to the new token and named its account: an account without Copilot
access never leaves a credential behind.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from .._clock import Clock
from .._device import pace
from .._hosts import Authorized, CopilotDeviceLogin, LoginIdentity, Pending
from .._safety._secret import Secret
from ._device_code import build_device_code_request, parse_device_code
from ._exchange import build_exchange_request, parse_grant
from ._headers import EditorIdentity
from ._poll import Granted, build_poll_request, parse_poll
from ._user import build_user_request, parse_user
from ._wire import WireRequest, WireResponse

__all__ = ["Check", "Keep", "Send", "Show", "Step", "Wait", "begin", "login", "poll"]


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request``; the driver answers with its :class:`WireResponse`."""

    request: WireRequest


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait ``seconds`` before the next poll (the driver's sleep, cancellable)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Show:
    """Show the user code and page to the person."""

    login: CopilotDeviceLogin


@dataclass(frozen=True, slots=True)
class Check:
    """Make sure a login could be kept, before a code is shown (the store's preflight)."""


@dataclass(frozen=True, slots=True)
class Keep:
    """Keep the verified credential; the driver answers with the stored identity."""

    account: str
    token: Secret = field(repr=False)


Step = Send | Wait | Show | Check | Keep


def begin(client_id: str, editor: EditorIdentity) -> Generator[Step, Any, CopilotDeviceLogin]:
    """Check the login could be kept, then ask GitHub for a device code."""
    yield Check()
    response: WireResponse = yield Send(build_device_code_request(client_id, editor))
    return parse_device_code(response)


def poll(
    client_id: str, editor: EditorIdentity, login: CopilotDeviceLogin
) -> Generator[Step, Any, Pending | Authorized]:
    """One poll; when the person authorized: the entitlement check, the account's name,
    and only then the credential is kept."""
    response: WireResponse = yield Send(build_poll_request(client_id, login, editor))
    outcome = parse_poll(response, login)
    if not isinstance(outcome, Granted):
        return outcome
    token = outcome.token
    # A session grant proves the account may use Copilot; it is dropped, not used.
    parse_grant((yield Send(build_exchange_request(token, editor))))
    account = parse_user((yield Send(build_user_request(token, editor))))
    identity: LoginIdentity = yield Keep(account, token)
    return Authorized(identity)


def login(
    client_id: str, editor: EditorIdentity, clock: Clock
) -> Generator[Step, Any, LoginIdentity]:
    """The whole device flow: code, person, polls at the pace RFC 8628 sets, and the kept
    login. Ends at the code's deadline on the monotonic clock."""
    device = yield from begin(client_id, editor)
    yield Show(device)
    # The pacing is the core's one loop; each of its steps becomes a Wait or a poll here.
    steps = pace(device, clock)
    try:
        step = next(steps)
        while True:
            if isinstance(step, CopilotDeviceLogin):
                step = steps.send((yield from poll(client_id, editor, step)))
            else:
                step = steps.send((yield Wait(step)))
    except StopIteration as done:
        identity: LoginIdentity = done.value
        return identity
