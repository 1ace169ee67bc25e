"""Run ``copilot-host run`` in this (child) process against an emulator in another one.

    python tests/security/run_child.py EMULATOR_PORT [run options...] -- COMMAND...

As ``tests/gateway/serve_child.py`` does for ``serve``: the emulator's transports reach
the command through the CLI's private test seam; the login is whatever the store in
``$COPILOT_HOST_HOME`` holds (the parent logs in with a key file first).
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    port = int(sys.argv[1])

    from copilot_host_cli import main as cli
    from copilot_host_cli._context import CliSeam

    from copilot_host.gateway import upstream_transport
    from copilot_host.github import AsyncGitHubCopilotHost
    from copilot_host.testing import async_loopback_transport

    def host(*, store: Any, clock: Any, **extra: Any) -> AsyncGitHubCopilotHost:
        return AsyncGitHubCopilotHost(
            store=store, transport=async_loopback_transport(port), **extra
        )

    seam = CliSeam(
        async_host_factory=host,
        # Over the transport serve gives an app (aiohttp on [fast]): the path users run.
        upstream_transport=lambda: async_loopback_transport(port, inner=upstream_transport()),
    )
    cli(["run", *sys.argv[2:]], obj=seam, prog_name="copilot-host")


if __name__ == "__main__":
    main()
