"""Helpers shared by the store tests."""

from __future__ import annotations

import secrets

from copilot_host import Secret


def canary_token() -> Secret:
    """A token-shaped value made at run time, so a leak can be searched for exactly."""
    return Secret("gho_" + secrets.token_hex(18))
