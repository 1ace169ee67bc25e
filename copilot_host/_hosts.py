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
    from ._catalog._specs import Inventory, ModelSpec
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


# The names these fields had before 0.2.0, when ``expires_at`` (monotonic) sat beside the
# server's ``expires_at`` (epoch seconds) and was read as the same thing.
_RENAMED = {
    "received_at": "received_monotonic",
    "refresh_at": "refresh_monotonic",
    "expires_at": "expires_monotonic",
    "expires_at_wall": "expires_wall",
}


@dataclass(frozen=True, slots=True, init=False)
class CopilotSession:
    """A short-lived Copilot session, held in memory only.

    ``*_monotonic`` deadlines are on the monotonic clock, measured from receipt, so a local
    wall-clock jump (NTP, a person changing the time) cannot make a dead token look alive;
    ``expires_wall`` is the same expiry on the local wall clock, which keeps counting while
    a laptop is suspended (see :mod:`copilot_host._sessions._policy`) and is what a person is shown.
    """

    token: Secret = field(repr=False)
    identity: LoginIdentity
    endpoint: CopilotEndpoint
    received_monotonic: float
    refresh_monotonic: float
    expires_monotonic: float
    expires_wall: float
    sku: str | None = None

    def __init__(  # noqa: PLR0917 - the dataclass's own positional order, kept for callers
        self,
        token: Secret,
        identity: LoginIdentity,
        endpoint: CopilotEndpoint,
        received_monotonic: float | None = None,
        refresh_monotonic: float | None = None,
        expires_monotonic: float | None = None,
        expires_wall: float | None = None,
        sku: str | None = None,
        **renamed: float,
    ) -> None:
        given = {
            "received_monotonic": received_monotonic,
            "refresh_monotonic": refresh_monotonic,
            "expires_monotonic": expires_monotonic,
            "expires_wall": expires_wall,
        }
        for old, value in renamed.items():
            new = _RENAMED.get(old)
            if new is None:
                raise TypeError(f"CopilotSession() got an unexpected keyword argument {old!r}")
            given[new] = value
        if renamed:
            _deprecated(*renamed)
        missing = [name for name, given_value in given.items() if given_value is None]
        if missing:
            raise TypeError(f"CopilotSession() missing {', '.join(missing)}")
        fields: dict[str, object] = {"token": token, "identity": identity, "endpoint": endpoint}
        fields.update(given, sku=sku)
        for name, field_value in fields.items():
            object.__setattr__(self, name, field_value)

    @property
    def received_at(self) -> float:
        """Deprecated: ``received_monotonic``."""
        _deprecated("received_at")
        return self.received_monotonic

    @property
    def refresh_at(self) -> float:
        """Deprecated: ``refresh_monotonic``."""
        _deprecated("refresh_at")
        return self.refresh_monotonic

    @property
    def expires_at(self) -> float:
        """Deprecated: ``expires_monotonic`` (a monotonic time, not the server's epoch)."""
        _deprecated("expires_at")
        return self.expires_monotonic

    @property
    def expires_at_wall(self) -> float:
        """Deprecated: ``expires_wall``."""
        _deprecated("expires_at_wall")
        return self.expires_wall


def _deprecated(*olds: str) -> None:
    import warnings

    renames = ", ".join(f"{old} is now {_RENAMED[old]}" for old in olds)
    warnings.warn(
        f"CopilotSession: {renames} (deprecated in 0.2.0, removed in 0.3.0)",
        DeprecationWarning,
        stacklevel=3,
    )


class CopilotHost(Protocol):
    """A blocking host. ``provider_id`` is the catalog owner key and route-id prefix."""

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
