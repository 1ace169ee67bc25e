"""Accounts and tokens: who logged in with which app and the sessions issued to them; the
handlers of the device flow, the Copilot token exchange, ``/user`` and
``/copilot_internal/user``; and the checks every Copilot API request passes."""

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
from ._groups import COPILOT_CLI_CLIENT_ID, VSCODE_CLIENT_ID
from ._quota import Quota
from ._record import RecordedRequest
from ._state import EmulatorState, editor_version

__all__ = [
    "CLI_EDITOR",
    "ENTERPRISE_HOST",
    "Logins",
    "access_token",
    "copilot_gate",
    "copilot_token",
    "copilot_user",
    "device_code",
    "failure",
    "user",
]

# The one Copilot host seen answering a stale session with a bare 403 instead of 401.
ENTERPRISE_HOST = "api.enterprise.githubcopilot.com"
# How the Copilot CLI's Editor-Version starts (``copilot/1.0.102``).
CLI_EDITOR = "copilot/"
# Prefixes GitHub gives personal access tokens (classic and fine-grained).
_PAT_PREFIXES = ("ghp_", "github_pat_")
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
# The integrator each OAuth app's sessions are served as (assumed beyond VS Code's, whose
# "vscode-chat" the houston report shows; docs/EMULATOR.md).
_INTEGRATORS = {VSCODE_CLIENT_ID: "vscode-chat", COPILOT_CLI_CLIENT_ID: "copilot-developer-cli"}
_SUPPORT = (
    "Contact Support",
    "Contact Support. You are currently logged in as {login}.",
    "https://support.github.com",
)


class Logins:
    """Who is logged in with which app, and the sessions issued to them
    (``state.part(Logins)``)."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state
        self.github_token = "gho_" + secrets.token_hex(18)
        self.device_codes: list[str] = []
        self.session_tokens: list[str] = []
        # device code -> (polls so far, the OAuth app that asked for it)
        self.polls: dict[str, tuple[int, str]] = {}
        self.decision: str | None = None
        self.revoked = state.scenario.session.revoked
        # The OAuth app the GitHub token was issued for: VS Code's until a login says else.
        self.token_client = VSCODE_CLIENT_ID
        self.valid_sessions: dict[str, float] = {}
        self.exchange_failures = list(state.scenario.faults.exchange_failures)

    def decide(self, decision: str) -> None:
        with self._state.lock:
            self.decision = decision

    def revoke_login(self) -> None:
        with self._state.lock:
            self.revoked = True

    def revoke_sessions(self) -> None:
        with self._state.lock:
            self.valid_sessions.clear()

    def github_auth_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        with self._state.lock:
            revoked = self.revoked
        return (
            scheme.lower() in ("token", "bearer")
            and secrets.compare_digest(value.encode(), self.github_token.encode())
            and not revoked
        )

    def session_ok(self, request: RecordedRequest) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        if secrets.compare_digest(value.encode(), self.github_token.encode()):
            # The Copilot CLI sends its app's GitHub token to the API itself, with no
            # exchange (issue 27): served when that app is enabled for Copilot.
            s = self._state.scenario
            with self._state.lock:
                client, revoked = self.token_client, self.revoked
            enabled = client in s.session.copilot_client_ids or not s.strict("copilot_client_id")
            return enabled and not revoked
        with self._state.lock:
            expires_at = self.valid_sessions.get(value)
        return expires_at is not None and self._state.now() < expires_at

    def integrator(self, request: RecordedRequest) -> str:
        """The integrator a request is served as: the OAuth app its token was minted for,
        whatever ``Copilot-Integration-Id`` says (reported: the jcode module in
        docs/EMULATOR.md). A GitHub token sent as it is goes to the language server's."""
        value = request.headers.get("authorization", "").partition(" ")[2]
        if secrets.compare_digest(value.encode(), self.github_token.encode()):
            return "copilot-language-server"
        with self._state.lock:
            client = self.token_client
        return _INTEGRATORS.get(client, client)

    def stale(self, request: RecordedRequest) -> bool:
        """Whether the request presents a session this emulator issued (now expired or
        revoked: ``session_ok`` said no)."""
        value = request.headers.get("authorization", "").partition(" ")[2]
        with self._state.lock:
            return value in self.session_tokens


# -- GitHub ------------------------------------------------------------------------------


def device_code(state: EmulatorState, request: RecordedRequest) -> Answer:
    form = request.form or {}
    if not form.get("client_id"):
        return oauth_answer(request.headers, {"error": "unauthorized_client"})
    logins = state.part(Logins)
    code = secrets.token_hex(20)
    with state.lock:
        logins.device_codes.append(code)
        logins.polls[code] = (0, form["client_id"])
    flow = state.scenario.login
    value: dict[str, object] = {
        "device_code": code,
        "user_code": flow.user_code,
        "verification_uri": flow.verification_uri,
        "expires_in": flow.expires_in,
    }
    if flow.interval is not None:
        value["interval"] = flow.interval
    return oauth_answer(request.headers, value)


def access_token(state: EmulatorState, request: RecordedRequest) -> Answer:
    form = request.form or {}
    flow = state.scenario.login
    logins = state.part(Logins)

    def oauth(value: Mapping[str, object]) -> Answer:
        # github.com answers every poll with HTTP 200, errors included.
        return oauth_answer(request.headers, value)

    if form.get("grant_type") != DEVICE_CODE_GRANT_TYPE:
        return oauth({"error": "unsupported_grant_type"})
    code = form.get("device_code", "")
    client_id = form.get("client_id", "")
    with state.lock:
        if code not in logins.polls:
            return oauth({"error": "incorrect_device_code"})
        count, issued_to = logins.polls[code]
        if client_id != issued_to:
            # GitHub ties a device code to the app that asked for it.
            return oauth({"error": "incorrect_client_credentials"})
        logins.polls[code] = (count + 1, issued_to)
        decision = logins.decision
    interval = flow.interval if flow.interval is not None else 5
    if count < flow.slow_down_polls:
        # slow_down adds 5 seconds and names the new interval.
        return oauth({"error": "slow_down", "interval": interval + 5 * (count + 1)})
    if count < flow.slow_down_polls + flow.pending_polls:
        return oauth({"error": "authorization_pending"})
    result = flow.login_result if flow.auto_approve else decision
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
    with state.lock:
        # A device code is good for one token: of two polls at once, one gets it.
        if logins.polls.pop(code, None) is None:
            return oauth({"error": "incorrect_device_code"})
        logins.token_client = client_id
    return oauth(
        {"access_token": logins.github_token, "token_type": "bearer", "scope": "read:user"}
    )


def copilot_token(state: EmulatorState, request: RecordedRequest) -> Answer:
    s = state.scenario
    logins = state.part(Logins)
    presented = request.headers.get("authorization", "").partition(" ")[2]
    if presented.startswith(_PAT_PREFIXES):
        # A personal access token (classic or fine-grained) is never exchanged.
        return github_json(403, "Resource not accessible by personal access token")
    if not logins.github_auth_ok(request):
        return github_json(401, "Bad credentials")
    with state.lock:
        client = logins.token_client
    if s.strict("copilot_client_id") and client not in s.session.copilot_client_ids:
        # A token of an OAuth app GitHub has not enabled for Copilot (gh's, your own).
        return refused("copilot_client_id", client, github_json(404, "Not Found"))
    if "copilot_token" in s.usage.quota_exceeded_on:
        return state.part(Quota).exceeded()
    with state.lock:
        failed = logins.exchange_failures.pop(0) if logins.exchange_failures else None
    if failed is not None:
        return failure(state, failed)
    session = s.session
    if session.entitlement is not None:
        title, message, url = _ENTITLEMENTS.get(session.entitlement, _SUPPORT)
        value: dict[str, object] = {
            "error_details": {
                "url": url,
                "message": message.format(login=s.login.account),
                "title": title,
                "notification_id": session.entitlement,
            },
            "message": "Resource not accessible by integration",
        }
        if session.entitlement in ("no_copilot_access", "not_signed_up"):
            value["can_signup_for_limited"] = True
        return json_answer(403, value)
    now = state.now()
    expires_at = int(now + session.session_lifetime)
    token = (
        f"tid={secrets.token_hex(16)};exp={expires_at};sku={s.session_sku};"
        f"proxy-ep=proxy.emulated:1:{secrets.token_hex(32)}"
    )
    with state.lock:
        logins.session_tokens.append(token)
        logins.valid_sessions[token] = expires_at
    value = {
        "token": token,
        "expires_at": expires_at,
        "endpoints": {"api": session.api_endpoint, "telemetry": "https://telemetry.invalid"},
        "sku": s.session_sku,
        "chat_enabled": session.chat_enabled,
    }
    if session.refresh_in is not None:
        value["refresh_in"] = session.refresh_in
    # The organisations and enterprises that give the seat (an individual's answer: none).
    if session.organization_list:
        value["organization_list"] = list(session.organization_list)
    if session.enterprise_list:
        value["enterprise_list"] = list(session.enterprise_list)
    return json_answer(200, value)


def user(state: EmulatorState, request: RecordedRequest) -> Answer:
    if not state.part(Logins).github_auth_ok(request):
        return github_json(401, "Bad credentials")
    return json_answer(200, {"login": state.scenario.login.account, "id": 583231, "type": "User"})


def copilot_user(state: EmulatorState, request: RecordedRequest) -> Answer:
    if not state.part(Logins).github_auth_ok(request):
        return github_json(401, "Bad credentials")
    s = state.scenario
    usage, quota = s.usage, state.part(Quota)
    if "copilot_user" in usage.quota_exceeded_on:
        return quota.exceeded()
    entitlement, remaining, percent = quota.left()
    reset = quota.reset()
    if usage.usage_plan == "free":
        # Copilot Free's own shape (its SKU is ``free_limited_copilot``).
        return json_answer(
            200,
            {
                "login": s.login.account,
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
        "login": s.login.account,
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
                overage_permitted=usage.overage_permitted,
            ),
        },
    }
    if usage.usage_plan == "student":
        # Copilot Student: an individual plan under the educational SKU (reports quoting
        # the answer: OmniRoute #12000 and the peers' fixtures, docs/EMULATOR.md).
        value["access_type_sku"] = "free_educational_quota"
        value["copilot_plan"] = "individual"
    if usage.usage_plan in ("credits", "student"):
        value["token_based_billing"] = True
    return json_answer(200, value)


def failure(state: EmulatorState, status: int) -> Answer:
    """A scripted failure of the exchange or ``/models`` (``Faults.exchange_failures``,
    ``models_failures``), with ``Faults.retry_after`` as its ``Retry-After``."""
    retry_after = state.scenario.faults.retry_after
    extra: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        extra = (("Retry-After", retry_after),)
    if status == 429:
        return github_json(429, "API rate limit exceeded", *extra)
    return github_json(status, "emulated failure", *extra)


# -- the Copilot API -----------------------------------------------------------------------


def copilot_gate(state: EmulatorState, request: RecordedRequest) -> Answer | None:
    """The checks every Copilot API request passes, in the service's order."""
    s, headers = state.scenario, request.headers
    inventory = s.inventory
    logins = state.part(Logins)
    if not logins.session_ok(request):
        if request.host == ENTERPRISE_HOST and logins.stale(request):
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
    if headers.get("copilot-integration-id", "").strip() in inventory.refused_integration_ids:
        # An organisation's policy that allows one Copilot client and not another.
        return copilot_text(403, "unauthorized: not authorized to use this Copilot feature")
    api_version = headers.get("x-github-api-version")
    if inventory.min_api_version is not None and api_version is not None:
        api_version = api_version.strip()
        if not _DATE.fullmatch(api_version) or api_version < inventory.min_api_version:
            return copilot_text(
                466,
                "bad request: the specified API version is no longer supported. "
                "You may need to update your client to a newer version.",
            )
    editor = headers.get("editor-version", "")
    if editor.startswith(CLI_EDITOR):
        # The Copilot CLI's identity is floored on its own version, not VS Code's
        # (assumed: the status and wording are VS Code's, docs/EMULATOR.md).
        floor, client = inventory.min_cli_version, "Copilot CLI"
    else:
        floor, client = inventory.min_client_version, "VS Code"
    if floor is not None and editor_version(editor) < editor_version(floor):
        return copilot_text(
            466,
            f"bad request: the {client} version you are using is no longer supported. "
            f"Please upgrade {client} to version {floor}+.",
        )
    return None
