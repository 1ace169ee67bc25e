"""What the account has used of its Copilot quotas: plain frozen values, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["CopilotUsage", "Quota", "UsageUnit"]

UsageUnit = Literal["requests", "credits"]


@dataclass(frozen=True, slots=True)
class Quota:
    """One quota snapshot (``premium_interactions``, ``chat``, ``completions``, ...).

    Numbers are as the service reports them: fractions are common, and ``remaining`` goes
    negative once overage is used. ``used`` is ``entitlement - remaining`` when both are
    known and the quota is not unlimited, else None.
    """

    id: str
    entitlement: float | None
    remaining: float | None
    used: float | None
    percent_remaining: float | None
    unlimited: bool
    overage_permitted: bool


@dataclass(frozen=True, slots=True)
class CopilotUsage:
    """The account's plan and quotas, as ``copilot-host usage`` shows them.

    ``unit`` is ``"credits"`` on usage-billed plans (AI credits) and ``"requests"`` on
    plans still billed by premium request; ``reset_at`` (aware, UTC) is when the quotas
    reset, None when the service did not say.
    """

    login: str
    plan: str | None
    unit: UsageUnit
    reset_at: datetime | None
    quotas: tuple[Quota, ...]
