"""What the emulated GitHub does: a frozen, scriptable scenario and inventory helpers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "ENDPOINTS",
    "RawAnswer",
    "Scenario",
    "chat_model",
    "default_models",
    "inventory_of",
]

# Names of the emulated endpoints, used by Scenario's per-endpoint knobs.
ENDPOINTS = frozenset(
    {"device_code", "access_token", "copilot_token", "user", "models", "chat", "responses"}
)


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """An exact answer to serve instead of the emulated one (hostile-response tests)."""

    status: int = 200
    body: bytes = b"{}"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)


def chat_model(
    model_id: str,
    *,
    name: str | None = None,
    endpoints: Sequence[str] | None = ("/chat/completions",),
    kind: str = "chat",
    vision: bool = False,
    reasoning: bool = False,
    picker: bool = True,
    policy: str | None = "enabled",
    context_window: int | None = 128_000,
    max_output_tokens: int | None = 16_384,
) -> dict[str, object]:
    """One inventory entry shaped like the Copilot API's ``GET /models`` items."""
    supports: dict[str, object] = {"streaming": True, "tool_calls": True}
    if vision:
        supports["vision"] = True
    if reasoning:
        supports["reasoning_effort"] = ["low", "medium", "high"]
    limits: dict[str, object] = {}
    if context_window is not None:
        limits["max_context_window_tokens"] = context_window
    if max_output_tokens is not None:
        limits["max_output_tokens"] = max_output_tokens
    item: dict[str, object] = {
        "id": model_id,
        "name": name if name is not None else model_id,
        "object": "model",
        "vendor": "emulated",
        "version": model_id,
        "preview": False,
        "model_picker_enabled": picker,
        "capabilities": {
            "type": kind,
            "family": model_id,
            "object": "model_capabilities",
            "limits": limits,
            "supports": supports,
        },
    }
    if policy is not None:
        item["policy"] = {"state": policy, "terms": "emulated terms"}
    if endpoints is not None:
        item["supported_endpoints"] = list(endpoints)
    return item


def default_models() -> tuple[dict[str, object], ...]:
    """A small inventory covering each eligibility rule of DESIGN.md step 4."""
    return (
        chat_model("gpt-4.1", name="GPT-4.1", vision=True),
        chat_model(
            "gpt-5-mini",
            name="GPT-5 mini",
            endpoints=("/chat/completions", "/responses"),
            reasoning=True,
        ),
        chat_model("claude-sonnet-4", name="Claude Sonnet 4", endpoints=None, picker=False),
        # Not eligible: an embedding model, a disabled policy, an Anthropic-only route.
        chat_model("text-embedding-3-small", kind="embeddings", endpoints=None),
        chat_model("o3-disabled", name="o3 (disabled)", policy="disabled"),
        chat_model("claude-messages-only", endpoints=("/v1/messages",)),
    )


def inventory_of(count: int, *, responses_every: int = 3) -> tuple[dict[str, object], ...]:
    """``count`` eligible models (every ``responses_every``-th one speaks Responses)."""
    return tuple(
        chat_model(
            f"emu-model-{index:05d}",
            name=f"Emulated model {index}",
            endpoints=("/responses",) if index % responses_every == 0 else ("/chat/completions",),
        )
        for index in range(count)
    )


@dataclass(frozen=True)
class Scenario:
    """How the emulated GitHub behaves; every default is the happy path.

    Device flow: ``slow_down_polls`` slow_down answers come first, then
    ``pending_polls`` authorization_pending answers, then ``login_result``
    (``"approved"``, ``"access_denied"``, ``"expired_token"`` or any other OAuth error
    string). With ``auto_approve=False`` polls stay pending until
    :meth:`GitHubEmulator.authorize` (or ``deny``) is called.

    Exchange: ``entitlement`` (a notification id such as ``"no_copilot_access"``) answers
    403; ``revoked`` answers 401 (and ``/user`` 401); ``exchange_failures`` /
    ``models_failures`` are statuses served before success (e.g. ``(429,)``, ``(503,)``)
    with ``retry_after`` as their ``Retry-After``; ``api_endpoint`` is the
    ``endpoints.api`` the exchange names (set it off the allowlist to test refusal).

    Hostile answers per endpoint name (see ``ENDPOINTS``): ``malformed`` (not JSON),
    ``oversized`` (a body over the adapter's cap, sent chunked), ``slow`` (seconds to stall
    before answering), ``answers`` (an exact :class:`RawAnswer`).
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
    models: tuple[Mapping[str, object], ...] = field(default_factory=default_models)
    malformed: frozenset[str] = frozenset()
    oversized: frozenset[str] = frozenset()
    slow: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    answers: Mapping[str, RawAnswer] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        for name in (*self.malformed, *self.oversized, *self.slow, *self.answers):
            if name not in ENDPOINTS:
                raise ValueError(f"unknown emulated endpoint {name!r}; one of {sorted(ENDPOINTS)}")
        # Freeze caller-supplied dicts so a running emulator never sees them change.
        object.__setattr__(self, "slow", MappingProxyType(dict(self.slow)))
        object.__setattr__(self, "answers", MappingProxyType(dict(self.answers)))
        object.__setattr__(self, "models", tuple(self.models))
