"""The plan's quotas as people read them: ``usage``'s table and ``usage --report``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from copilot_host import CopilotUsage, Quota

__all__ = ["left_fraction", "plan_head", "quota_row", "window_row"]

_BAR = 20


def _amount(value: float | None) -> str:
    return "?" if value is None else f"{value:,.2f}".rstrip("0").rstrip(".")


def left_fraction(quota: Quota) -> float | None:
    if quota.percent_remaining is not None:
        return quota.percent_remaining / 100
    if quota.entitlement and quota.remaining is not None:
        return quota.remaining / quota.entitlement
    return None


def _bar(quota: Quota) -> str:
    left = left_fraction(quota)
    if quota.unlimited or left is None:
        return ""
    used = round((1 - max(0.0, min(1.0, left))) * _BAR)
    return "[" + "#" * used + "." * (_BAR - used) + "]"


def quota_row(quota: Quota, unit: str) -> tuple[str, str, str, str]:
    from copilot_host._internal import clean

    name = clean(quota.id)
    if quota.unlimited:
        return (name, "", "unlimited", "")
    left = left_fraction(quota)
    shown = f"{_amount(quota.used)} used, {_amount(quota.remaining)} left of "
    shown += f"{_amount(quota.entitlement)} {unit}"
    percent = "" if left is None else f"{max(0.0, left) * 100:.1f}% left"
    if quota.overage_in_use:
        over = "" if not quota.overage_count else f" {_amount(quota.overage_count)} {unit}"
        percent += f" (overage in use{over})"
    elif not quota.usable:
        percent += " (used up; no overage on this plan)"
    return (name, _bar(quota), shown, percent.strip())


def window_row(window: Quota) -> tuple[str, str, str, str]:
    shown = "" if window.entitlement is None else f"entitlement {_amount(window.entitlement)}"
    if window.reset_at is not None:
        shown += f"{'; ' if shown else ''}resets {window.reset_at:%Y-%m-%d %H:%M} UTC"
    left = window.percent_remaining
    percent = "" if left is None else f"{left:.1f}% left"
    return (f"{window.id} window", _bar(window), shown, percent)


def plan_head(found: CopilotUsage) -> str:
    """``octocat: plan individual_pro, billed in AI credits; quotas reset on ...``."""
    from copilot_host._internal import clean

    billing = "AI credits" if found.unit == "credits" else "premium requests"
    head = f"{clean(found.login)}: plan {clean(found.plan or 'unknown')}, billed in {billing}"
    if found.reset_at is not None:
        head += f"; quotas reset on {found.reset_at:%Y-%m-%d} (UTC)"
    return head
