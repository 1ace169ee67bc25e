"""What the emulated GitHub does: a frozen, scriptable scenario."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._groups import (
    AUTO_ONLY_PLANS,
    GROUPS,
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
from ._routes import ENDPOINTS

# Only what this module defines: the groups and the plans are _groups.py's, ENDPOINTS is
# _routes.py's, and copilot_host.testing re-exports each from where it is defined.
__all__ = ["CHECKS", "Scenario"]


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
#   embeddings_input    an embeddings ``input`` that is one string, not a list (400)
#   embeddings_tokens   an embeddings ``input`` of token arrays (400)
#   embeddings_inputs   more embeddings inputs than the model's ``limits.max_inputs`` (400)
#   embeddings_dimensions  ``dimensions`` for a model that does not list them (400)
#   mcp_servers         a Messages ``mcp_servers`` (Anthropic's MCP connector) (400)
#   tool_search         tool search (``tool_search_tool_*``, ``defer_loading``,
#                       ``tool_reference``) without ``advanced-tool-use`` (400)
#   cache_control       a ``cache_control`` with ``scope``, or ``ttl`` without its beta (400)
#   effort              ``output_config.effort`` other than low, medium, high (400)
#   hosted_tools        a Responses tool OpenAI hosts (``image_generation``, ...) (400)
#   reasoning_context   a Responses ``reasoning.context`` (400)
#   sampling            ``temperature``/``top_p`` other than 1, or Chat's ``max_tokens``,
#                       for a GPT-5 or o-series model (400)
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
        "embeddings_input",
        "embeddings_tokens",
        "embeddings_inputs",
        "embeddings_dimensions",
        "mcp_servers",
        "tool_search",
        "cache_control",
        "effort",
        "hosted_tools",
        "reasoning_context",
        "sampling",
    }
)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """How the emulated GitHub behaves, one group per concern; every default is the happy
    path. ``Scenario(login=DeviceFlow(...), session=Session(...), inventory=Inventory(...),
    replies=Replies(...), usage=Usage(...), faults=Faults(...), auto=Auto(...), lenient=...)``;
    a group not given is its defaults. Each group checks its values and keeps frozen copies
    (a mapping or set given is copied); the scenario checks the endpoint names they give:
    ``scenario.usage.usage_plan`` reads what the emulator runs with.

    ``login=DeviceFlow``, github.com's device flow: ``slow_down_polls`` slow_down answers
    come first, then ``pending_polls`` authorization_pending answers, then ``login_result``
    (``"approved"``, ``"access_denied"``, ``"expired_token"`` or any other OAuth error
    string). With ``auto_approve=False`` polls stay pending until
    :meth:`GitHubEmulator.authorize` (or ``deny``) is called. The answers are JSON when the
    request says ``Accept: application/json`` and form-encoded otherwise, as on github.com.
    ``account`` is the login ``/user`` answers.

    ``session=Session``, the exchange: ``sku`` is the session's SKU (None: the plan's,
    ``free_limited_copilot`` on Free and other plans limited to Auto,
    ``free_educational_quota`` on Student, else ``copilot_for_individuals``);
    ``entitlement`` (a notification id such as
    ``"no_copilot_access"`` or ``"not_signed_up"``) answers 403; ``revoked`` answers 401
    (and ``/user`` 401); ``api_endpoint`` is the ``endpoints.api`` the exchange names (set
    it off the allowlist to test refusal; ``https://api.enterprise.githubcopilot.com``
    answers a stale session with 403, as that host does). ``copilot_client_ids`` are the
    OAuth apps whose tokens the exchange accepts (a token is issued for the ``client_id``
    its login used; the emulator's initial token is VS Code's); a personal access token
    (``ghp_``/``github_pat_``) is refused with 403. ``clock_skew`` moves the emulator's
    clock (``Date``, ``expires_at``). ``chat_enabled`` is the answer's ``chat_enabled``
    (false: a policy has turned Copilot Chat off for the account); ``organization_list``
    (ids) and ``enterprise_list`` (numbers) name what gives the seat (sent when not empty).

    ``inventory=Inventory``, the models and who is served them: ``models`` is what
    ``/models`` lists; ``min_editor_version`` maps a model id to the lowest
    ``Editor-Version`` (``"1.104.1"``) it serves (400 ``model_not_supported_in_version``
    below it); ``min_api_version`` (``"2025-05-01"``) and ``min_client_version``
    (``"1.109.2"``, for ``vscode/`` editors) and ``min_cli_version`` (``"1.0.110"``, for
    the Copilot CLI's ``copilot/`` identity) are floors under which every Copilot request
    gets HTTP 466.
    ``deprecated_below`` is an ``Editor-Version`` under which every ``/models`` entry
    carries a ``warning_messages`` entry with code ``client_version_deprecated``.
    ``refused_integration_ids`` are ``Copilot-Integration-Id`` values an organisation's
    policy refuses (403 on every Copilot request that presents one). ``unserved_models``
    scripts an organisation whose policy serves a client's discovery but not its inference:
    it maps a ``Copilot-Integration-Id`` to the model ids (``"*"``: every model) that a
    model request presenting it is answered 400 ``model_not_supported`` for, though
    ``/models`` lists them to that identity too. ``integrator_models`` (None: every model)
    are the models the login's OAuth app (its integrator) is served: a model request for
    any other is answered 400 ``model_not_available_for_integrator``, naming the
    integrator and listing these, whatever ``Copilot-Integration-Id`` says.

    ``replies=Replies``, model answers: ``stream_events`` is the number of text deltas a
    streamed answer carries and ``stream_pause`` the seconds between its events; with
    ``stream_cut=N`` a streamed answer breaks off after its first ``N`` events (the
    connection closes without the stream's end, as when the service or a proxy drops it).
    With ``tool_calls=False`` every answer is text, even when the request offers tools
    (``copilot-host serve --emulator`` sets it: an agent would run the emulator's tool
    call, with empty arguments, for real). ``tool_script`` scripts the calls instead (and
    is followed whatever ``tool_calls`` says): while a request carries ``N`` tool results
    and offers a tool named as ``tool_script[N]``, the answer is that call (a Chat
    ``tool_calls`` entry, a Responses ``function_call`` item, a Messages ``tool_use``
    block, whole or streamed); once every scripted call has its result, text.

    ``usage=Usage``, usage and quota (``/copilot_internal/user``, the quota headers, the
    cost each answer reports): ``usage_plan`` is the shape (``"credits"``, ``"requests"``,
    ``"free"`` or ``"student"``); ``quota_entitlement`` and ``quota_used`` are the quota in
    the plan's unit (credits, premium requests, or free chat requests); each model answer
    reports ``request_cost`` credits (``copilot_usage.total_nano_aiu``) and uses that much
    of a credit quota, or one request of the others. With ``cost_model="prices"`` an answer
    costs its tokens times the model's inventory prices instead (its usage reports the
    prompt as a quarter of the body's bytes and the output as ``stream_events`` tokens; a
    model without prices costs ``request_cost``). Overage is permitted by default (the
    happy path never runs out); a quota used up with ``overage_permitted=False`` answers
    model requests with 402 ``quota_exceeded``; ``quota_exceeded_on`` names endpoints that
    answer 402 ``quota_exceeded`` whatever the quota. Plans limited to Auto model
    selection (``auto_only``; by default the ``"free"`` and ``"student"`` plans, as since
    2026-06-24): ``/models`` lists every entry with ``model_picker_enabled: false``; a
    model request that names a model is answered 400 ``model_not_supported``; a Chat
    Completions request without ``model`` is served by the inventory's chat default (the
    answer names it). Rate-limit windows (``session_window``, ``weekly_window``, each a
    :class:`RateWindow`) are reported in ``x-usage-ratelimit-<window>`` on every model
    answer; a spent one refuses model requests with 429 and ``Retry-After``
    (``user_weekly_rate_limited`` for the weekly window).

    ``faults=Faults``, failures and hostile answers: ``exchange_failures`` /
    ``models_failures`` are statuses served before success (e.g. ``(429,)``, ``(503,)``)
    with ``retry_after`` as their ``Retry-After``; per endpoint name (see ``ENDPOINTS``):
    ``malformed`` (not JSON), ``oversized`` (a body over the adapter's cap, sent chunked),
    ``slow`` (seconds to stall before answering), ``drip`` (seconds between the single
    bytes of the body: each read is quick, the whole answer is not), ``answers`` (an exact
    :class:`RawAnswer`).

    ``auto=Auto``, Copilot Auto's session calls (``POST /models/session``, the pool a client
    picks from; ``POST /auto``, the model the service chooses by the prompt): ``pool`` is
    the ids the pool call lists (None: the inventory's chat default, then the first model
    each API serves); ``discounts`` maps an id to the fraction off its price (None: 0.1 on
    every pool model, except on plans limited to Auto, which get none); ``selects`` is the
    model the routing call chooses (None: the pool's first, its first that takes images for
    ``has_image``); ``pool_lifetime`` and ``route_lifetime`` are each session's seconds;
    ``gated`` names the calls answered 404 (``"pool"``, ``"route"``). A model request with
    ``Copilot-Session-Token`` is served only for a model of that session while it lasts, at
    its discount, whatever the plan.
    ``sockets=Sockets``, Copilot's WebSocket for the models that list ``ws:/responses``
    (:meth:`GitHubEmulator.socket_connector`): its age limit, and handshakes refused,
    connections dropped and conversations forgotten on purpose.

    ``lenient`` names checks of ``CHECKS`` to skip (``True``: all of them).
    """

    login: DeviceFlow = field(default_factory=DeviceFlow)
    session: Session = field(default_factory=Session)
    inventory: Inventory = field(default_factory=Inventory)
    replies: Replies = field(default_factory=Replies)
    usage: Usage = field(default_factory=Usage)
    faults: Faults = field(default_factory=Faults)
    auto: Auto = field(default_factory=Auto)
    sockets: Sockets = field(default_factory=Sockets)
    lenient: frozenset[str] | bool = frozenset()

    def __new__(cls, *args: object, **keywords: object) -> Scenario:
        # The flat keywords of 0.3.0 (deprecated in 0.4.0) are gone: say where each went.
        for name in keywords:
            if name in _MOVED:
                group, kind = _MOVED[name]
                raise TypeError(
                    f"Scenario() takes {name}= in its group since 0.5.0: "
                    f"Scenario({group}={kind}({name}=...))"
                )
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for name, kind in GROUPS:
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name}= takes a {kind.__name__}")
        lenient = self.lenient
        if isinstance(lenient, bool):
            # True switches every rule off: a test of a client known not to comply yet.
            lenient = CHECKS if lenient else frozenset()
        lenient = frozenset(lenient)
        for check in lenient:
            if check not in CHECKS:
                raise ValueError(f"unknown check {check!r}; one of {sorted(CHECKS)}")
        object.__setattr__(self, "lenient", lenient)
        # Each group checked its own values; the endpoint names are the routing table's.
        faults = self.faults
        _endpoints(
            (*faults.malformed, *faults.oversized, *faults.slow, *faults.drip, *faults.answers)
        )
        _endpoints(self.usage.quota_exceeded_on)

    @property
    def auto_only_plan(self) -> bool:
        """Whether the account may use only Auto model selection: ``usage.auto_only`` when
        given, else whether ``usage.usage_plan`` is one of ``AUTO_ONLY_PLANS``."""
        if self.usage.auto_only is not None:
            return self.usage.auto_only
        return self.usage.usage_plan in AUTO_ONLY_PLANS

    @property
    def session_sku(self) -> str:
        """The SKU the exchange names: ``session.sku`` when given, else the plan's."""
        if self.session.sku is not None:
            return self.session.sku
        if self.usage.usage_plan == "student":
            return "free_educational_quota"
        return "free_limited_copilot" if self.auto_only_plan else "copilot_for_individuals"

    @property
    def rate_windows(self) -> dict[str, RateWindow]:
        """The scripted windows by name (``session``, ``weekly``)."""
        windows = {"session": self.usage.session_window, "weekly": self.usage.weekly_window}
        return {name: window for name, window in windows.items() if window is not None}

    def strict(self, check: str) -> bool:
        """Whether the emulated service makes the refusal named ``check`` (see ``CHECKS``)."""
        lenient = self.lenient
        return not lenient if isinstance(lenient, bool) else check not in lenient


# Each field of a group -> (Scenario's keyword for the group, the group's class name): where
# a flat keyword of 0.4.0 went.
_MOVED = {
    member.name: (name, kind.__name__)
    for name, kind in GROUPS
    for member in dataclasses.fields(kind)
}


def _endpoints(names: Iterable[str]) -> None:
    for name in names:
        if name not in ENDPOINTS:
            raise ValueError(f"unknown emulated endpoint {name!r}; one of {sorted(ENDPOINTS)}")
