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

    ``overage_permitted`` says whether the plan keeps serving once the quota is used up;
    ``overage_count`` is how much overage is used, as the answer reports it (None when it
    does not). For a rate-limit window (``CopilotUsage.rate_windows``) ``id`` is the
    window (``session``, ``weekly``), only ``entitlement`` and ``percent_remaining`` are
    known, and ``reset_at`` is when it resets.
    """

    id: str
    entitlement: float | None
    remaining: float | None
    used: float | None
    percent_remaining: float | None
    unlimited: bool
    overage_permitted: bool
    overage_count: float | None = None
    reset_at: datetime | None = None

    @property
    def overage_in_use(self) -> bool:
        """True once the quota is past its entitlement (``remaining`` negative or an
        ``overage_count`` above 0)."""
        if self.unlimited:
            return False
        negative = self.remaining is not None and self.remaining < 0
        return negative or (self.overage_count is not None and self.overage_count > 0)

    @property
    def usable(self) -> bool:
        """False only for a used-up quota whose plan permits no overage."""
        spent = self.remaining is not None and self.remaining <= 0
        return self.unlimited or self.overage_permitted or not spent


@dataclass(frozen=True, slots=True)
class CopilotUsage:
    """The account's plan and quotas, as ``copilot-host usage`` shows them.

    ``unit`` is ``"credits"`` on usage-billed plans (AI credits) and ``"requests"`` on
    plans still billed by premium request; ``reset_at`` (aware, UTC) is when the quotas
    reset, None when the service did not say.

    ``rate_windows`` are the session and weekly rate-limit windows (``x-usage-ratelimit-*``)
    as this process saw them on the usage answer itself; nothing is kept between processes
    (docs/WIRE.md, "Usage").

    ``sku`` is the answer's ``access_type_sku`` (None when absent). ``auto_only`` is True
    for the plans that may use only Auto model selection since 2026-06-24 (Copilot Free,
    ``free_limited_copilot``, and Student, ``free_educational_quota``; docs/WIRE.md,
    "Plans that can use only Auto"): requests that name a model are refused for them, and
    the model ``auto`` (``github-copilot/auto``) serves them.
    """

    login: str
    plan: str | None
    unit: UsageUnit
    reset_at: datetime | None
    quotas: tuple[Quota, ...]
    sku: str | None = None
    auto_only: bool = False
    rate_windows: tuple[Quota, ...] = ()

    def auto_only_line(self) -> str | None:
        """The one line that says so, for an Auto-only plan; None for any other."""
        if not self.auto_only:
            return None
        return (
            f"this plan ({self.plan or self.sku}) can use only Auto model selection; "
            "requests that name a model are refused: use the model auto"
        )
