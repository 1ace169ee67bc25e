"""The one line for plans that can use only Auto model selection (``login``, ``models``,
``usage``; ``serve`` and ``run`` say it at start through :func:`._gateway.plan_line`), and
what Copilot Auto picks from (``models``, ``usage``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from copilot_host import ModelRoute

__all__ = ["PLAN_CHECK_SECONDS", "auto_document", "auto_line", "auto_now", "plan_line_now"]

# Best effort: the command never waits longer than this to learn the plan, never fails for it.
PLAN_CHECK_SECONDS = 2.0


def plan_line_now(host: Any, timeout: float = PLAN_CHECK_SECONDS) -> str | None:
    """``CopilotUsage.auto_only_line()`` of the login ``host`` holds, asked of GitHub on a
    thread that is not waited for past ``timeout``; None when the plan is another, there is
    no login, or it could not be read in time."""
    found: list[str | None] = []

    def ask() -> None:
        try:
            found.append(host.usage().auto_only_line())
        except Exception:  # best effort: any failure means "not known"
            found.append(None)

    if host.availability() is None:
        return None
    worker = threading.Thread(target=ask, name="copilot-host plan", daemon=True)
    worker.start()
    worker.join(timeout)
    line = found[0] if found else None
    return line if isinstance(line, str) else None


def auto_document(routes: Any) -> dict[str, Any] | None:
    """``{"pool": [...], "discounts": {...}, ...}`` of Copilot Auto's route among
    ``routes`` (``AutoPool.document``), None when there is none."""
    for route in routes:
        pool = route.spec.auto
        if pool is not None:
            found: dict[str, Any] = pool.document()
            return found
    return None


def auto_now(host: Any) -> dict[str, Any] | None:
    """What Copilot Auto offers the login ``host`` holds, as :func:`auto_document` says it:
    one exchange and Auto's bounded pool call (``usage``); None when it offers nothing or
    could not be asked."""
    import copilot_host as ch

    try:
        identity = host.availability()
        if identity is None:
            return None
        probe = host.auto_probe(host.exchange(identity))
    except ch.CopilotHostError:
        return None
    found = probe.session
    if found is None:
        return None
    return {"pool": list(found.models), "discounts": dict(found.discounts)}


def auto_line(document: dict[str, Any] | None, route: ModelRoute | None = None) -> str | None:
    """One line saying what Copilot Auto picks from, and at what discount; None without
    Auto."""
    from copilot_host._internal import clean

    if document is None:
        return None
    name = f" ({clean(route.route_id)})" if route is not None else ""
    pool: list[str] = document.get("pool", [])
    if not pool:
        return f"Copilot Auto{name}: its models could not be read; each request asks again"
    discounts: dict[str, float] = document.get("discounts", {})
    shown = [
        clean(model) + (f" ({discounts[model] * 100:g}% off)" if discounts.get(model) else "")
        for model in pool
    ]
    return f"Copilot Auto{name} picks from: {', '.join(shown)}"
