"""Run ``copilot-host`` in this (child) process against the loopback emulator.

    python tests/cli/harness.py [--wait] [--fast] [--logged-in] [--canaries FILE] -- <args>

The emulator's transport reaches the CLI through the private test seam (``obj=`` on
``main``), which no command-line option or environment variable can reach. ``--wait``
makes the emulated person never approve (for signal tests); ``--fast`` skips the wait
between polls; ``--logged-in`` logs in (key-file mode) before the command runs, since
each emulator issues its own tokens; ``--canaries`` writes every credential the emulator issued to FILE on the
way out, so the parent test can check the child's output for them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--logged-in", action="store_true")
    parser.add_argument("--canaries", type=Path)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = options.args[1:] if options.args[:1] == ["--"] else options.args

    from copilot_host_cli import main as cli
    from copilot_host_cli._seam import CliSeam

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator, Scenario

    with GitHubEmulator(Scenario(auto_approve=not options.wait)) as emulator:

        def factory(*, store: Any, key_file: bool, clock: Any) -> GitHubCopilotHost:
            return GitHubCopilotHost(store=store, key_file=key_file, transport=emulator.transport())

        seam = CliSeam(
            host_factory=factory,
            sleep=(lambda _seconds: None) if options.fast else None,
            open_browser=lambda _url: False,
        )
        try:
            if options.logged_in:
                from copilot_host.store import CredentialStore

                with factory(store=CredentialStore(), key_file=True, clock=None) as host:
                    host.login(sleep=lambda _seconds: None)
            cli(args, obj=seam, prog_name="copilot-host")
        finally:
            if options.canaries is not None:
                options.canaries.write_text("\n".join(emulator.canaries()))


if __name__ == "__main__":
    sys.exit(main())
