"""``copilot-host logout``: forget the local login (idempotent)."""

from __future__ import annotations

import click

from ._seam import make_store, output

__all__ = ["REVOKE_URL", "logout"]

REVOKE_URL = "https://github.com/settings/applications"

_EPILOG = """\b
Examples:
  copilot-host logout
  copilot-host logout && copilot-host status   # status now exits 1
"""


@click.command(epilog=_EPILOG)
def logout() -> None:
    """Remove the stored GitHub credential and its key from this machine.

    Safe to run when already logged out (exit code 0). This is a local logout: the
    authorization stays on your GitHub account until you revoke it there.
    """
    from copilot_host._text import clean

    out = output()
    store = make_store()
    header = store.header()
    removed = store.delete()
    if removed:
        who = f" ({clean(header.account)})" if header is not None else ""
        out.result(f"Logged out{who}: removed the local credential and its key.")
    else:
        out.result("Already logged out: nothing to remove.")
    out.info(f"This does not revoke the authorization on GitHub; to revoke it, visit {REVOKE_URL}")
    for path in store.set_aside():
        out.warn(f"a damaged login record is still set aside at {path}; delete it if unneeded")
