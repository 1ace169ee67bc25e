"""``Scenario``'s groups: what a test scripts, one concern per group.

``Scenario(login=DeviceFlow(...), usage=Usage(...), ...)`` reads as what it scripts (the
flat keywords of 0.3.0, deprecated in 0.4.0, went in 0.5.0). Each group checks its values
when made and keeps frozen copies of what it was given (a running emulator never sees a
caller's dict or set change); ``Scenario`` checks the endpoint names against the routing
table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ._costs import COST_MODELS
from ._inventory import realistic_models
from ._protocols import ToolCall

__all__ = [
    "AUTO_CALLS",
    "AUTO_ONLY_PLANS",
    "COPILOT_CLI_CLIENT_ID",
    "GROUPS",
    "USAGE_PLANS",
    "VSCODE_CLIENT_ID",
    "DeviceFlow",
    "Faults",
    "Inventory",
    "RateWindow",
    "Auto",
    "RawAnswer",
    "Replies",
    "Session",
    "Sockets",
    "Usage",
]

# The OAuth app GitHub's own Copilot editors (VS Code) log in with: the exchange accepts its
# tokens. Tokens of other OAuth apps (gh's, an application's own) get 404.
VSCODE_CLIENT_ID = "Iv1.b507a08c87ecfe98"
# The OAuth app GitHub's own Copilot CLI (npm ``@github/copilot`` 1.0.102) logs in with; it
# sends that app's GitHub token to the Copilot API itself (issue 27, from the package).
COPILOT_CLI_CLIENT_ID = "Ov23ctDVkRmgkPke0Mmm"

# The shapes of ``/copilot_internal/user``: a credit-billed plan (usage-based billing since
# 2026-06-01), a plan still billed by premium request, Copilot Free, and Copilot Student.
USAGE_PLANS = frozenset({"credits", "requests", "free", "student"})
# The plans GitHub limited to Auto model selection on 2026-06-24.
AUTO_ONLY_PLANS = frozenset({"free", "student"})

# Copilot Auto's two session calls, by the names ``Auto(gated=...)`` takes: the pool call
# (``POST /models/session``) and the routing call (``POST /auto``).
AUTO_CALLS = frozenset({"pool", "route"})

_VERSION = re.compile(r"\d+(?:\.\d+)*")
_API_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """An exact answer to serve instead of the emulated one (hostile-response tests).

    The emulator still adds its ``x-github-request-id`` (and ``x-request-id`` on a Copilot
    host) unless ``headers`` names them.
    """

    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)


@dataclass(frozen=True, slots=True)
class RateWindow:
    """A usage rate-limit window (the session or the weekly one) as the service reports it
    in ``x-usage-ratelimit-<window>``: ``entitlement``, the percentage ``remaining``, and
    when it resets (``resets_in`` seconds after the emulator starts; ``None``: with the
    monthly quota). Each model request served uses ``per_request`` percentage points; at 0
    left, model requests are refused with 429 until the emulator is made again."""

    entitlement: float = 50
    remaining: float = 100.0
    per_request: float = 0.0
    resets_in: float | None = None

    def __post_init__(self) -> None:
        if self.entitlement < 0 or not 0 <= self.remaining <= 100 or self.per_request < 0:
            raise ValueError("a window has an entitlement, 0-100 % remaining, a use of 0 or more")
        if self.resets_in is not None and self.resets_in <= 0:
            raise ValueError("a window resets a positive number of seconds from now")


def _empty() -> Mapping[str, object]:
    return MappingProxyType({})


def _keep(group: object, **values: object) -> None:
    """Set a frozen group's fields to the checked, frozen ``values``."""
    for name, value in values.items():
        object.__setattr__(group, name, value)


def _version_floor(floor: str | None) -> None:
    if floor is not None and not _VERSION.fullmatch(floor):
        raise ValueError(f"an editor version floor is dotted numbers, not {floor!r}")


@dataclass(frozen=True)
class DeviceFlow:
    """github.com's device flow (``Scenario(login=...)``): the codes it hands out, the
    polls before the answer, and the account that logs in."""

    user_code: str = "WDJB-MJHT"
    verification_uri: str = "https://github.com/login/device"
    interval: int | None = 5
    expires_in: int = 900
    slow_down_polls: int = 0
    pending_polls: int = 0
    auto_approve: bool = True
    login_result: str = "approved"
    account: str = "octocat"


@dataclass(frozen=True)
class Session:
    """The token exchange and the Copilot session it issues (``Scenario(session=...)``)."""

    entitlement: str | None = None
    revoked: bool = False
    api_endpoint: str = "https://api.individual.githubcopilot.com"
    session_lifetime: int = 1800
    refresh_in: int | None = 1500
    sku: str | None = None
    clock_skew: float = 0.0
    copilot_client_ids: frozenset[str] = frozenset({VSCODE_CLIENT_ID, COPILOT_CLI_CLIENT_ID})
    chat_enabled: bool = True
    organization_list: tuple[str, ...] = ()
    enterprise_list: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _keep(
            self,
            copilot_client_ids=frozenset(self.copilot_client_ids),
            organization_list=tuple(self.organization_list),
            enterprise_list=tuple(self.enterprise_list),
        )


@dataclass(frozen=True)
class Inventory:
    """What ``/models`` lists and which clients the service serves it to
    (``Scenario(inventory=...)``)."""

    models: tuple[Mapping[str, object], ...] = field(default_factory=realistic_models)
    min_editor_version: Mapping[str, str] = field(default_factory=_empty)  # type: ignore[arg-type]
    min_api_version: str | None = None
    min_client_version: str | None = None
    deprecated_below: str | None = None
    refused_integration_ids: frozenset[str] = frozenset()
    unserved_models: Mapping[str, frozenset[str]] = field(default_factory=_empty)  # type: ignore[arg-type]
    min_cli_version: str | None = None
    integrator_models: frozenset[str] | None = None

    def __post_init__(self) -> None:
        for floor in (
            *self.min_editor_version.values(),
            self.min_client_version,
            self.min_cli_version,
            self.deprecated_below,
        ):
            _version_floor(floor)
        if self.min_api_version is not None and not _API_VERSION.fullmatch(self.min_api_version):
            raise ValueError("min_api_version is a date like 2025-05-01")
        unserved: dict[str, frozenset[str]] = {}
        given: Iterable[tuple[object, object]] = self.unserved_models.items()
        for integration, models in given:
            # A bare string would become a set of its letters and refuse nothing real.
            if (
                not isinstance(integration, str)
                or not integration
                or not isinstance(models, (set, frozenset, tuple, list))
                or not models
                or not all(isinstance(model, str) for model in models)
            ):
                raise ValueError(
                    "unserved_models maps an integration id to a set of model ids (or {'*'})"
                )
            unserved[integration] = frozenset(models)
        integrator: object = self.integrator_models
        if integrator is not None:
            # A bare string would become a set of its letters.
            if not isinstance(integrator, (set, frozenset, tuple, list)) or not all(
                isinstance(m, str) for m in integrator
            ):
                raise ValueError("integrator_models is a set of model ids")
            integrator = frozenset(integrator)
        _keep(
            self,
            models=tuple(self.models),
            integrator_models=integrator,
            min_editor_version=MappingProxyType(dict(self.min_editor_version)),
            refused_integration_ids=frozenset(self.refused_integration_ids),
            unserved_models=MappingProxyType(unserved),
        )


@dataclass(frozen=True)
class Replies:
    """How model answers are written (``Scenario(replies=...)``): stream pacing and cuts,
    and the tool calls the model makes."""

    stream_events: int = 4
    stream_pause: float = 0.0
    stream_cut: int | None = None
    tool_calls: bool = True
    tool_script: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        if self.stream_events < 1:
            raise ValueError("stream_events must be at least 1")
        if self.stream_cut is not None and self.stream_cut < 0:
            raise ValueError("stream_cut is a number of events, 0 or more")
        if self.stream_pause < 0:
            raise ValueError("pauses are positive seconds")
        script = tuple(self.tool_script)
        if not all(isinstance(call, ToolCall) for call in script):
            raise TypeError("tool_script is a sequence of ToolCall")
        _keep(self, tool_script=script)


@dataclass(frozen=True)
class Usage:
    """The plan, its quota and limits, and what answers cost (``Scenario(usage=...)``)."""

    usage_plan: str = "credits"
    quota_entitlement: float = 1500.0
    quota_used: float = 0.0
    overage_permitted: bool = True
    request_cost: float = 0.0425
    cost_model: str = "flat"
    quota_exceeded_on: frozenset[str] = frozenset()
    auto_only: bool | None = None
    session_window: RateWindow | None = field(default_factory=RateWindow)
    weekly_window: RateWindow | None = None

    def __post_init__(self) -> None:
        if self.usage_plan not in USAGE_PLANS:
            raise ValueError(f"usage_plan is one of {sorted(USAGE_PLANS)}")
        if self.cost_model not in COST_MODELS:
            raise ValueError(f"cost_model is one of {sorted(COST_MODELS)}")
        if self.quota_entitlement < 0 or self.request_cost < 0:
            raise ValueError("a quota and a cost are 0 or more")
        _keep(self, quota_exceeded_on=frozenset(self.quota_exceeded_on))


@dataclass(frozen=True)
class Faults:
    """Failures and hostile answers per endpoint name (``Scenario(faults=...)``)."""

    exchange_failures: tuple[int, ...] = ()
    models_failures: tuple[int, ...] = ()
    retry_after: str | None = None
    malformed: frozenset[str] = frozenset()
    oversized: frozenset[str] = frozenset()
    slow: Mapping[str, float] = field(default_factory=_empty)  # type: ignore[arg-type]
    drip: Mapping[str, float] = field(default_factory=_empty)  # type: ignore[arg-type]
    answers: Mapping[str, RawAnswer] = field(default_factory=_empty)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if any(pause <= 0 for pause in self.drip.values()):
            raise ValueError("pauses are positive seconds")
        _keep(
            self,
            malformed=frozenset(self.malformed),
            oversized=frozenset(self.oversized),
            slow=MappingProxyType(dict(self.slow)),
            drip=MappingProxyType(dict(self.drip)),
            answers=MappingProxyType(dict(self.answers)),
        )


@dataclass(frozen=True)
class Auto:
    """Copilot Auto's session calls (``Scenario(auto=...)``): the pool it offers, the
    discounts, the model the routing call chooses, how long sessions last, and which call
    is gated off (404)."""

    pool: tuple[str, ...] | None = None
    discounts: Mapping[str, float] | None = None
    selects: str | None = None
    pool_lifetime: int = 3600
    route_lifetime: int = 86400
    gated: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        gated = frozenset(self.gated)
        if not gated <= AUTO_CALLS:
            raise ValueError(f"gated names Auto's calls: {sorted(AUTO_CALLS)}")
        if self.pool_lifetime < 0 or self.route_lifetime < 0:
            raise ValueError("a session lasts 0 seconds or more")
        pool: object = self.pool
        if pool is not None and (
            isinstance(pool, str)
            or not isinstance(pool, tuple | list)
            or not all(isinstance(m, str) for m in pool)
        ):
            raise ValueError("pool is a sequence of model ids")
        discounts = None if self.discounts is None else dict(self.discounts)
        if discounts is not None and not all(
            isinstance(d, int | float) and 0 <= d <= 1 for d in discounts.values()
        ):
            raise ValueError("a discount is a fraction from 0 to 1")
        _keep(
            self,
            pool=None if self.pool is None else tuple(self.pool),
            discounts=None if discounts is None else MappingProxyType(discounts),
            gated=gated,
        )


@dataclass(frozen=True)
class Sockets:
    """Copilot's Responses over WebSocket (``wss://{api}/responses``; ``Scenario(sockets=...)``):
    the socket's age limit and its scripted failures, each counted from the emulator's
    start. ``max_age`` is the seconds a socket serves (then an error frame
    ``websocket_connection_limit_reached`` and a close); ``refused`` the statuses the first
    handshakes are answered with, in order (``(403,)``: the first refused, later ones
    served); ``closes`` the number of socket requests answered by dropping the connection
    (no close frame) before any frame; ``forgets`` the number of chained requests answered
    ``previous_response_not_found`` as if the service had lost the conversation;
    ``breaks`` the number of socket requests whose answer breaks off after its first frame
    with an error frame ``internal_error`` (the socket goes on)."""

    max_age: float = 3600.0
    refused: tuple[int, ...] = ()
    closes: int = 0
    forgets: int = 0
    breaks: int = 0

    def __post_init__(self) -> None:
        if self.max_age <= 0 or min(self.closes, self.forgets, self.breaks) < 0:
            raise ValueError("a socket's age is positive seconds; counts are 0 or more")
        refused = tuple(self.refused)
        if not all(isinstance(status, int) and 400 <= status <= 599 for status in refused):
            raise ValueError("refused holds HTTP error statuses (400-599)")
        _keep(self, refused=refused)


# Scenario's keyword for each group, in the order its docstring tells them.
GROUPS: tuple[tuple[str, type], ...] = (
    ("login", DeviceFlow),
    ("session", Session),
    ("inventory", Inventory),
    ("replies", Replies),
    ("usage", Usage),
    ("faults", Faults),
    ("auto", Auto),
    ("sockets", Sockets),
)
