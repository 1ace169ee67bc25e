"""The copilot-host command line (installed as ``copilot_host_cli``)."""

from __future__ import annotations

from ._app import main

__all__ = ["main"]
