"""The emulated GitHub: state, routing and answers, served by a threaded stdlib server.

Each rule below models what the real service was seen to do; docs/EMULATOR.md lists the
facts and where they were observed.
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import json
import re
import secrets
import selectors
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import Any

from ._answers import (
    DEVICE_CODE_GRANT_TYPE,
    Answer,
    copilot_error,
    copilot_request_id,
    copilot_text,
    github_json,
    github_request_id,
    json_answer,
    oauth_answer,
)
from ._betas import unserved_betas
from ._costs import estimate_tokens, price_cost
from ._protocols import PROTOCOL_PATHS, has_image, read_request, reply
from ._record import RecordedRequest
from ._routes import COPILOT_HOSTS, GITHUB_HOST, ROUTED_HOSTS, route_of
from ._rules import (
    Refusal,
    messages_refusal,
    output_cap_refusal,
    responses_refusal,
)
from ._scenario import VSCODE_CLIENT_ID, RawAnswer, Scenario

__all__ = ["COPILOT_HOSTS", "EmulatorState", "ROUTED_HOSTS", "make_server"]

# The one Copilot host seen answering a stale session with a bare 403 instead of 401.
ENTERPRISE_HOST = "api.enterprise.githubcopilot.com"

_SMALL_OVER = 64 * 1024 + 4096
_LARGE_OVER = 8 * 1024 * 1024 + 4096
_MALFORMED = b'{"this is": not JSON at all'
# Prefixes GitHub gives personal access tokens (classic and fine-grained).
_PAT_PREFIXES = ("ghp_", "github_pat_")
_NUMBERS = re.compile(r"\d+(?:\.\d+)*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

# notification_id -> (title, message, url) of the exchange's 403, as seen for the ids whose
# texts are public; other ids get the generic "Contact Support" text the service also sends.
_ENTITLEMENTS = {
    "no_copilot_access": (
        "Signup for GitHub Copilot",
        "No access to GitHub Copilot found. You are currently logged in as {login}.",
        "https://github.com/github-copilot/signup?editor={EDITOR}",
    ),
    "not_signed_up": (
        "Signup for GitHub Copilot",
        "No access to GitHub Copilot found. You are currently logged in as {login}.",
        "https://github.com/github-copilot/signup?editor={EDITOR}",
    ),
    "subscription_ended": (
        "GitHub Copilot subscription ended",
        "Thank you for using GitHub Copilot. Your subscription has ended. "
        "You are currently logged in as {login}.",
        "https://github.com/settings/copilot",
    ),
}
_SUPPORT = (
    "Contact Support",
    "Contact Support. You are currently logged in as {login}.",
    "https://support.github.com",
)

# poll() where there is one: no descriptor of its own and no limit on descriptor numbers.
_Watch: type[selectors.BaseSelector] = getattr(selectors, "PollSelector", selectors.DefaultSelector)


# What every /models entry carries for a client the service calls stale (late 2026). The
# text is the emulator's; the code is the one clients act on.
_DEPRECATED_NOTICE = {
    "code": "client_version_deprecated",
    "message": "This client version is deprecated and will stop working soon. "
    "Please update to the latest version.",
}


def _version(text: str) -> tuple[int, ...]:
    """The numeric version in an ``Editor-Version`` (``vscode/1.104.1`` -> (1, 104, 1));
    a value without one counts as the oldest."""
    match = _NUMBERS.search(text.rpartition("/")[2])
    return tuple(int(part) for part in match.group().split(".")) if match else (0,)


def _served_paths(models: tuple[Mapping[str, object], ...]) -> dict[str, frozenset[str]]:
    """Model id -> the paths the API serves it on. The first entry of an id wins; an entry
    without ``supported_endpoints`` is served on ``/chat/completions`` only. An entry that
    is not a chat model (embeddings, completions) or whose policy is not enabled is not
    served at all: the service answers ``model_not_supported`` for it, as for an unknown id
    (reports of disabled models in docs/WIRE.md)."""
    served: dict[str, frozenset[str]] = {}
    seen: set[str] = set()
    for item in models:
        model_id = item.get("id")
        if not isinstance(model_id, str) or model_id in seen:
            continue
        seen.add(model_id)
        capabilities = item.get("capabilities")
        kind = capabilities.get("type") if isinstance(capabilities, Mapping) else None
        policy = item.get("policy")
        state = policy.get("state") if isinstance(policy, Mapping) else None
        if kind not in (None, "chat") or state not in (None, "enabled"):
            continue
        endpoints = item.get("supported_endpoints")
        if isinstance(endpoints, list):
            served[model_id] = frozenset(e for e in endpoints if isinstance(e, str))
        else:
            served[model_id] = frozenset({"/chat/completions"})
    return served


_LIMITS = ("max_output_tokens", "max_prompt_tokens", "max_context_window_tokens")


def _listed_limits(models: tuple[Mapping[str, object], ...]) -> dict[str, dict[str, float]]:
    """Model id -> the token limits its first inventory entry lists (numbers only)."""
    listed: dict[str, dict[str, float]] = {}
    for item in models:
        model_id = item.get("id")
        if not isinstance(model_id, str) or model_id in listed:
            continue
        capabilities = item.get("capabilities")
        limits = capabilities.get("limits") if isinstance(capabilities, Mapping) else None
        listed[model_id] = {
            name: float(value)
            for name in _LIMITS
            if isinstance(limits, Mapping)
            and isinstance(value := limits.get(name), (int, float))
            and not isinstance(value, bool)
        }
    return listed


def refused(check: str, detail: str, answer: Answer) -> Answer:
    """``answer``, recorded as a refusal by the rule named ``check``."""
    notes = (*answer.notes, ("refusal", check), ("refusal_detail", detail))
    return dataclasses.replace(answer, notes=notes)


def _enforced(refusal: Refusal) -> Answer:
    return refused(refusal.check, refusal.detail, refusal.answer)


class EmulatorState:
    """Everything the emulated GitHub remembers, behind one lock."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self.github_token = "gho_" + secrets.token_hex(18)
        self.device_codes: list[str] = []
        self.session_tokens: list[str] = []
        self.requests: list[RecordedRequest] = []
        self.refused: list[str] = []
        self._generation = 0
        # device code -> (polls so far, the OAuth app that asked for it)
        self._polls: dict[str, tuple[int, str]] = {}
        self._decision: str | None = None
        self._revoked_login = scenario.revoked
        # The OAuth app the GitHub token was issued for: VS Code's until a login says else.
        self._token_client = VSCODE_CLIENT_ID
        self._valid_sessions: dict[str, float] = {}
        self._exchange_failures = list(scenario.exchange_failures)
        self._models_failures = list(scenario.models_failures)
        self._served = _served_paths(scenario.models)
        self._limits = _listed_limits(scenario.models)
        self._billing: dict[str, object] = {}
        for item in scenario.models:
            model_id = item.get("id")
            if isinstance(model_id, str):
                self._billing.setdefault(model_id, item.get("billing"))
        self._serial = 0
        # What the account has used of its quota, in the plan's unit.
        self._quota_used = scenario.quota_used
        # Rate-limit windows: percentage left, and when each resets (epoch seconds).
        started = self.now()
        self._window_left = {name: w.remaining for name, w in scenario.rate_windows.items()}
        self._window_reset = {
            name: started + w.resets_in
            for name, w in scenario.rate_windows.items()
            if w.resets_in is not None
        }

    # -- controls used by GitHubEmulator ---------------------------------------------------

    def decide(self, decision: str) -> None:
        with self.lock:
            self._decision = decision

    def revoke_login(self) -> None:
        with self.lock:
            self._revoked_login = True

    def revoke_sessions(self) -> None:
        with self.lock:
            self._valid_sessions.clear()

    def now(self) -> float:
        return time.time() + self.scenario.clock_skew

    @property
    def quota_used(self) -> float:
        """What the account has used of its quota so far, in the plan's unit."""
        with self.lock:
            return self._quota_used

    # -- the record ------------------------------------------------------------------------

    def remember(self, record: RecordedRequest) -> tuple[int, int]:
        with self.lock:
            self.requests.append(record)
            return self._generation, len(self.requests) - 1

    def update(self, where: tuple[int, int], **changes: Any) -> None:
        with self.changed:
            generation, index = where
            if generation != self._generation:
                return  # the test cleared the record meanwhile
            self.requests[index] = dataclasses.replace(self.requests[index], **changes)
            self.changed.notify_all()

    def clear(self) -> None:
        with self.lock:
            self._generation += 1
            self.requests.clear()
            self.refused.clear()

    # -- routing ---------------------------------------------------------------------------

    @staticmethod
    def endpoint_of(method: str, host: str, path: str) -> str | None:
        route = route_of(method, host, path)
        return None if route is None else route.endpoint

    def answer(self, endpoint: str, request: RecordedRequest) -> Answer:
        route = route_of(request.method, request.host, request.path)
        if route is not None and route.protocol is not None:
            return self._model_request(request, route.protocol)
        handler = getattr(self, f"_{endpoint}")
        result: Answer = handler(request)
        return result

    # -- GitHub ----------------------------------------------------------------------------

    def _device_code(self, request: RecordedRequest) -> Answer:
        form = request.form or {}
        if not form.get("client_id"):
            return oauth_answer(request.headers, {"error": "unauthorized_client"})
        code = secrets.token_hex(20)
        with self.lock:
            self.device_codes.append(code)
            self._polls[code] = (0, form["client_id"])
        s = self.scenario
        value: dict[str, object] = {
            "device_code": code,
            "user_code": s.user_code,
            "verification_uri": s.verification_uri,
            "expires_in": s.expires_in,
        }
        if s.interval is not None:
            value["interval"] = s.interval
        return oauth_answer(request.headers, value)

    def _access_token(self, request: RecordedRequest) -> Answer:
        form = request.form or {}
        s = self.scenario

        def oauth(value: Mapping[str, object]) -> Answer:
            # github.com answers every poll with HTTP 200, errors included.
            return oauth_answer(request.headers, value)

        if form.get("grant_type") != DEVICE_CODE_GRANT_TYPE:
            return oauth({"error": "unsupported_grant_type"})
        code = form.get("device_code", "")
        client_id = form.get("client_id", "")
        with self.lock:
            if code not in self._polls:
                return oauth({"error": "incorrect_device_code"})
            count, issued_to = self._polls[code]
            if client_id != issued_to:
                # GitHub ties a device code to the app that asked for it.
                return oauth({"error": "incorrect_client_credentials"})
            self._polls[code] = (count + 1, issued_to)
            decision = self._decision
        interval = s.interval if s.interval is not None else 5
        if count < s.slow_down_polls:
            # slow_down adds 5 seconds and names the new interval.
            return oauth({"error": "slow_down", "interval": interval + 5 * (count + 1)})
        if count < s.slow_down_polls + s.pending_polls:
            return oauth({"error": "authorization_pending"})
        result = s.login_result if s.auto_approve else decision
        if result is None:
            return oauth({"error": "authorization_pending"})
        if result != "approved":
            return oauth(
                {
                    "error": result,
                    "error_description": f"emulated {result}",
                    "error_uri": "https://docs.github.com/developers/apps",
                }
            )
        with self.lock:
            # A device code is good for one token: of two polls at once, one gets it.
            if self._polls.pop(code, None) is None:
                return oauth({"error": "incorrect_device_code"})
            self._token_client = client_id
        return oauth(
            {"access_token": self.github_token, "token_type": "bearer", "scope": "read:user"}
        )

    def _github_auth_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        with self.lock:
            revoked = self._revoked_login
        return (
            scheme.lower() in ("token", "bearer")
            and secrets.compare_digest(value.encode(), self.github_token.encode())
            and not revoked
        )

    def _copilot_token(self, request: RecordedRequest) -> Answer:
        s = self.scenario
        presented = request.headers.get("authorization", "").partition(" ")[2]
        if presented.startswith(_PAT_PREFIXES):
            # A personal access token (classic or fine-grained) is never exchanged.
            return github_json(403, "Resource not accessible by personal access token")
        if not self._github_auth_ok(request):
            return github_json(401, "Bad credentials")
        with self.lock:
            client = self._token_client
        if s.strict("copilot_client_id") and client not in s.copilot_client_ids:
            # A token of an OAuth app GitHub has not enabled for Copilot (gh's, your own).
            return refused("copilot_client_id", client, github_json(404, "Not Found"))
        if "copilot_token" in s.quota_exceeded_on:
            return self._quota_exceeded()
        with self.lock:
            failure = self._exchange_failures.pop(0) if self._exchange_failures else None
        if failure is not None:
            return self._failure(failure)
        if s.entitlement is not None:
            title, message, url = _ENTITLEMENTS.get(s.entitlement, _SUPPORT)
            value: dict[str, object] = {
                "error_details": {
                    "url": url,
                    "message": message.format(login=s.account),
                    "title": title,
                    "notification_id": s.entitlement,
                },
                "message": "Resource not accessible by integration",
            }
            if s.entitlement in ("no_copilot_access", "not_signed_up"):
                value["can_signup_for_limited"] = True
            return json_answer(403, value)
        now = self.now()
        expires_at = int(now + s.session_lifetime)
        token = (
            f"tid={secrets.token_hex(16)};exp={expires_at};sku={s.sku};"
            f"proxy-ep=proxy.emulated:1:{secrets.token_hex(32)}"
        )
        with self.lock:
            self.session_tokens.append(token)
            self._valid_sessions[token] = expires_at
        value = {
            "token": token,
            "expires_at": expires_at,
            "endpoints": {"api": s.api_endpoint, "telemetry": "https://telemetry.invalid"},
            "sku": s.sku,
            "chat_enabled": True,
        }
        if s.refresh_in is not None:
            value["refresh_in"] = s.refresh_in
        return json_answer(200, value)

    def _user(self, request: RecordedRequest) -> Answer:
        if not self._github_auth_ok(request):
            return github_json(401, "Bad credentials")
        return json_answer(200, {"login": self.scenario.account, "id": 583231, "type": "User"})

    # -- usage and quota ---------------------------------------------------------------

    def _reset(self) -> datetime.datetime:
        """Quotas reset at midnight UTC on the first day of the next month."""
        now = datetime.datetime.fromtimestamp(self.now(), datetime.UTC)
        year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        return datetime.datetime(year, month, 1, tzinfo=datetime.UTC)

    def _quota_state(self) -> tuple[float, float, float]:
        """(entitlement, remaining, percent remaining) of the scripted quota."""
        entitlement = self.scenario.quota_entitlement
        with self.lock:
            remaining = entitlement - self._quota_used
        percent = max(0.0, remaining / entitlement * 100) if entitlement else 0.0
        return entitlement, remaining, percent

    def _exhausted(self) -> bool:
        _, remaining, _ = self._quota_state()
        return remaining <= 0 and not self.scenario.overage_permitted

    def _quota_headers(self) -> tuple[tuple[str, str], ...]:
        """What the service sends on inference answers: the account's quota snapshot and
        the usage rate-limit windows, each ``ent&ov&ovPerm&rem&rst`` URL-encoded."""
        s = self.scenario
        entitlement, remaining, percent = self._quota_state()
        reset = self._reset().strftime("%Y-%m-%dT%H:%M:%SZ")
        overage = max(0.0, -remaining)
        snapshot = urllib.parse.urlencode(
            {
                "ent": f"{entitlement:g}",
                "ov": f"{overage:.1f}",
                "ovPerm": "true" if s.overage_permitted else "false",
                "rem": f"{percent:.1f}",
                "rst": reset,
            }
        )
        name = "chat" if s.usage_plan == "free" else "premium_interactions"
        headers = [(f"x-quota-snapshot-{name}", snapshot)]
        with self.lock:
            left = dict(self._window_left)
        for window, spec in s.rate_windows.items():
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
            return self._reset()
        return datetime.datetime.fromtimestamp(at, datetime.UTC)

    def _rate_limited(self) -> Answer | None:
        """429 when a scripted rate-limit window is spent (the weekly one first)."""
        with self.lock:
            left = dict(self._window_left)
        for window in ("weekly", "session"):
            if window not in left or left[window] > 0:
                continue
            wait = max(1, int(self._window_resets(window).timestamp() - self.now()))
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
                headers=(*answer.headers, ("Retry-After", str(wait)), *self._quota_headers()),
            )
            return refused(f"{window}_window", f"{window} window spent", answer)
        return None

    def _quota_exceeded(self) -> Answer:
        return json_answer(
            402,
            {
                "error": {
                    "message": "You have exceeded your Copilot quota for this period.",
                    "code": "quota_exceeded",
                }
            },
            *self._quota_headers(),
        )

    def _copilot_user(self, request: RecordedRequest) -> Answer:
        if not self._github_auth_ok(request):
            return github_json(401, "Bad credentials")
        s = self.scenario
        if "copilot_user" in s.quota_exceeded_on:
            return self._quota_exceeded()
        entitlement, remaining, percent = self._quota_state()
        reset = self._reset()
        if s.usage_plan == "free":
            # Copilot Free's own shape (its SKU is ``free_limited_copilot``).
            return json_answer(
                200,
                {
                    "login": s.account,
                    "access_type_sku": "free_limited_copilot",
                    "copilot_plan": "free",
                    "chat_enabled": True,
                    "monthly_quotas": {"chat": entitlement, "completions": 2000},
                    "limited_user_quotas": {"chat": remaining, "completions": 2000},
                    "limited_user_reset_date": reset.strftime("%Y-%m-%d"),
                },
            )

        def snapshot(quota_id: str, **values: object) -> dict[str, object]:
            unlimited = {
                "entitlement": 0,
                "remaining": 0,
                "quota_remaining": 0.0,
                "percent_remaining": 100.0,
                "unlimited": True,
                "overage_count": 0,
                "overage_permitted": False,
            }
            return {**unlimited, **values, "quota_id": quota_id}

        value: dict[str, object] = {
            "login": s.account,
            "access_type_sku": "plus_monthly_subscriber_quota",
            "copilot_plan": "individual_pro",
            "chat_enabled": True,
            "assigned_date": "2025-01-15T10:00:00+00:00",
            "quota_reset_date": reset.strftime("%Y-%m-%d"),
            "quota_reset_date_utc": reset.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "quota_snapshots": {
                "chat": snapshot("chat"),
                "completions": snapshot("completions"),
                "premium_interactions": snapshot(
                    "premium_interactions",
                    entitlement=entitlement,
                    remaining=remaining,
                    quota_remaining=remaining,
                    percent_remaining=percent,
                    unlimited=False,
                    overage_count=max(0.0, -remaining),
                    overage_permitted=s.overage_permitted,
                ),
            },
        }
        if s.usage_plan == "student":
            # Copilot Student: an individual plan under the educational SKU (reports quoting
            # the answer: OmniRoute #12000 and the peers' fixtures, docs/EMULATOR.md).
            value["access_type_sku"] = "free_educational_quota"
            value["copilot_plan"] = "individual"
        if s.usage_plan in ("credits", "student"):
            value["token_based_billing"] = True
        return json_answer(200, value)

    def _failure(self, status: int) -> Answer:
        extra: tuple[tuple[str, str], ...] = ()
        if self.scenario.retry_after is not None:
            extra = (("Retry-After", self.scenario.retry_after),)
        if status == 429:
            return github_json(429, "API rate limit exceeded", *extra)
        return github_json(status, "emulated failure", *extra)

    # -- the Copilot API -------------------------------------------------------------------

    def _session_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        if secrets.compare_digest(value.encode(), self.github_token.encode()):
            # The Copilot CLI sends its app's GitHub token to the API itself, with no
            # exchange (issue 27): served when that app is enabled for Copilot.
            s = self.scenario
            with self.lock:
                client, revoked = self._token_client, self._revoked_login
            enabled = client in s.copilot_client_ids or not s.strict("copilot_client_id")
            return enabled and not revoked
        with self.lock:
            expires_at = self._valid_sessions.get(value)
        return expires_at is not None and self.now() < expires_at

    def _stale(self, request: RecordedRequest) -> bool:
        value = request.headers.get("authorization", "").partition(" ")[2]
        with self.lock:
            return value in self.session_tokens

    def _copilot_gate(self, request: RecordedRequest) -> Answer | None:
        """The checks every Copilot API request passes, in the service's order."""
        s, headers = self.scenario, request.headers
        if not self._session_ok(request):
            if request.host == ENTERPRISE_HOST and self._stale(request):
                # The enterprise host answers an expired or revoked session with a bare 403.
                return copilot_text(403, "forbidden")
            return copilot_text(401, "unauthorized: token expired")
        if s.strict("editor_version") and not headers.get("editor-version"):
            return refused(
                "editor_version",
                "no Editor-Version",
                copilot_text(400, "bad request: missing Editor-Version header for IDE auth"),
            )
        if s.strict("integration_id") and not headers.get("copilot-integration-id"):
            return refused(
                "integration_id",
                "no Copilot-Integration-Id",
                copilot_text(400, "bad request: missing required Copilot-Integration-Id header"),
            )
        if headers.get("copilot-integration-id", "").strip() in s.refused_integration_ids:
            # An organisation's policy that allows one Copilot client and not another.
            return copilot_text(403, "unauthorized: not authorized to use this Copilot feature")
        api_version = headers.get("x-github-api-version")
        if s.min_api_version is not None and api_version is not None:
            api_version = api_version.strip()
            if not _DATE.fullmatch(api_version) or api_version < s.min_api_version:
                return copilot_text(
                    466,
                    "bad request: the specified API version is no longer supported. "
                    "You may need to update your client to a newer version.",
                )
        floor = s.min_client_version
        if floor is not None and _version(headers.get("editor-version", "")) < _version(floor):
            return copilot_text(
                466,
                "bad request: the VS Code version you are using is no longer supported. "
                f"Please upgrade VS Code to version {floor}+.",
            )
        return None

    def _models(self, request: RecordedRequest) -> Answer:
        refusal = self._copilot_gate(request)
        if refusal is not None:
            return refusal
        if "models" in self.scenario.quota_exceeded_on:
            return self._quota_exceeded()
        with self.lock:
            failure = self._models_failures.pop(0) if self._models_failures else None
        if failure is not None:
            return self._failure(failure)
        models = [dict(m) for m in self.scenario.models]
        if self.scenario.auto_only_plan:
            # Auto-only plans get the whole catalogue, none of it in the picker (opencode
            # pull request #47261, editor-code-assistant/eca #601).
            for model in models:
                model["model_picker_enabled"] = False
        floor = self.scenario.deprecated_below
        if floor is not None and _version(request.headers.get("editor-version", "")) < _version(
            floor
        ):
            # Every entry, whatever else it says, carries the notice for a stale client.
            for model in models:
                listed = model.get("warning_messages")
                notes = list(listed) if isinstance(listed, list) else []
                model["warning_messages"] = [*notes, dict(_DEPRECATED_NOTICE)]
        return json_answer(200, {"data": models, "object": "list"})

    def _count_tokens(self, request: RecordedRequest) -> Answer:
        """Copilot does not serve Anthropic's token count (its router answers 404); lenient,
        an estimate in the API's shape, for tests of a client that needs one."""
        if self.scenario.strict("count_tokens"):
            return refused("count_tokens", request.path, copilot_text(404, "404 page not found"))
        gate = self._copilot_gate(request)
        if gate is not None:
            return gate
        return json_answer(200, {"input_tokens": max(1, len(request.body) // 4)})

    def _model_request(self, request: RecordedRequest, protocol: str) -> Answer:
        """A model request's answer, noting the model it named and that model's limits."""
        answer = self._inference(request, protocol)
        try:
            model = json.loads(request.body or b"{}").get("model")
        except (ValueError, RecursionError, AttributeError):
            model = None
        if not isinstance(model, str):
            return answer
        limits = self._limits.get(model, {})
        return dataclasses.replace(
            answer, notes=(("model", model), ("limits", MappingProxyType(limits)), *answer.notes)
        )

    def _inference(self, request: RecordedRequest, protocol: str) -> Answer:
        s = self.scenario
        refusal = self._copilot_gate(request)
        if refusal is not None:
            return refusal
        try:
            payload = json.loads(request.body or b"{}")
        except (ValueError, RecursionError):  # deeply nested JSON is no request either
            payload = None
        if not isinstance(payload, dict):
            return copilot_error(
                400, "the request body is not a JSON object", "invalid_request_body"
            )
        model = payload.get("model")
        picked = self._auto_only(model, protocol) if s.auto_only_plan else None
        if isinstance(picked, Answer):
            return picked
        if picked is not None:
            model = picked
        paths = self._served.get(model) if isinstance(model, str) else None
        if not isinstance(model, str) or paths is None:
            return refused("model", f"{model!r} not served", _model_not_supported())
        unserved = s.unserved_models.get(request.headers.get("copilot-integration-id", "").strip())
        if unserved is not None and (model in unserved or "*" in unserved):
            # An organisation whose policy lists a model to this client but does not serve
            # it to it: the same answer as for a model the account does not have.
            return refused("model", f"{model} not served to this client", _model_not_supported())
        floor = s.min_editor_version.get(model)
        if floor is not None and _version(request.headers.get("editor-version", "")) < _version(
            floor
        ):
            # Checked before the endpoint: the service answers this on any path.
            return copilot_error(
                400,
                f"model {model} is not supported in this VS Code version. "
                f"Please update it to version {floor} or newer",
                "model_not_supported_in_version",
            )
        path = PROTOCOL_PATHS[protocol]
        if s.strict("model_endpoint") and path not in paths:
            return refused(
                "model_endpoint",
                f"{model} on {path}",
                copilot_error(400, _wrong_endpoint(model, protocol), "unsupported_api_for_model"),
            )
        if s.strict("vision_header") and has_image(payload, protocol) and not request.vision:
            return refused(
                "vision_header",
                "image input without Copilot-Vision-Request",
                copilot_error(
                    400, "missing required Copilot-Vision-Request header for vision requests", ""
                ),
            )
        if protocol in s.quota_exceeded_on or self._exhausted():
            return self._quota_exceeded()
        limited = self._rate_limited()
        if limited is not None:
            return limited
        refusal = self._body_gate(request, payload, protocol, model)
        if refusal is not None:
            return refusal
        input_tokens, spent = self._cost(request, model)
        with self.lock:
            self._serial += 1
            serial = self._serial
            # Credits are used by what each answer costs; request quotas by one a request.
            credits = s.usage_plan in ("credits", "student")
            self._quota_used += spent if credits else 1
            for window, spec in s.rate_windows.items():
                self._window_left[window] -= spec.per_request
        exchange = read_request(
            payload, protocol, model, serial, s.tool_script, default_calls=s.tool_calls
        )
        exchange = dataclasses.replace(exchange, input_tokens=input_tokens)
        cost = round(spent * 1e9)
        whole, events = reply(exchange, s.stream_events, int(self.now()), cost)
        quota = self._quota_headers()
        if exchange.stream:
            headers = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
            answer = Answer(200, (*headers, *quota), events=events)
        else:
            answer = json_answer(200, whole, *quota)
        if picked is not None:
            # The record names the model Auto picked, as the answer does.
            limits = MappingProxyType(self._limits.get(picked, {}))
            answer = dataclasses.replace(answer, notes=(("model", picked), ("limits", limits)))
        return answer

    def _cost(self, request: RecordedRequest, model: str) -> tuple[int, float]:
        """(the prompt's tokens as the answer reports them, the answer's cost in credits)."""
        s = self.scenario
        if s.cost_model != "prices":
            return 1, s.request_cost
        # Tokens x the inventory's prices; a model listing none costs the flat amount.
        tokens = estimate_tokens(request.body)
        priced = price_cost(self._billing.get(model), tokens, s.stream_events, self.now())
        return tokens, s.request_cost if priced is None else priced

    def _auto_only(self, model: object, protocol: str) -> Answer | str | None:
        """On an Auto-only plan: the refusal of a named model, or the model Auto serves a
        Chat request without one (the chat default when it serves Chat Completions, else the
        first model that does; diegosouzapw/OmniRoute #12000: 200, naming it)."""
        if model is not None or protocol != "chat":
            detail = "a named model on an Auto-only plan" if model else "no model"
            return refused("auto_only", detail, _model_not_supported())
        chat = [m for m, paths in self._served.items() if "/chat/completions" in paths]
        for item in self.scenario.models:
            if item.get("is_chat_default") is True and item.get("id") in chat:
                return str(item["id"])
        return chat[0] if chat else None

    def _body_gate(
        self, request: RecordedRequest, payload: Mapping[str, Any], protocol: str, model: str
    ) -> Answer | None:
        """What the API layer refuses of a body before answering (docs/EMULATOR.md has the
        evidence for each rule): on Messages, betas it does not serve, a string ``system``
        and the rules of ``_rules``; on Responses, the tool shapes it does not take; on every
        protocol, an output cap above the model's limit."""
        s = self.scenario
        if protocol == "messages":
            unserved = unserved_betas(request.headers.get("anthropic-beta", ""))
            if s.strict("anthropic_beta") and unserved:
                return refused(
                    "anthropic_beta",
                    ", ".join(unserved),
                    copilot_error(
                        400,
                        f"unsupported beta header(s): {', '.join(unserved)}",
                        "invalid_request_error",
                        type="invalid_request_error",
                    ),
                )
            if s.strict("system_text") and isinstance(payload.get("system"), str):
                return refused(
                    "system_text",
                    "system is a string",
                    copilot_error(
                        400,
                        "system: Input should be a valid list",
                        "invalid_request_error",
                        type="invalid_request_error",
                    ),
                )
            rule = messages_refusal(payload, request.headers, s.strict)
        elif protocol == "responses":
            rule = responses_refusal(payload, s.strict)
        else:
            rule = None
        if rule is None and s.strict("output_limit"):
            limit = self._limits.get(model, {}).get("max_output_tokens")
            rule = output_cap_refusal(payload, protocol, model, limit)
        return None if rule is None else _enforced(rule)


def _model_not_supported() -> Answer:
    """The service's 400 for a model it does not serve this request (138 bytes)."""
    return copilot_error(
        400,
        "The requested model is not supported.",
        "model_not_supported",
        param="model",
        type="invalid_request_error",
    )


def _wrong_endpoint(model: str, protocol: str) -> str:
    """The service's words for a model asked on a path its entry does not list."""
    if protocol == "chat":
        return f'model "{model}" is not accessible via the /chat/completions endpoint'
    if protocol == "responses":
        return f"model {model} is not supported via Responses API."
    return "no model endpoints available given user constraints"


class _ClientGone(Exception):
    """The client closed the connection while the emulator was still answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm and the client's
    # delayed ACK each keep-alive answer would stall ~40 ms.
    disable_nagle_algorithm = True
    server: _Server
    _where: tuple[int, int] | None = None

    def log_message(self, format: str, *args: Any) -> None:
        # Silent: the emulator must not print anything, canaries included.
        return

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The server's Date follows its (possibly skewed) clock, like a real server would.
        return email.utils.formatdate(self.server.state.now(), usegmt=True)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        state = self.server.state
        split = urllib.parse.urlsplit(self.path)
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        betas = self.headers.get_all("anthropic-beta")
        if betas:
            # A list header sent on several lines means the same as one comma-joined line.
            headers["anthropic-beta"] = ",".join(betas)
        form: Mapping[str, str] | None = None
        kind = headers.get("content-type", "")
        if kind.startswith("application/x-www-form-urlencoded"):
            form = MappingProxyType(dict(urllib.parse.parse_qsl(body.decode("latin-1"))))
        elif host == GITHUB_HOST and kind.startswith("application/json"):
            # github.com's OAuth endpoints take a JSON body as well as a form.
            try:
                value = json.loads(body or b"{}")
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                form = MappingProxyType({str(k): str(v) for k, v in value.items()})
        endpoint = state.endpoint_of(self.command, host, split.path)
        record = RecordedRequest(
            method=self.command,
            host=host,
            path=split.path,
            endpoint=endpoint or "",
            headers=MappingProxyType(headers),
            form=form,
            body=body,
            at=time.monotonic(),
            request_id=github_request_id(),
        )
        self._where = state.remember(record)
        if endpoint is None:
            if host in COPILOT_HOSTS:
                # The Copilot API's Go router: plain text for an unknown path.
                self._answer(copilot_text(404, "404 page not found"), record)
            else:
                self._answer(github_json(404, "Not Found"), record)
            return
        scenario = state.scenario
        delay = scenario.slow.get(endpoint)
        if delay:
            self._pause(delay)
        raw = scenario.answers.get(endpoint)
        if raw is not None:
            self._answer(_raw(raw), record)
        elif endpoint in scenario.malformed:
            self._answer(Answer(200, (("Content-Type", "application/json"),), _MALFORMED), record)
        elif endpoint in scenario.oversized:
            self._send_unsized(_LARGE_OVER if endpoint == "models" else _SMALL_OVER, record)
        else:
            drip = scenario.drip.get(endpoint)
            self._answer(state.answer(endpoint, record), record, drip)

    def _start(
        self,
        status: int,
        headers: tuple[tuple[str, str], ...],
        record: RecordedRequest,
        notes: tuple[tuple[str, object], ...] = (),
    ) -> None:
        self.send_response(status)
        named = {name.lower() for name, _ in headers}
        for name, value in headers:
            self.send_header(name, value)
        # Every GitHub and Copilot answer carries GitHub's request id (clients show it and
        # treat an error without one as coming from a proxy); Copilot hosts add their own.
        if "x-github-request-id" not in named:
            self.send_header("X-GitHub-Request-Id", record.request_id)
        if record.host in COPILOT_HOSTS and "x-request-id" not in named:
            self.send_header("X-Request-Id", copilot_request_id())
        if self._where is not None:
            self.server.state.update(self._where, status=status, **dict(notes))

    def _answer(self, answer: Answer, record: RecordedRequest, drip: float | None = None) -> None:
        self._start(answer.status, answer.headers, record, answer.notes)
        if answer.events is None:
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self._write(answer.body, drip)
            return
        # A stream: chunked, each event flushed on its own as the real server sends them.
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        scenario = self.server.state.scenario
        pause, cut = scenario.stream_pause, scenario.stream_cut
        for index, event in enumerate(answer.events):
            if index == cut:
                # Dropped mid-answer: no terminating chunk, and the connection goes.
                self.wfile.flush()
                self.close_connection = True
                return
            if index and pause:
                self._pause(pause)
            if drip:
                self._write(event, drip, chunked=True)
            else:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def _write(self, data: bytes, drip: float | None, *, chunked: bool = False) -> None:
        if not drip:
            self.wfile.write(data)
            return
        for index in range(len(data)):
            if index:
                self._pause(drip)
            byte = data[index : index + 1]
            self.wfile.write(b"1\r\n%s\r\n" % byte if chunked else byte)

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, noticing a client that hangs up meanwhile (a cancelled stream
        is seen at once, not at the next write)."""
        deadline = time.monotonic() + seconds
        stopping = self.server.state.stopping
        # Not select(): it fails on a descriptor numbered 1,024 or above, which a load test
        # with many connections open reaches.
        with _Watch() as watch:
            watch.register(self.connection, selectors.EVENT_READ)
            self._watch(watch, deadline, stopping)

    def _watch(
        self, watch: selectors.BaseSelector, deadline: float, stopping: threading.Event
    ) -> None:
        while (left := deadline - time.monotonic()) > 0:
            if stopping.is_set():
                raise _ClientGone
            readable = watch.select(min(left, 0.1))
            if readable:
                try:
                    waiting = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _ClientGone from None
                if not waiting:
                    raise _ClientGone
                # A pipelined request is waiting: nothing to watch until the answer is out.
                time.sleep(max(0.0, deadline - time.monotonic()))
                return

    def _send_unsized(self, size: int, record: RecordedRequest) -> None:
        # No Content-Length: the client must stop reading at its own cap.
        self._start(200, (("Content-Type", "application/json"),), record)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = b"[" + b"0," * 32767 + b"0"
        sent = 0
        while sent < size:
            self.wfile.write(chunk)
            sent += len(chunk)

    def _guarded(self) -> None:
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError, _ClientGone):
            # The client gave up (a timeout test, a size cap, a cancelled stream).
            self.close_connection = True
            if self._where is not None:
                self.server.state.update(self._where, disconnected=True)
        finally:
            self._where = None  # the next request on this keep-alive connection

    do_GET = _guarded
    do_POST = _guarded
    do_PUT = _guarded
    do_DELETE = _guarded


def _raw(raw: RawAnswer) -> Answer:
    return Answer(raw.status, tuple(raw.headers), raw.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Tests fire dozens of concurrent requests; the stdlib default backlog of 5 would reset
    # some of them before a thread accepts them.
    request_queue_size = 256
    # Requests in flight when the emulator stops are abandoned, not waited for.
    block_on_close = False

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a timeout test, a cancelled task) is part of
        # what the emulator is for, not an error worth a traceback on the test's stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(state: EmulatorState) -> _Server:
    return _Server(state)
