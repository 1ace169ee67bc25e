"""The account's plan and quotas: ``GET /copilot_internal/user`` (sans-IO).

The fields are the ones GitHub's own clients read (docs/WIRE.md, "Usage"): a
``quota_snapshots`` object of snapshots (``premium_interactions``, ``chat``,
``completions``, and any other) on paid plans; ``monthly_quotas`` (the entitlement) and
``limited_user_quotas`` (what remains) on Copilot Free. Numbers are fractions or negative
in real answers; unknown fields are ignored; a malformed answer is a ``ResponseError``.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping
from datetime import datetime

from .._errors import EntitlementError, ResponseError
from .._safety._secret import Secret
from .._safety._text import clean
from .._usage import CopilotUsage, Quota
from ._headers import EditorIdentity, exchange_headers
from ._status import (
    parse_instant,
    policy_error,
    quota_exceeded_error,
    rate_limit_error,
    status_error,
    stored_login_refused,
)
from ._urls import USAGE_URL
from ._wire import WireRequest, WireResponse, json_object, opt_number, reads_response

__all__ = ["build_usage_request", "parse_rate_windows", "parse_usage"]

WHAT = "the Copilot usage lookup"
_MAX_QUOTAS = 32
_MAX_ID = 64


# The plans that may use only Auto model selection since 2026-06-24 (GitHub's changelog
# "Changes to model selection for Free and Student plans"), as copilot_internal/user names
# them: `access_type_sku` `free_limited_copilot` on Copilot Free (github/gh-aw #46531,
# reported), `free_educational_quota` on Student (diegosouzapw/OmniRoute #12000,
# reported), and `copilot_plan` `free`. docs/WIRE.md, "Plans that can use only Auto".
AUTO_ONLY_SKUS = frozenset({"free_limited_copilot", "free_educational_quota"})
AUTO_ONLY_PLANS = frozenset({"free"})


def build_usage_request(github_token: Secret, editor: EditorIdentity) -> WireRequest:
    """The GitHub token goes only here and to the exchange, with the exchange's headers
    (its API version included): api.github.com, never the inference origin."""
    headers = exchange_headers(editor)
    headers["Authorization"] = f"token {github_token.reveal()}"
    return WireRequest("GET", USAGE_URL, WHAT, tuple(headers.items()), retry=True)


def _flag(obj: Mapping[str, object], key: str) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ResponseError(f"{WHAT} answered with a malformed '{key}' (not true or false)")
    return value


def _quota_id(key: object) -> str:
    text = clean(key, limit=_MAX_ID) if isinstance(key, str) else ""
    if not text:
        raise ResponseError(f"{WHAT} answered with a quota without a usable name")
    return text


def _quota(
    quota_id: str,
    entitlement: float | None,
    remaining: float | None,
    percent: float | None,
    *,
    unlimited: bool,
    overage: bool,
    overage_count: float | None = None,
) -> Quota:
    used = (
        entitlement - remaining
        if entitlement is not None and remaining is not None and not unlimited
        else None
    )
    return Quota(quota_id, entitlement, remaining, used, percent, unlimited, overage, overage_count)


def _snapshot(key: str, value: object) -> Quota:
    if not isinstance(value, dict):
        raise ResponseError(f"{WHAT} answered with a quota '{key}' that is not an object")
    remaining = opt_number(value, "remaining", WHAT)
    if remaining is None:
        remaining = opt_number(value, "quota_remaining", WHAT)
    return _quota(
        _quota_id(key),
        opt_number(value, "entitlement", WHAT),
        remaining,
        opt_number(value, "percent_remaining", WHAT),
        unlimited=_flag(value, "unlimited"),
        overage=_flag(value, "overage_permitted"),
        overage_count=opt_number(value, "overage_count", WHAT),
    )


def _free_quotas(monthly: object, left: object) -> list[Quota]:
    """Copilot Free: ``monthly_quotas`` is the entitlement, ``limited_user_quotas`` what
    remains, both keyed by quota id."""
    entitlements = monthly if isinstance(monthly, dict) else {}
    remaining = left if isinstance(left, dict) else {}
    if (monthly is not None and not isinstance(monthly, dict)) or (
        left is not None and not isinstance(left, dict)
    ):
        raise ResponseError(f"{WHAT} answered with malformed free-plan quotas")
    quotas: list[Quota] = []
    for key in list(dict.fromkeys([*entitlements, *remaining]))[:_MAX_QUOTAS]:
        entitlement = opt_number(entitlements, key, WHAT)
        rest = opt_number(remaining, key, WHAT)
        percent = (
            max(0.0, min(100.0, rest / entitlement * 100))
            if entitlement and rest is not None
            else None
        )
        quotas.append(
            _quota(_quota_id(key), entitlement, rest, percent, unlimited=False, overage=False)
        )
    return quotas


_WINDOWS = ("session", "weekly")


def _header_number(fields: Mapping[str, list[str]], key: str) -> float | None:
    try:
        value = float(fields.get(key, [""])[0])
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_rate_windows(headers: Mapping[str, str]) -> tuple[Quota, ...]:
    """The usage rate-limit windows an answer reports (``x-usage-ratelimit-session`` and
    ``-weekly``, each ``ent=..&rem=<percent left>&rst=..``, as VS Code's
    ``chatQuotaService.ts`` reads them). A value that does not parse is left out: these
    headers only inform, they never fail a lookup."""
    windows: list[Quota] = []
    for window in _WINDOWS:
        raw = headers.get(f"x-usage-ratelimit-{window}")
        if raw is None:
            continue
        fields = urllib.parse.parse_qs(raw[:1024])
        percent = _header_number(fields, "rem")
        entitlement = _header_number(fields, "ent")
        if percent is None and entitlement is None:
            continue
        if percent is not None:
            percent = max(0.0, min(100.0, percent))
        reset = parse_instant(fields.get("rst", [""])[0])
        windows.append(
            Quota(window, entitlement, None, None, percent, False, False, reset_at=reset)
        )
    return tuple(windows)


def _reset(body: Mapping[str, object]) -> datetime | None:
    for key in ("quota_reset_date_utc", "quota_reset_date", "limited_user_reset_date"):
        when = parse_instant(body.get(key))
        if when is not None:
            return when
    return None


@reads_response
def parse_usage(response: WireResponse, login: str) -> CopilotUsage:
    """The account's usage; ``login`` names the account when the answer does not."""
    if response.status == 401:
        raise stored_login_refused()
    quota = quota_exceeded_error(response, WHAT)
    if quota is not None:
        raise quota
    limited = rate_limit_error(response, WHAT)
    if limited is not None:
        raise limited
    refused = policy_error(response, WHAT)
    if refused is not None:
        raise refused
    if response.status in (403, 404):
        # api.github.com answers an endpoint a credential may not use with 403 or 404: an
        # OAuth app GitHub has not opened this endpoint to, or an account without Copilot.
        raise EntitlementError(
            f"{WHAT} was refused (HTTP {response.status}): GitHub does not show this "
            "login's Copilot usage to this client; see https://github.com/settings/copilot",
            code="usage_unavailable",
        )
    if response.status != 200:
        raise status_error(response, WHAT)
    body = json_object(response, WHAT)
    plan = body.get("copilot_plan")
    if plan is not None and not isinstance(plan, str):
        raise ResponseError(f"{WHAT} answered with a malformed 'copilot_plan'")
    named = body.get("login")
    shown = clean(named, limit=39) if isinstance(named, str) and named else login
    snapshots = body.get("quota_snapshots")
    quotas: list[Quota] = []
    if snapshots is not None:
        if not isinstance(snapshots, dict):
            raise ResponseError(f"{WHAT} answered with 'quota_snapshots' that is not an object")
        quotas = [_snapshot(key, value) for key, value in list(snapshots.items())[:_MAX_QUOTAS]]
    if not quotas:
        quotas = _free_quotas(body.get("monthly_quotas"), body.get("limited_user_quotas"))
    sku = body.get("access_type_sku")
    sku = clean(sku, limit=64) or None if isinstance(sku, str) else None
    shown_plan = clean(plan, limit=64) or None if isinstance(plan, str) else None
    return CopilotUsage(
        login=shown,
        plan=shown_plan,
        unit="credits" if _flag(body, "token_based_billing") else "requests",
        reset_at=_reset(body),
        quotas=tuple(quotas),
        sku=sku,
        auto_only=sku in AUTO_ONLY_SKUS or shown_plan in AUTO_ONLY_PLANS,
        rate_windows=parse_rate_windows(response.headers),
    )
