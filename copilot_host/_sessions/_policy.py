"""Where the refresh is decided: pure functions of a session, its deadlines and the clocks.

Nothing here does I/O or reads a clock; callers pass the time in. Two clocks matter:

* the **monotonic** clock orders deadlines: a wall-clock step (NTP, a person changing the
  time) cannot make a dead token look alive;
* but on Linux the monotonic clock stops while a laptop is suspended, so after a long
  suspend it would call a long-dead token fresh. The **wall** clock keeps counting through
  a suspend. :meth:`RefreshPolicy.state` therefore takes the *earlier* of the two views of
  the remaining lifetime: a wall jump forward costs at most one early refresh, a wall jump
  backward is ignored because the monotonic view is then the earlier one.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._hosts import CopilotSession

__all__ = [
    "ADVISORY_LEAD",
    "ADVISORY_MAX_FRACTION",
    "ADVISORY_RETRY_DELAY",
    "MANDATORY_LEAD",
    "MANDATORY_MAX_FRACTION",
    "MAX_LIFETIME",
    "MAX_WAIT",
    "MIN_REFRESH_INTERVAL",
    "RefreshPolicy",
    "SessionState",
    "deadlines_from_exchange",
]

# Start refreshing five minutes before expiry: long enough to ride out a slow or failing
# exchange (several 30 s retries) while the current token still works.
ADVISORY_LEAD = 300.0
# ...but never spend more than half of a short token's life in the advisory window, or a
# 10-second token would be "due" from the moment it arrives and every call would refresh.
ADVISORY_MAX_FRACTION = 0.5
# The last minute before expiry is mandatory: a request that starts now could outlive the
# token, so callers wait for the new one instead of racing the deadline.
MANDATORY_LEAD = 60.0
# Short tokens get a proportionally short mandatory window (a tenth of their life).
MANDATORY_MAX_FRACTION = 0.1
# After a failed advisory refresh the old token stays in use; do not hammer a struggling
# server: the next attempt comes no sooner than this.
ADVISORY_RETRY_DELAY = 30.0
# A session received this recently is served as it is, whatever its deadlines say: the
# server has just issued it, and asking again at once would only start a refresh storm
# (a host handing out already-expired or one-second tokens). Bounds automatic exchanges to
# one per this many seconds.
MIN_REFRESH_INTERVAL = 1.0
# Server answers are clamped to at most this lifetime; a token claiming to live for days is
# a clock or parsing problem, and an early refresh is cheap.
MAX_LIFETIME = 12 * 3600.0
# How long a caller waits for an exchange another caller started before it gives up with a
# typed, retryable error. The GitHub adapter ends its own steps sooner (three read timeouts,
# 90 s by default); this bounds the wait whatever host is behind the resolver.
MAX_WAIT = 120.0


class SessionState(enum.Enum):
    """Where a session stands relative to its deadlines."""

    FRESH = "fresh"
    """Use it; nothing to do."""
    ADVISORY = "advisory"
    """Still valid; one caller should refresh, the others keep using it."""
    MANDATORY = "mandatory"
    """Too close to expiry to start a request with; everyone waits for the refresh."""
    EXPIRED = "expired"
    """Dead: never serve it."""


def _finite(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number")
    return value


@dataclass(frozen=True, slots=True)
class RefreshPolicy:
    """The refresh windows and back-off delays; every default is a named module constant."""

    advisory_lead: float = ADVISORY_LEAD
    advisory_max_fraction: float = ADVISORY_MAX_FRACTION
    mandatory_lead: float = MANDATORY_LEAD
    mandatory_max_fraction: float = MANDATORY_MAX_FRACTION
    advisory_retry_delay: float = ADVISORY_RETRY_DELAY
    min_refresh_interval: float = MIN_REFRESH_INTERVAL
    max_lifetime: float = MAX_LIFETIME
    max_wait: float = MAX_WAIT

    def __post_init__(self) -> None:
        for name in (
            "advisory_lead",
            "mandatory_lead",
            "advisory_retry_delay",
            "min_refresh_interval",
            "max_lifetime",
            "max_wait",
        ):
            if _finite(getattr(self, name), name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("advisory_max_fraction", "mandatory_max_fraction"):
            if not 0.0 <= _finite(getattr(self, name), name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.mandatory_lead > self.advisory_lead:
            raise ValueError("the mandatory window must not be longer than the advisory one")

    # -- windows --------------------------------------------------------------------------

    def advisory_window(self, lifetime: float) -> float:
        """Seconds before expiry at which the advisory window opens at the latest."""
        return min(self.advisory_lead, max(lifetime, 0.0) * self.advisory_max_fraction)

    def mandatory_window(self, lifetime: float) -> float:
        """Seconds before expiry at which everyone must wait for a new session."""
        return min(self.mandatory_lead, max(lifetime, 0.0) * self.mandatory_max_fraction)

    # -- from an exchange answer ----------------------------------------------------------

    def deadlines(
        self,
        *,
        received_monotonic: float,
        received_wall: float,
        expires_at: float,
        refresh_in: float | None,
        server_date: float | None,
    ) -> tuple[float, float, float]:
        """``(refresh_at_monotonic, expires_at_monotonic, expires_at_wall)`` for a new token.

        ``expires_at`` is the server's epoch expiry. The lifetime is measured against the
        server's own ``Date`` when given (so a local clock that is off by hours does not
        matter), else against the local wall clock at receipt; it is clamped to
        ``[0, max_lifetime]``. The advisory refresh comes at ``refresh_in`` (when the server
        sends it) or at the start of the advisory window, whichever is earlier.
        ``expires_at_wall`` is in *local* wall time (receipt + lifetime): it is what the
        wall-clock half of :meth:`state` compares with, and what a person should be shown.
        """
        received_monotonic = _finite(received_monotonic, "received_monotonic")
        received_wall = _finite(received_wall, "received_wall")
        reference = received_wall if server_date is None else _finite(server_date, "server_date")
        lifetime = min(max(_finite(expires_at, "expires_at") - reference, 0.0), self.max_lifetime)
        refresh_after = lifetime - self.advisory_window(lifetime)
        if refresh_in is not None:
            refresh_after = min(refresh_after, max(_finite(refresh_in, "refresh_in"), 0.0))
        return (
            received_monotonic + refresh_after,
            received_monotonic + lifetime,
            received_wall + lifetime,
        )

    # -- for a session in use -------------------------------------------------------------

    def expiry(self, session: CopilotSession) -> tuple[float, float]:
        """``(monotonic, wall)`` expiry of ``session`` under this policy: the host's, capped
        at ``max_lifetime`` after receipt."""
        lifetime = session.expires_monotonic - session.received_monotonic
        cut = max(lifetime - self.max_lifetime, 0.0)
        return session.expires_monotonic - cut, session.expires_wall - cut

    def _leads(self, session: CopilotSession, expires: float) -> tuple[float, float]:
        """Seconds before expiry at which the (advisory, mandatory) windows open."""
        lifetime = expires - session.received_monotonic
        mandatory = self.mandatory_window(lifetime)
        # The host's own refresh_at (the server's refresh_in) counts, but so does our
        # window: a host that sets refresh_at at the very expiry still gets refreshed in
        # time. The windows are this policy's, decided here and nowhere else.
        advisory = max(
            expires - session.refresh_monotonic,
            self.advisory_window(lifetime),
            mandatory,
        )
        return advisory, mandatory

    def state(
        self, session: CopilotSession, now_monotonic: float, now_wall: float | None = None
    ) -> SessionState:
        """Classify ``session`` at ``now_monotonic`` (and ``now_wall`` when given).

        Each window opens when *either* clock reaches it (see the module docstring).
        """
        expires, expires_wall = self.expiry(session)
        wall = float("-inf") if now_wall is None else now_wall
        if now_monotonic >= expires or wall >= expires_wall:
            return SessionState.EXPIRED
        advisory, mandatory = self._leads(session, expires)
        if now_monotonic >= expires - mandatory or wall >= expires_wall - mandatory:
            return SessionState.MANDATORY
        if now_monotonic >= expires - advisory or wall >= expires_wall - advisory:
            return SessionState.ADVISORY
        return SessionState.FRESH

    def fresh_until(self, session: CopilotSession) -> tuple[float, float]:
        """``(monotonic, wall)`` instants before which :meth:`state` says FRESH.

        Lets a resolver's hot path compare two floats instead of classifying each call;
        computed exactly as :meth:`state` computes it, so the two never disagree.
        """
        expires, expires_wall = self.expiry(session)
        advisory, _ = self._leads(session, expires)
        return expires - advisory, expires_wall - advisory


DEFAULT_POLICY = RefreshPolicy()


def deadlines_from_exchange(
    *,
    received_monotonic: float,
    received_wall: float,
    expires_at: float,
    refresh_in: float | None,
    server_date: float | None,
) -> tuple[float, float, float]:
    """What an exchange answer says, as a session's times, for host adapters: no refresh
    policy is applied here (the resolver's policy in force decides the windows when the
    session is used, :meth:`RefreshPolicy.state`).

    Returns ``(refresh_at_monotonic, expires_at_monotonic, expires_at_wall)``: the lifetime
    measured as :meth:`RefreshPolicy.deadlines` measures it (against the server's ``Date``
    when given, never negative; the policy in force caps it at its ``max_lifetime``), and
    the refresh the server asked for (``refresh_in``, never after the expiry; the expiry
    itself when it asked for none).
    """
    received_monotonic = _finite(received_monotonic, "received_monotonic")
    received_wall = _finite(received_wall, "received_wall")
    reference = received_wall if server_date is None else _finite(server_date, "server_date")
    lifetime = max(_finite(expires_at, "expires_at") - reference, 0.0)
    expires_monotonic = received_monotonic + lifetime
    expires_wall = received_wall + lifetime
    refresh_at = expires_monotonic
    if refresh_in is not None:
        refresh_at = min(
            received_monotonic + max(_finite(refresh_in, "refresh_in"), 0.0), refresh_at
        )
    return refresh_at, expires_monotonic, expires_wall
