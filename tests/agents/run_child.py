"""Run ``copilot-host run`` in this (child) process on the logged-in store of
``$COPILOT_HOST_HOME``, with upstream requests sent to an emulator in the test's process.

    python tests/agents/run_child.py EMULATOR_PORT[:SOCKET_PORT] [run options...] -- COMMAND [ARG...]

With SOCKET_PORT (the emulator's ``socket_port``), Copilot's WebSocket is routed there too,
so a model that lists ``ws:/responses`` is served over it.

The emulator reaches the command through the CLI's private test seam (``obj=`` on
``main``), as tests/gateway/serve_child.py does for ``serve``: the test can then read what
reached the emulator.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    given, _, sockets = sys.argv[1].partition(":")
    port = int(given)

    from copilot_host_cli import main as cli
    from copilot_host_cli._context import CliSeam

    from copilot_host.gateway import upstream_transport
    from copilot_host.github import AsyncGitHubCopilotHost
    from copilot_host.testing import async_loopback_transport, loopback_socket_connector

    def host(*, store: Any, clock: Any) -> AsyncGitHubCopilotHost:
        return AsyncGitHubCopilotHost(store=store, transport=async_loopback_transport(port))

    seam = CliSeam(
        async_host_factory=host,
        # Over the transport serve gives an app (aiohttp on [fast]): the path users run.
        upstream_transport=lambda: async_loopback_transport(port, inner=upstream_transport()),
        upstream_sockets=(lambda: loopback_socket_connector(int(sockets))) if sockets else None,
    )
    cli(["run", *sys.argv[2:]], obj=seam, prog_name="copilot-host")


if __name__ == "__main__":
    main()
