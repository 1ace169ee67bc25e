"""Run ``copilot-host serve`` in this (child) process against an emulator in another one.

    python tests/gateway/serve_child.py EMULATOR_PORT [--debug] [serve options...]
    python tests/gateway/serve_child.py EMULATOR_PORT run [run options...] -- COMMAND...

The emulator's transports reach the command through the CLI's private test seam (``obj=``
on ``main``), which no option or environment variable can reach. The login is whatever
the store in ``$COPILOT_HOST_HOME`` holds (the parent logs in with a key file first). (bench/gateway.py runs serve the same way,
with model requests sent to a tap of its own rather than to the emulator.)
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
        # extra: editor=, when COPILOT_HOST_EDITOR is set.
        return AsyncGitHubCopilotHost(
            store=store, transport=async_loopback_transport(port), **extra
        )

    seam = CliSeam(
        async_host_factory=host,
        # Over the transport serve gives an app (aiohttp on [fast]): the path users run.
        upstream_transport=lambda: async_loopback_transport(port, inner=upstream_transport()),
    )
    options = sys.argv[2:]
    if options[:1] == ["run"]:
        # ``run`` the same way: its options and the command after ``--`` as given.
        cli(options, obj=seam, prog_name="copilot-host")
        return
    debug = ["--debug"] if "--debug" in options else []  # the group's option, not serve's
    serve = [option for option in options if option != "--debug"]
    cli([*debug, "serve", *serve], obj=seam, prog_name="copilot-host")


if __name__ == "__main__":
    main()
