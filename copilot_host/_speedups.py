"""The compiled accelerations copilot-host uses when they are importable, and the one switch
that turns them all off.

Each acceleration has a pure-Python path that does the same thing more slowly, and the
test suite runs both. ``COPILOT_HOST_PURE_PYTHON=1`` (any value but empty or ``0``) makes
every part take its pure path, so a user can rule the accelerations out when a problem
looks like theirs. The switch is read when a part starts (the gateway's server and
upstream client) or, for the JSON reader, when this module is first imported.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["PURE_PYTHON_VARIABLE", "orjson", "pure_python"]

PURE_PYTHON_VARIABLE = "COPILOT_HOST_PURE_PYTHON"


def pure_python() -> bool:
    """Whether the environment asks for the pure-Python paths only."""
    return os.environ.get(PURE_PYTHON_VARIABLE, "") not in ("", "0")


def _orjson() -> ModuleType | None:
    if pure_python():
        return None
    try:
        import orjson as module
    except ImportError:
        return None
    return module


# A JSON parser in Rust, two to three times as fast as ``json`` on request bodies; None on
# the pure path.
orjson = _orjson()
