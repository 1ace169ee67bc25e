"""CLI test fixtures: a recording runner, and a leak guard over every output it saw.

Every output any CLI test produces (CliRunner results and child processes alike) goes
through ``leak_guard``; at the end of each test the guard fails the test if any of it
contains a canary registered during the test (tokens the emulator issued, device codes,
values planted in errors) or anything shaped like a GitHub or Copilot token.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent / "harness.py"
# Shapes no CLI output may ever contain, whatever the canary list says.
TOKEN_SHAPES = re.compile(r"gh[oupsr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{8,}|\btid=")


def canary_token(prefix: str = "gho_") -> str:
    """A fresh token-shaped canary (never a committed literal)."""
    return prefix + secrets.token_hex(18)


def reveal(value: object) -> str:
    fn = getattr(value, "reveal", None)
    return str(fn()) if callable(fn) else str(value)


@dataclass
class LeakGuard:
    canaries: set[str] = field(default_factory=set)
    outputs: list[tuple[str, str]] = field(default_factory=list)

    def canary(self, value: object) -> str:
        text = reveal(value)
        if text:
            self.canaries.add(text)
        return text

    def saw(self, label: str, text: str | bytes | None) -> None:
        if text is None:
            return
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self.outputs.append((label, text))

    def leaks(self) -> list[str]:
        found = []
        for label, text in self.outputs:
            for canary in self.canaries:
                if canary in text:
                    found.append(f"{label}: canary {canary[:6]}... leaked")
            for match in TOKEN_SHAPES.finditer(text):
                found.append(f"{label}: token-shaped text {match.group()[:6]}...")
        return found


@pytest.fixture(autouse=True)
def leak_guard() -> Iterator[LeakGuard]:
    guard = LeakGuard()
    yield guard
    leaks = guard.leaks()
    assert not leaks, "secret material reached CLI output:\n" + "\n".join(leaks)


@dataclass
class Cli:
    """Runs ``main`` in-process through CliRunner, with the test seam as ``obj``."""

    guard: LeakGuard
    seam: CliSeam = field(default_factory=CliSeam)

    def __call__(
        self,
        *args: str,
        seam: CliSeam | None = None,
        input: str | None = None,
        env: Mapping[str, str | None] | None = None,
    ) -> Result:
        runner = CliRunner()
        result = runner.invoke(
            main,
            list(args),
            obj=seam if seam is not None else self.seam,
            input=input,
            env=env,
            prog_name="copilot-host",
            catch_exceptions=False,
        )
        self.guard.saw(f"copilot-host {' '.join(args)} (stdout)", result.stdout)
        self.guard.saw(f"copilot-host {' '.join(args)} (stderr)", result.stderr)
        return result


@pytest.fixture
def cli(leak_guard: LeakGuard) -> Cli:
    return Cli(leak_guard)


def console_script() -> Path:
    """The installed ``copilot-host`` next to this interpreter (pip put it there)."""
    script = Path(sys.executable).parent / "copilot-host"
    assert script.exists(), f"the console script is not installed at {script}: pip install -e ."
    return script


@dataclass
class Proc:
    guard: LeakGuard

    def run(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            env=child_env(env),
            timeout=timeout,
            input=input,
            check=False,
        )
        self.guard.saw(f"{' '.join(map(str, argv))} (stdout)", done.stdout)
        self.guard.saw(f"{' '.join(map(str, argv))} (stderr)", done.stderr)
        return done

    def script(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run([str(console_script()), *args], **kwargs)

    def harness(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run([sys.executable, str(HARNESS), *args], **kwargs)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment (its COPILOT_HOST_HOME included), with no keyring to find."""
    env = dict(os.environ)
    # A child cannot see the suite's in-memory keyring; make sure it finds no real one
    # either, so nothing a test runs can touch the keyring of whoever runs the suite.
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env.pop("NO_COLOR", None)
    env.update(extra or {})
    return env


@pytest.fixture
def proc(leak_guard: LeakGuard) -> Proc:
    return Proc(leak_guard)


@dataclass
class Emulated:
    """A running emulator and the test seam that points the CLI at it."""

    emulator: Any
    seam: CliSeam


@pytest.fixture
def emulate(leak_guard: LeakGuard) -> Iterator[Any]:
    """``emulate(scenario=None, **seam_fields)`` starts a GitHubEmulator for this test.

    The seam's host factory builds the real GitHubCopilotHost on the emulator's
    transport; the wait between polls is instant unless the test passes ``sleep``.
    Every credential the emulator issued becomes a canary for the leak guard.
    """
    from contextlib import ExitStack

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator

    stack = ExitStack()
    started: list[Any] = []

    def start(scenario: Any = None, **seam_fields: Any) -> Emulated:
        emulator = stack.enter_context(GitHubEmulator(scenario))
        started.append(emulator)

        def factory(
            *, store: Any, clock: Any, editor: Any = None, client_id: Any = None
        ) -> GitHubCopilotHost:
            extra = {"clock": clock} if clock is not None else {}
            if editor is not None:
                extra["editor"] = editor
            if client_id is not None:
                extra["client_id"] = client_id
            return GitHubCopilotHost(store=store, transport=emulator.transport(), **extra)

        seam_fields.setdefault("sleep", lambda _seconds: None)
        seam_fields.setdefault("open_browser", lambda _url: False)
        return Emulated(emulator, CliSeam(host_factory=factory, **seam_fields))

    try:
        yield start
    finally:
        for emulator in started:
            for canary in emulator.canaries():
                leak_guard.canary(canary)
        stack.close()


@dataclass
class Held:
    """A harness child stopped at a known point (``--hold-*``), driven by the test.

    Text is read as bytes and decoded here, so a test asserts exactly what was written.
    """

    guard: LeakGuard
    child: subprocess.Popen[bytes]
    ready: int
    go: int
    canaries: Path
    closed: bool = False

    def close_pipes(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.ready)
            os.close(self.go)

    def wait_held(self, timeout: float = 30) -> str:
        """The name of the hold the child reached (it has written nothing else yet)."""
        line = b""
        while not line.endswith(b"\n"):
            readable, _, _ = select.select([self.ready], [], [], timeout)
            assert readable, "the child never reached its hold"
            byte = os.read(self.ready, 1)
            assert byte, "the child ended before reaching its hold"
            line += byte
        return line.decode().strip()

    def release(self) -> None:
        os.write(self.go, b"g")

    def send(self, signum: int) -> None:
        self.child.send_signal(signum)

    def close_stdout(self, *, after_lines: int = 0) -> list[str]:
        """Read ``after_lines`` lines, then close our end: the reader goes away."""
        assert self.child.stdout is not None
        lines = [self.child.stdout.readline().decode() for _ in range(after_lines)]
        self.child.stdout.close()
        return lines

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        try:
            out, err = self.child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.communicate()
            raise AssertionError("the child did not end within the bound") from None
        finally:
            self.close_pipes()
        if self.canaries.exists():
            for line in self.canaries.read_text().splitlines():
                self.guard.canary(line)
        stdout = (out or b"").decode()
        stderr = (err or b"").decode()
        self.guard.saw("held child (stdout)", stdout)
        self.guard.saw("held child (stderr)", stderr)
        return self.child.returncode, stdout, stderr


@pytest.fixture
def hold(leak_guard: LeakGuard, tmp_path: Path) -> Iterator[Any]:
    """``hold(*harness_args, shell=, env=, stdin=)`` starts a harness child with the sync pipes.

    ``shell`` wraps the child in ``sh -c SHELL`` (with the harness command line as
    ``"$@"``), for what only a shell does simply: close descriptor 1 (``exec "$@" >&-``),
    or start with a signal ignored (``trap '' INT; exec "$@"``).
    """
    children: list[Held] = []

    def start(
        *args: str,
        shell: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bool = False,
    ) -> Held:
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        canaries = tmp_path / f"canaries-{len(children)}"
        argv = [
            sys.executable,
            str(HARNESS),
            "--sync",
            f"{ready_w},{go_r}",
            "--canaries",
            str(canaries),
            *args,
        ]
        if shell is not None:
            argv = ["/bin/sh", "-c", shell, "sh", *argv]
        child = subprocess.Popen(
            argv,
            # A pipe the test holds open (and never writes) when the child must wait
            # for an answer; end of input otherwise.
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(env),
            pass_fds=(ready_w, go_r),
        )
        os.close(ready_w)
        os.close(go_r)
        held = Held(leak_guard, child, ready_r, go_w, canaries)
        children.append(held)
        return held

    try:
        yield start
    finally:
        for held in children:
            if held.child.poll() is None:
                held.child.send_signal(signal.SIGKILL)
                held.child.communicate()
            held.close_pipes()
