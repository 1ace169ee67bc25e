"""Run ``copilot-host`` in this (child) process against the loopback emulator.

    python tests/cli/harness.py [--wait] [--fast] [--logged-in] [--canaries FILE]
        [--models N] [--sync READY,GO] [--hold-endpoint NAME | --hold-store METHOD |
        --hold-output LINES] [--stubborn] -- <args>

The emulator's transport reaches the CLI through the private test seam (``obj=`` on
``main``), which no command-line option or environment variable can reach. ``--wait``
makes the emulated person never approve (for signal tests); ``--fast`` skips the wait
between polls; ``--logged-in`` logs in (key-file mode) before the command runs, since
each emulator issues its own tokens; ``--canaries`` writes every credential the emulator
issued to FILE on the way out, so the parent test can check the child's output for them;
``--models N`` serves N eligible models instead of the default inventory.

Holds stop the command at a known point so the parent can act there (send a signal,
close its end of a pipe) without guessing at timings. At the hold the child writes a
line naming it to the ``READY`` descriptor, then:

``--hold-endpoint NAME``
    every emulator (the demo's own too) stalls 60 s before answering NAME; the line is
    written once the request has arrived. Nothing releases it but a signal.
``--hold-store METHOD``
    ``CredentialStore.METHOD`` waits, before it runs, until the parent writes a byte to
    (or closes) the ``GO`` descriptor.
``--hold-output LINES``
    once LINES lines have gone to stdout, the next write to the real descriptor 1 waits
    for ``GO`` the same way, then goes ahead.

``--stubborn`` makes a store or output hold swallow the first exception raised into it
(writing ``swallowed``) and keep waiting, like a clean-up that does not end by itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import sys
import threading
from pathlib import Path
from typing import Any


class _Hold:
    def __init__(self, ready: int, go: int, *, stubborn: bool) -> None:
        self._ready = ready
        self._go = go
        self._stubborn = stubborn

    def reached(self, what: str) -> None:
        os.write(self._ready, f"{what}\n".encode())

    def here(self, what: str) -> None:
        """Say where we are, then wait for GO (inside the try, so that a stubborn hold
        swallows a signal sent the moment the parent has read the line)."""
        announced = False
        while True:
            try:
                if not announced:
                    announced = True
                    self.reached(what)
                os.read(self._go, 1)
                return
            except BaseException:
                if not self._stubborn:
                    raise
                self.reached("swallowed")


class _HoldingStdout(io.FileIO):
    """Descriptor 1 as Python's own stdout uses it, with one pause at a chosen line."""

    def __init__(self, hold: _Hold, lines: int) -> None:
        super().__init__(1, "wb", closefd=False)
        self._hold: _Hold | None = hold
        self._lines = lines
        self._seen = 0

    def write(self, data: Any) -> int:
        if self._hold is not None and self._seen >= self._lines:
            hold, self._hold = self._hold, None
            hold.here("output")
        written = super().write(data)
        self._seen += bytes(data[:written]).count(b"\n")
        return written


def _hold_store(hold: _Hold, method: str) -> None:
    from copilot_host.store import CredentialStore

    original = getattr(CredentialStore, method)

    def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        hold.here("store")
        return original(self, *args, **kwargs)

    setattr(CredentialStore, method, held)


def _hold_endpoint(hold: _Hold, endpoint: str) -> None:
    from copilot_host import testing

    base = testing.GitHubEmulator

    class Stalling(base):  # type: ignore[misc, valid-type]
        def __init__(self, scenario: Any = None, **kwargs: Any) -> None:
            scenario = scenario if scenario is not None else testing.Scenario()
            faults = scenario.faults
            slow = dataclasses.replace(faults, slow={**faults.slow, endpoint: 60.0})
            super().__init__(dataclasses.replace(scenario, faults=slow), **kwargs)
            threading.Thread(target=self._watch, daemon=True).start()

        def _watch(self) -> None:
            while not self.requests_to(endpoint):
                threading.Event().wait(0.01)
            hold.reached("endpoint")

    testing.GitHubEmulator = Stalling  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--logged-in", action="store_true")
    parser.add_argument("--canaries", type=Path)
    parser.add_argument("--models", type=int)
    parser.add_argument("--sync")
    parser.add_argument("--hold-endpoint")
    parser.add_argument("--hold-store")
    parser.add_argument("--hold-output", type=int)
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = options.args[1:] if options.args[:1] == ["--"] else options.args

    from copilot_host_cli import main as cli
    from copilot_host_cli._context import CliSeam

    from copilot_host.github import GitHubCopilotHost

    hold: _Hold | None = None
    if options.sync:
        ready, go = (int(fd) for fd in options.sync.split(","))
        hold = _Hold(ready, go, stubborn=options.stubborn)
    if hold is not None and options.hold_endpoint:
        _hold_endpoint(hold, options.hold_endpoint)

    from copilot_host.testing import DeviceFlow, GitHubEmulator, Scenario, inventory_of

    scenario = Scenario(login=DeviceFlow(auto_approve=not options.wait))
    if options.models is not None:
        models = dataclasses.replace(scenario.inventory, models=inventory_of(options.models))
        scenario = dataclasses.replace(scenario, inventory=models)
    with GitHubEmulator(scenario) as emulator:

        def factory(*, store: Any, clock: Any) -> GitHubCopilotHost:
            return GitHubCopilotHost(store=store, transport=emulator.transport())

        seam = CliSeam(
            host_factory=factory,
            sleep=(lambda _seconds: None) if options.fast else None,
            open_browser=lambda _url: False,
        )
        try:
            if options.logged_in:
                from copilot_host.store import CredentialStore

                with factory(store=CredentialStore(key_file=True), clock=None) as host:
                    host.login(sleep=lambda _seconds: None)
            if hold is not None and options.hold_store:
                _hold_store(hold, options.hold_store)
            if hold is not None and options.hold_output is not None:
                sys.stdout.flush()
                sys.stdout = io.TextIOWrapper(
                    io.BufferedWriter(_HoldingStdout(hold, options.hold_output)),
                    encoding=sys.stdout.encoding,
                    errors=sys.stdout.errors,
                )
            cli(args, obj=seam, prog_name="copilot-host")
        finally:
            if options.canaries is not None:
                options.canaries.write_text("\n".join(emulator.canaries()))


if __name__ == "__main__":
    main()
