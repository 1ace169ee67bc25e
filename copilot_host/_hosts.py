"""The host protocols: what an embedding application implements, or takes ready-made.

``CopilotHost`` (threads) and ``AsyncCopilotHost`` (asyncio) are structural protocols: any
identity provider, or a test double, that offers these methods gets the resolver, the
catalog and registration from the core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ._safety._secret import Secret

if TYPE_CHECKING:
    # Annotations only: the store's header (and so `copilot-host status`) imports this
    # module, and origins and models are a measurable share of that start-up.
    from ._models import Inventory, ModelSpec
    from ._origin import CopilotEndpoint

__all__ = [
    "AsyncCopilotHost",
    "Authorized",
    "CopilotDeviceLogin",
    "CopilotHost",
    "CopilotSession",
    "LoginIdentity",
    "Pending",
]


@dataclass(frozen=True, slots=True)
class LoginIdentity:
    """Who is logged in: a random per-login id and a label for people (the GitHub login)."""

    login_id: str
    account: str


@dataclass(frozen=True, slots=True)
class CopilotDeviceLogin:
    """A device-flow login in progress.

    Only ``user_code`` and ``verification_uri`` are for display. ``device_code`` lets its
    holder collect the credential, so it is a :class:`Secret`. ``deadline`` is on the
    host's monotonic clock; ``interval`` is the slowest the server asked for so far.
    """

    user_code: str
    verification_uri: str
    expires_in: float
    interval: float
    deadline: float
    device_code: Secret = field(repr=False)


@dataclass(frozen=True, slots=True)
class Pending:
    """Not authorized yet; poll again after ``interval`` seconds (at least)."""

    interval: float


@dataclass(frozen=True, slots=True)
class Authorized:
    """The person authorized, entitlement was verified and the credential persisted."""

    identity: LoginIdentity


@dataclass(frozen=True, slots=True)
class CopilotSession:
    """A short-lived Copilot session, held in memory only.

    ``*_monotonic`` deadlines are on the monotonic clock, measured from receipt, so a local
    wall-clock jump (NTP, a person changing the time) cannot make a dead token look alive;
    ``expires_wall`` is the same expiry on the local wall clock, which keeps counting while
    a laptop is suspended (see :mod:`copilot_host._sessions._policy`) and is what a person is shown.
    ``refresh_monotonic`` is when the host was asked to refresh (the expiry when it was
    not); the refresh policy in force decides the windows around it.
    """

    token: Secret = field(repr=False)
    identity: LoginIdentity
    endpoint: CopilotEndpoint
    received_monotonic: float
    refresh_monotonic: float
    expires_monotonic: float
    expires_wall: float
    sku: str | None = None


class CopilotHost(Protocol):
    """A blocking host. ``provider_id`` is the catalog owner key and route-id prefix.

    Optional: a ``login_hint`` string attribute (how a person logs in) that the core's
    "not logged in" messages add after the host's class name; and ``switch_identity``
    (see :class:`copilot_host.SwitchesIdentity`)."""

    @property
    def provider_id(self) -> str: ...

    def availability(self) -> LoginIdentity | None:
        """The login currently stored (``None``: logged out), answered without network or
        keyring: it runs before every request, and a change (logout, another login)
        drops the session minted for the old one. Keep it to about one ``stat()``."""
        ...

    def begin_device_login(self) -> CopilotDeviceLogin: ...

    def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized: ...

    def exchange(self, identity: LoginIdentity) -> CopilotSession: ...

    def inventory(self, session: CopilotSession) -> Inventory | Sequence[ModelSpec]:
        """The account's models; entries that are not usable go in ``Inventory.skipped``."""
        ...

    def request_headers(self) -> Mapping[str, str]:
        """Headers every inference request carries besides the bearer (editor identity)."""
        ...


class AsyncCopilotHost(Protocol):
    """The asyncio twin of :class:`CopilotHost`; ``availability`` stays synchronous and cheap."""

    @property
    def provider_id(self) -> str: ...

    def availability(self) -> LoginIdentity | None: ...

    async def begin_device_login(self) -> CopilotDeviceLogin: ...

    async def poll_device_login(self, login: CopilotDeviceLogin) -> Pending | Authorized: ...

    async def exchange(self, identity: LoginIdentity) -> CopilotSession: ...

    async def inventory(self, session: CopilotSession) -> Inventory | Sequence[ModelSpec]: ...

    def request_headers(self) -> Mapping[str, str]: ...
