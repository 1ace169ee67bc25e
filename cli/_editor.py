"""``COPILOT_HOST_EDITOR``: the one environment variable that changes what the CLI sends.

The service calls a client stale long before copilot-host can ship a release, so a person
may present a newer editor identity than the built-in one. Only the CLI reads it (the
library never reads the environment); ``login``, ``models``, ``usage``, ``serve`` and
``run`` call :func:`editor_from_environment` before they do anything else, ``status``
never does (it sends nothing).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from collections.abc import Mapping

    from copilot_host.github import EditorIdentity

__all__ = [
    "CLIENT_ID_VARIABLE",
    "EDITOR_VARIABLE",
    "client_id_from_environment",
    "editor_from_environment",
]

EDITOR_VARIABLE = "COPILOT_HOST_EDITOR"
# The OAuth app a new login is minted for; read by ``login`` only (every later command
# uses the token the record holds, whichever app it came from).
CLIENT_ID_VARIABLE = "COPILOT_HOST_CLIENT_ID"


def check_client_id_text(value: str, source: str) -> str:
    """``value`` as an OAuth client id, or a usage error (exit 2) naming ``source``."""
    import re

    # The shape GitHubCopilotHost(client_id=...) accepts: it goes into a form body.
    value = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value):
        raise click.UsageError(f"{source}: client_id must be 1-100 letters, digits and . _ -")
    return value


def client_id_from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The client id ``COPILOT_HOST_CLIENT_ID`` names, or None when it is unset or empty."""
    value = (os.environ if environ is None else environ).get(CLIENT_ID_VARIABLE, "")
    if not value.strip():
        return None
    return check_client_id_text(value, CLIENT_ID_VARIABLE)


def editor_from_environment(environ: Mapping[str, str] | None = None) -> EditorIdentity | None:
    """The identity ``COPILOT_HOST_EDITOR`` names, or None when it is unset or empty.

    Anything but ``vscode/X.Y.Z copilot-chat/A.B.C`` is a usage error (exit 2) naming the
    variable, before any request is sent.
    """
    value = (os.environ if environ is None else environ).get(EDITOR_VARIABLE, "")
    if not value.strip():
        return None
    from copilot_host.github import parse_editor

    try:
        return parse_editor(value)
    except ValueError as exc:
        raise click.UsageError(f"{EDITOR_VARIABLE}: {exc}") from None
