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
    authorization stays on your GitHub account until you revoke it there.
    """
    from copilot_host import StoreCorruptError, clean, show_path

    out = output()
    store = make_store()
    try:
        header = store.header()
        damaged = False
    except StoreCorruptError:
        # Unreadable: still something to remove. delete() sets it aside (kept, as every
        # damaged record is), so logging out is always a way out.
        header, damaged = None, True
    before = set(store.set_aside())
    removed = store.delete()
    after = store.set_aside()
    moved = [path for path in after if path not in before]
    if damaged and removed:
        where = f" to {show_path(moved[0])}" if moved else ""
        out.result(f"Logged out: moved the damaged login record aside{where}.")
    elif removed:
        who = f" ({clean(header.account)})" if header is not None else ""
        out.result(f"Logged out{who}: removed the local credential and its key.")
    else:
        out.result("Already logged out: nothing to remove.")
    out.info(f"This does not revoke the authorization on GitHub; to revoke it, visit {REVOKE_URL}")
    for path in (p for p in after if p not in moved):
        out.warn(f"a damaged login record is set aside at {show_path(path)}; delete it if unneeded")
