"""What the emulated GitHub does: a frozen, scriptable scenario."""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ._costs import COST_MODELS
from ._groups import (
    COPILOT_CLI_CLIENT_ID,
    GROUPS,
    VSCODE_CLIENT_ID,
    DeviceFlow,
    Faults,
    Inventory,
    RateWindow,
    RawAnswer,
    Replies,
    Session,
    Usage,
)
from ._inventory import realistic_models
from ._protocols import ToolCall
from ._routes import ENDPOINTS

# Only what this module defines: the groups are _groups.py's, ENDPOINTS is _routes.py's, and
# copilot_host.testing re-exports each from where it is defined.
__all__ = ["AUTO_ONLY_PLANS", "CHECKS", "USAGE_PLANS", "Scenario"]


# The refusals the real service makes that a scenario may switch off (``Scenario(lenient=)``),
# for a client that is known not to comply yet. Each name is one check:
#   editor_version      a Copilot request without Editor-Version (400)
#   integration_id      a Copilot request without Copilot-Integration-Id (400)
#   vision_header       image input without Copilot-Vision-Request: true (400)
#   model_endpoint      a model called on an endpoint its entry does not list (400)
#   copilot_client_id   the exchange for a token of an app not enabled for Copilot (404)
#   anthropic_beta      a Messages request naming a beta the service does not serve (400)
#   system_text         a Messages request whose ``system`` is a string, not blocks (400)
#   billing_header      a Messages ``system`` starting ``x-anthropic-billing-header:`` (400)
#   beta_fields         a Messages body field whose beta is not served with it (400)
#   output_limit        an output-token cap above the model's ``max_output_tokens`` (400)
#   server_tools        a Messages ``web_search_*``/``web_fetch_*``/``code_execution_*`` tool
#   custom_tools        a Responses ``custom`` tool (400)
#   namespace_tools     a Responses ``namespace`` tool (400)
#   web_search_tools    a Responses ``web_search`` tool (400)
#   additional_tools    a Responses ``additional_tools`` input item (400)
#   count_tokens        ``POST /v1/messages/count_tokens``, which Copilot does not serve (404)
CHECKS = frozenset(
    {
        "editor_version",
        "integration_id",
        "vision_header",
        "model_endpoint",
        "copilot_client_id",
        "anthropic_beta",
        "system_text",
        "billing_header",
        "beta_fields",
        "output_limit",
        "server_tools",
        "custom_tools",
        "namespace_tools",
        "web_search_tools",
        "additional_tools",
        "count_tokens",
    }
)

_VERSION = re.compile(r"\d+(?:\.\d+)*")
# The shapes of ``/copilot_internal/user``: a credit-billed plan (usage-based billing since
# 2026-06-01), a plan still billed by premium request, Copilot Free, and Copilot Student.
USAGE_PLANS = frozenset({"credits", "requests", "free", "student"})
# The plans GitHub limited to Auto model selection on 2026-06-24.
AUTO_ONLY_PLANS = frozenset({"free", "student"})
_API_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Scenario:
    """How the emulated GitHub behaves; every default is the happy path.

    Device flow: ``slow_down_polls`` slow_down answers come first, then
    ``pending_polls`` authorization_pending answers, then ``login_result``
    (``"approved"``, ``"access_denied"``, ``"expired_token"`` or any other OAuth error
    string). With ``auto_approve=False`` polls stay pending until
    :meth:`GitHubEmulator.authorize` (or ``deny``) is called. The answers are JSON when the
    request says ``Accept: application/json`` and form-encoded otherwise, as on github.com.

    Exchange: ``entitlement`` (a notification id such as ``"no_copilot_access"`` or
    ``"not_signed_up"``) answers 403; ``revoked`` answers 401 (and ``/user`` 401);
    ``exchange_failures`` / ``models_failures`` are statuses served before success (e.g.
    ``(429,)``, ``(503,)``) with ``retry_after`` as their ``Retry-After``; ``api_endpoint``
    is the ``endpoints.api`` the exchange names (set it off the allowlist to test refusal;
    ``https://api.enterprise.githubcopilot.com`` answers a stale session with 403, as that
    host does). ``copilot_client_ids`` are the OAuth apps whose tokens the exchange accepts
    (a token is issued for the ``client_id`` its login used; the emulator's initial token is
    VS Code's); a personal access token (``ghp_``/``github_pat_``) is refused with 403.

    Model requests: ``min_editor_version`` maps a model id to the lowest ``Editor-Version``
    (``"1.104.1"``) it serves (400 ``model_not_supported_in_version`` below it);
    ``min_api_version`` (``"2025-05-01"``) and ``min_client_version`` (``"1.109.2"``) are
    floors under which every Copilot request gets HTTP 466. ``stream_events`` is the number
    of text deltas a streamed answer carries and ``stream_pause`` the seconds between its
    events; with ``stream_cut=N`` a streamed answer breaks off after its first ``N`` events
    (the connection closes without the stream's end, as when the service or a proxy drops
    it). ``lenient`` names checks of ``CHECKS`` to skip (``True``: all of them).
    ``deprecated_below`` is an ``Editor-Version`` under which every ``/models`` entry
    carries a ``warning_messages`` entry with code ``client_version_deprecated``.
    ``refused_integration_ids`` are ``Copilot-Integration-Id`` values an organisation's
    policy refuses (403 on every Copilot request that presents one). ``unserved_models``
    scripts an organisation whose policy serves a client's discovery but not its inference:
    it maps a ``Copilot-Integration-Id`` to the model ids (``"*"``: every model) that a
    model request presenting it is answered 400 ``model_not_supported`` for, though
    ``/models`` lists them to that identity too.

    Usage and quota (``/copilot_internal/user``, the quota headers, the cost each answer
    reports): ``usage_plan`` is the shape (``"credits"``, ``"requests"`` or ``"free"``);
    ``quota_entitlement`` and ``quota_used`` are the quota in the plan's unit (credits,
    premium requests, or free chat requests); each model answer reports ``request_cost``
    credits (``copilot_usage.total_nano_aiu``) and uses that much of a credit quota, or one
    request of the others. With ``cost_model="prices"`` an answer costs its tokens times
    the model's inventory prices instead (its usage reports the prompt as a quarter of the
    body's bytes and the output as ``stream_events`` tokens; a model without prices costs
    ``request_cost``). Overage is permitted by default (the happy path never runs
    out); a quota used up with ``overage_permitted=False`` answers model requests with 402
    ``quota_exceeded``; ``quota_exceeded_on`` names endpoints that answer
    402 ``quota_exceeded`` whatever the quota.

    Plans limited to Auto model selection (``auto_only``; by default the ``"free"`` and
    ``"student"`` plans, as since 2026-06-24): ``/models`` lists every entry with
    ``model_picker_enabled: false``; a model request that names a model is answered 400
    ``model_not_supported``; a Chat Completions request without ``model`` is served by the
    inventory's chat default (the answer names it). Rate-limit windows (``session_window``,
    ``weekly_window``, each a :class:`RateWindow`) are reported in
    ``x-usage-ratelimit-<window>`` on every model answer; a spent one refuses model requests
    with 429 and ``Retry-After`` (``user_weekly_rate_limited`` for the weekly window).

    With ``tool_calls=False`` every answer is text, even when the request offers tools
    (``copilot-host serve --emulator`` sets it: an agent would run the emulator's tool
    call, with empty arguments, for real). ``tool_script`` scripts the calls instead (and
    is followed whatever ``tool_calls`` says): while a request carries ``N`` tool results
    and offers a tool named as ``tool_script[N]``, the answer is that call (a Chat
    ``tool_calls`` entry, a Responses ``function_call`` item, a Messages ``tool_use``
    block, whole or streamed); once every scripted call has its result, text.

    Hostile answers per endpoint name (see ``ENDPOINTS``): ``malformed`` (not JSON),
    ``oversized`` (a body over the adapter's cap, sent chunked), ``slow`` (seconds to stall
    before answering), ``drip`` (seconds between the single bytes of the body: each read
    is quick, the whole answer is not), ``answers`` (an exact :class:`RawAnswer`).
    """

    user_code: str = "WDJB-MJHT"
    verification_uri: str = "https://github.com/login/device"
    interval: int | None = 5
    expires_in: int = 900
    slow_down_polls: int = 0
    pending_polls: int = 0
    auto_approve: bool = True
    login_result: str = "approved"
    account: str = "octocat"
    entitlement: str | None = None
    revoked: bool = False
    exchange_failures: tuple[int, ...] = ()
    models_failures: tuple[int, ...] = ()
    retry_after: str | None = None
    api_endpoint: str = "https://api.individual.githubcopilot.com"
    session_lifetime: int = 1800
    refresh_in: int | None = 1500
    sku: str = "copilot_for_individuals"
    clock_skew: float = 0.0
    copilot_client_ids: frozenset[str] = frozenset({VSCODE_CLIENT_ID, COPILOT_CLI_CLIENT_ID})
    models: tuple[Mapping[str, object], ...] = field(default_factory=realistic_models)
    min_editor_version: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    min_api_version: str | None = None
    min_client_version: str | None = None
    stream_events: int = 4
    stream_pause: float = 0.0
    stream_cut: int | None = None
    deprecated_below: str | None = None
    refused_integration_ids: frozenset[str] = frozenset()
    unserved_models: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
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
    lenient: frozenset[str] | bool = frozenset()
    tool_calls: bool = True
    tool_script: tuple[ToolCall, ...] = ()
    malformed: frozenset[str] = frozenset()
    oversized: frozenset[str] = frozenset()
    slow: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    drip: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    answers: Mapping[str, RawAnswer] = field(default_factory=lambda: MappingProxyType({}))
    login: DeviceFlow = field(default_factory=DeviceFlow)
    session: Session = field(default_factory=Session)
    inventory: Inventory = field(default_factory=Inventory)
    replies: Replies = field(default_factory=Replies)
    usage: Usage = field(default_factory=Usage)
    faults: Faults = field(default_factory=Faults)

    def __post_init__(self) -> None:
        self._take_groups()
        for name in (
            *self.malformed,
            *self.oversized,
            *self.slow,
            *self.drip,
            *self.answers,
            *self.quota_exceeded_on,
        ):
            if name not in ENDPOINTS:
                raise ValueError(f"unknown emulated endpoint {name!r}; one of {sorted(ENDPOINTS)}")
        lenient = self.lenient
        if isinstance(lenient, bool):
            # True switches every rule off: a test of a client known not to comply yet.
            lenient = CHECKS if lenient else frozenset()
            object.__setattr__(self, "lenient", lenient)
        for check in lenient:
            if check not in CHECKS:
                raise ValueError(f"unknown check {check!r}; one of {sorted(CHECKS)}")
        if self.usage_plan not in USAGE_PLANS:
            raise ValueError(f"usage_plan is one of {sorted(USAGE_PLANS)}")
        if self.cost_model not in COST_MODELS:
            raise ValueError(f"cost_model is one of {sorted(COST_MODELS)}")
        if self.quota_entitlement < 0 or self.request_cost < 0:
            raise ValueError("a quota and a cost are 0 or more")
        for floor in (
            *self.min_editor_version.values(),
            self.min_client_version,
            self.deprecated_below,
        ):
            if floor is not None and not _VERSION.fullmatch(floor):
                raise ValueError(f"an editor version floor is dotted numbers, not {floor!r}")
        if self.min_api_version is not None and not _API_VERSION.fullmatch(self.min_api_version):
            raise ValueError("min_api_version is a date like 2025-05-01")
        if self.stream_events < 1:
            raise ValueError("stream_events must be at least 1")
        if self.stream_cut is not None and self.stream_cut < 0:
            raise ValueError("stream_cut is a number of events, 0 or more")
        if self.stream_pause < 0 or any(pause <= 0 for pause in self.drip.values()):
            raise ValueError("pauses are positive seconds")
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
        object.__setattr__(self, "unserved_models", MappingProxyType(unserved))
        # Freeze caller-supplied dicts so a running emulator never sees them change.
        for name in ("slow", "drip", "answers", "min_editor_version"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        for name in (
            "lenient",
            "copilot_client_ids",
            "malformed",
            "oversized",
            "refused_integration_ids",
            "quota_exceeded_on",
        ):
            object.__setattr__(self, name, frozenset(getattr(self, name)))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "tool_script", tuple(self.tool_script))
        if not all(isinstance(call, ToolCall) for call in self.tool_script):
            raise TypeError("tool_script is a sequence of ToolCall")
        # The groups show the checked, frozen values the emulator runs with.
        for name, kind in GROUPS:
            values = {m.name: getattr(self, m.name) for m in dataclasses.fields(kind)}
            object.__setattr__(self, name, kind(**values))

    def _take_groups(self) -> None:
        """Apply the groups given and fill in the others from the flat fields, so
        ``scenario.usage.usage_plan`` always reads what runs; warn once for flat keywords.

        A flat value that differs from both its default and its group's value wins: that
        is ``dataclasses.replace(scenario, slow=...)`` changing one field of a scenario."""
        defaults = _flat_defaults()
        flat: list[str] = []
        for name, kind in GROUPS:
            group = getattr(self, name)
            if not isinstance(group, kind):
                raise TypeError(f"{name}= takes a {kind.__name__}")
            if group == _default_groups()[name]:
                group = None  # not given: the flat fields say what runs
            values: dict[str, object] = {}
            for member in dataclasses.fields(kind):
                given = getattr(self, member.name)
                changed = given != defaults[member.name]
                if group is None or (changed and given != getattr(group, member.name)):
                    values[member.name] = given
                    if changed:
                        flat.append(member.name)
                else:
                    values[member.name] = getattr(group, member.name)
                object.__setattr__(self, member.name, values[member.name])
        if flat:
            warnings.warn(
                "Scenario's flat keywords are deprecated and go in 0.5.0; give "
                f"{', '.join(flat)} in the groups (login=, session=, inventory=, replies=, "
                "usage=, faults=)",
                DeprecationWarning,
                stacklevel=4,
            )

    @property
    def auto_only_plan(self) -> bool:
        """Whether the account may use only Auto model selection: ``auto_only`` when given,
        else whether ``usage_plan`` is one of ``AUTO_ONLY_PLANS``."""
        if self.auto_only is not None:
            return self.auto_only
        return self.usage_plan in AUTO_ONLY_PLANS

    @property
    def rate_windows(self) -> dict[str, RateWindow]:
        """The scripted windows by name (``session``, ``weekly``)."""
        windows = {"session": self.session_window, "weekly": self.weekly_window}
        return {name: window for name, window in windows.items() if window is not None}

    def strict(self, check: str) -> bool:
        """Whether the emulated service makes the refusal named ``check`` (see ``CHECKS``)."""
        lenient = self.lenient
        return not lenient if isinstance(lenient, bool) else check not in lenient


@functools.cache
def _default_groups() -> dict[str, object]:
    """Each group as it is when not given (built once: only ever compared against)."""
    return {name: kind() for name, kind in GROUPS}


@functools.cache
def _flat_defaults() -> dict[str, object]:
    """Each grouped field's default, as the group declares it."""
    values: dict[str, object] = {}
    for _, kind in GROUPS:
        for member in dataclasses.fields(kind):
            if member.default is not dataclasses.MISSING:
                values[member.name] = member.default
            elif member.default_factory is not dataclasses.MISSING:
                values[member.name] = member.default_factory()
    return values
