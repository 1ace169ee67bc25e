"""The gateway's own error: it could not serve (its address, or the ASGI server under it)."""

from __future__ import annotations

import copilot_host as ch

__all__ = ["ServingError"]


class ServingError(ch.CopilotHostError):
    """The gateway could not serve: ``port_in_use``, ``address_unavailable`` or
    ``listen_failed`` (its listening socket), ``server_unsupported`` (a uvicorn lacking
    what the server relies on). Nothing was served and nothing of the store changed."""

    code = "listen_failed"
