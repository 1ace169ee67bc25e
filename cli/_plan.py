"""The one line for plans that can use only Auto model selection (``login``, ``models``,
``usage``; ``serve`` and ``run`` say it at start through :func:`._gateway.plan_line`)."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["PLAN_CHECK_SECONDS", "plan_line_now"]

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
