"""What the library's own upper layers (:mod:`copilot_host.gateway` and the CLI) use of the
core beyond its public names: one reviewed list, pinned by ``tests/core/test_exports.py``
like a public ``__all__``, and importable by those two alone (an import-linter contract in
pyproject.toml). Nothing here is public API: it may change in any release.

Names resolve lazily, as the root's do: the CLI's quick commands import this module for
``clean`` and must not pay for the gateway's parts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._accel import Accelerations, accelerations
    from ._flight import Flight, SingleFlight
    from ._safety._redact import redact_line, secrets_generation
    from ._safety._text import clean, show_path
    from ._sessions._auto import AutoPick
    from ._sessions._inspect import (
        last_user_text,
        read_json_body,
        request_facts,
        write_json_body,
    )
    from ._sessions._refusals import refusal_of

_EXPORTS: dict[str, str] = {
    "AutoPick": "_sessions._auto",
    "Flight": "_flight",
    "SingleFlight": "_flight",
    "clean": "_safety._text",
    "show_path": "_safety._text",
    "secrets_generation": "_safety._redact",
    "redact_line": "_safety._redact",
    "last_user_text": "_sessions._inspect",
    "read_json_body": "_sessions._inspect",
    "request_facts": "_sessions._inspect",
    "write_json_body": "_sessions._inspect",
    "refusal_of": "_sessions._refusals",
    "Accelerations": "_accel",
    "accelerations": "_accel",
}

# Literal, so type checkers see the names; a test keeps it equal to _EXPORTS.
__all__ = [
    # what Copilot Auto picked for a request (route.auth.auto_pick)
    "AutoPick",
    # single flight: the gateway's one registration per login
    "Flight",
    "SingleFlight",
    # text fit for a terminal or a log line
    "clean",
    "show_path",
    "redact_line",
    "secrets_generation",
    # the gateway's one reading of a request body, and its one writing
    "last_user_text",
    "read_json_body",
    "request_facts",
    "write_json_body",
    # the one reading of an upstream refusal by policy (the gateway's answer to it)
    "refusal_of",
    # the one reading of the environment that selects the stack (serve's, the JSON reader's)
    "Accelerations",
    "accelerations",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'copilot_host._internal' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"copilot_host.{module_name}"), name)
    globals()[name] = value
    return value
