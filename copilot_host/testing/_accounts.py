"""Accounts and tokens: the device flow, the Copilot token exchange, ``/user`` and
``/copilot_internal/user``, and the checks every Copilot API request passes."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping

from ._answers import (
    DEVICE_CODE_GRANT_TYPE,
    Answer,
    copilot_text,
    github_json,
    json_answer,
    oauth_answer,
    refused,
)
from ._groups import VSCODE_CLIENT_ID
from ._record import RecordedRequest
from ._scenario import Scenario
from ._state import UsageState, editor_version

__all__ = ["ENTERPRISE_HOST", "Accounts"]

# The one Copilot host seen answering a stale session with a bare 403 instead of 401.
ENTERPRISE_HOST = "api.enterprise.githubcopilot.com"
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


class Accounts(UsageState):
    """Who is logged in with which app, and the sessions issued to them."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.github_token = "gho_" + secrets.token_hex(18)
        self.device_codes: list[str] = []
        self.session_tokens: list[str] = []
        # device code -> (polls so far, the OAuth app that asked for it)
        self._polls: dict[str, tuple[int, str]] = {}
        self._decision: str | None = None
        self._revoked_login = scenario.revoked
        # The OAuth app the GitHub token was issued for: VS Code's until a login says else.
        self._token_client = VSCODE_CLIENT_ID
        self._valid_sessions: dict[str, float] = {}
        self._exchange_failures = list(scenario.exchange_failures)

    def decide(self, decision: str) -> None:
        with self.lock:
            self._decision = decision

    def revoke_login(self) -> None:
        with self.lock:
            self._revoked_login = True

    def revoke_sessions(self) -> None:
        with self.lock:
            self._valid_sessions.clear()

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
        if floor is not None and editor_version(headers.get("editor-version", "")) < editor_version(
            floor
        ):
            return copilot_text(
                466,
                "bad request: the VS Code version you are using is no longer supported. "
                f"Please upgrade VS Code to version {floor}+.",
            )
        return None
