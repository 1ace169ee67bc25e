"""Tests that need an optional extra (``copilot-host[fast]``: aiohttp, httptools, orjson).

``require(name)`` skips the calling test (or, at a module's top, the module) when ``name``
cannot be imported. On CI a missing extra is a failure instead, since the suite's main job
installs ``[test]``, which pulls ``[fast]``; only the base-install job, which sets
``COPILOT_HOST_BASE_INSTALL=1``, runs without them and skips.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

__all__ = ["BASE_INSTALL_ENV", "installed", "require"]

BASE_INSTALL_ENV = "COPILOT_HOST_BASE_INSTALL"


def installed(name: str) -> bool:
    """Whether the module ``name`` can be imported here."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require(name: str) -> None:
    """Skip unless ``name`` is installed; fail when it is missing on CI's [fast] job."""
    if installed(name):
        return
    if os.environ.get("CI") and not os.environ.get(BASE_INSTALL_ENV):
        pytest.fail(f"{name} is not installed: the [fast] job must have copilot-host[fast]")
    pytest.skip(f"needs {name} (copilot-host[fast])", allow_module_level=True)
