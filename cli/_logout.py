"""``copilot-host logout``: forget the local login (idempotent)."""

from __future__ import annotations

import click

from ._context import make_store, output
from ._output import CopilotHostCommand

__all__ = ["REVOKE_URL", "logout"]

REVOKE_URL = "https://github.com/settings/applications"

_EPILOG = """\b
Examples:
  copilot-host logout
  copilot-host logout && copilot-host status   # status now exits 1
"""


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
def logout() -> None:
    """Remove the stored GitHub credential and its key from this machine.

    Safe to run when already logged out (exit code 0). This is a local logout: the
    authorization stays on your GitHub account until you revoke it there. The ledger
    of model requests (usage --history) is kept; logout says where it is.
    """
    from copilot_host._internal import clean, show_path

    out = output()
    # An unreadable record is still something to remove: delete() sets it aside (kept, as
    # every damaged record is), so logging out is always a way out. What it did, it says.
    deleted = make_store().delete()
    if deleted.set_aside is not None:
        out.result(
            f"Logged out: moved the damaged login record aside to {show_path(deleted.set_aside)}."
        )
    elif deleted:
        record = deleted.record
        who = f" ({clean(record.account)})" if record is not None else ""
        out.result(f"Logged out{who}: removed the local credential and its key.")
    else:
        out.result("Already logged out: nothing to remove.")
    out.info(f"This does not revoke the authorization on GitHub; to revoke it, visit {REVOKE_URL}")
    for path in deleted.still_aside:
        out.warn(f"a damaged login record is set aside at {show_path(path)}; delete it if unneeded")
    _ledger_kept()


def _ledger_kept() -> None:
    """The ledger is the person's record of what was spent, not a credential: logging
    out keeps it, and says where it is."""
    import os

    from copilot_host._internal import show_path
    from copilot_host.gateway._ledger import history_path

    path = history_path(option=None, environ=os.environ)
    if os.path.lexists(path):
        output().info(
            f"The ledger of model requests is kept at {show_path(path)} (no prompt or "
            "secret is in it; `copilot-host usage --history` shows it); delete it if unneeded"
        )
