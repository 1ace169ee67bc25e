"""``copilot-host run`` in this process (click's runner) when the gateway or the account
does not answer as usual: a gateway that does not start in time or at all, models that
cannot be registered or are late, a checkout whose agent config is a FIFO, and signals that
reach ``run`` while its command is starting."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from copilot_host_cli import _run
from copilot_host_cli._context import CliSeam

from copilot_host import Secret
from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import Faults, GitHubEmulator, Inventory, Scenario, minimal_models

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")

MODELS = Inventory(models=minimal_models())


def _account(emulator: GitHubEmulator) -> CliSeam:
    """This machine's login (the record ``login`` writes, with the emulator's token; no
    request sent), and the seam through which ``run`` reaches the emulator."""
    CredentialStore().save("octocat", Secret(emulator.github_token))
    return CliSeam(
        async_host_factory=lambda *, store, clock: AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport()
        ),
        upstream_transport=emulator.async_transport,
    )


def _agent(folder: Path, name: str) -> Path:
    """A stand-in for the agent ``name`` (its profile is chosen by the file's name) that
    prints its arguments, one per line."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\nimport sys\nprint('\\n'.join(sys.argv[1:]))\n")
    path.chmod(0o755)
    return path


# -- the gateway does not start --------------------------------------------------------------


def test_a_gateway_that_does_not_start_in_time_fails_run_before_the_command(
    cli: Cli, emulate: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub takes longer to say the plan than run waits for the gateway (a minute, here
    a fifth of a second): run says so and never starts the command."""
    env = emulate(Scenario(inventory=MODELS, faults=Faults(slow={"copilot_user": 1.0})))
    seam = _account(env.emulator)
    monkeypatch.setattr(_run, "START_TIMEOUT", 0.2)
    ran = tmp_path / "ran"
    result = cli("run", "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')", seam=seam)
    assert result.exit_code == 1
    assert result.stderr == "error: the gateway did not start within a minute\n"
    assert not ran.exists()


def test_a_gateway_that_fails_as_it_starts_is_run_s_error(cli: Cli, tmp_path: Path) -> None:
    """COPILOT_HOST_REWRITES naming no change: the gateway's thread fails before it
    listens, and run reports that failure as its own (a usage error), not a timeout."""
    ran = tmp_path / "ran"
    result = cli(
        "run",
        "--emulator",
        "--",
        sys.executable,
        "-c",
        f"open({str(ran)!r}, 'w')",
        env={"COPILOT_HOST_REWRITES": "-no-such-change", "HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "no-such-change" in result.stderr
    assert not ran.exists()


# -- the account's models ------------------------------------------------------------------------


def test_models_that_cannot_be_registered_leave_the_agent_unprofiled_with_one_line(
    cli: Cli, emulate: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = emulate(
        Scenario(inventory=MODELS, faults=Faults(models_failures=(500, 500), retry_after="0"))
    )
    seam = _account(env.emulator)
    codex = _agent(tmp_path / "bin", "codex")
    capfd.readouterr()
    result = cli("run", "--", str(codex), "exec", "hi", seam=seam, env={"HOME": str(tmp_path)})
    assert result.exit_code == 0
    out, err = capfd.readouterr()
    assert "the models could not be registered (server_error)" in err
    assert err.startswith("copilot-host run: ") and err.count("\n") == 1
    # No model was chosen for it: it keeps its own, behind the gateway's provider.
    assert 'model="' not in out
    assert out.splitlines()[-2:] == ["exec", "hi"]


def test_models_that_are_late_leave_the_agent_unprofiled_with_one_line(
    cli: Cli,
    emulate: Any,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GitHub takes longer to list the models than run waits for them (a minute, here a
    fifth of a second): the command starts without a profile rather than waiting."""
    env = emulate(Scenario(inventory=MODELS, faults=Faults(slow={"models": 1.0})))
    seam = _account(env.emulator)
    monkeypatch.setattr(_run, "FACTS_TIMEOUT", 0.2)
    codex = _agent(tmp_path / "bin", "codex")
    capfd.readouterr()
    result = cli("run", "--", str(codex), "exec", "hi", seam=seam, env={"HOME": str(tmp_path)})
    assert result.exit_code == 0
    out, err = capfd.readouterr()
    assert err == "copilot-host run: the account's models were not known within a minute\n"
    assert out.splitlines() == ["exec", "hi"]


# -- a checkout's hostile agent config ---------------------------------------------------------


def test_print_profile_says_which_config_file_was_skipped_and_why(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """``run --print-profile -- aider`` in a checkout whose ``.aider.conf.yml`` is a FIFO
    nobody writes: it returns at once, gives aider no model, and its one line says why."""
    home = tmp_path / "home"
    checkout = tmp_path / "checkout"
    home.mkdir()
    checkout.mkdir()
    os.mkfifo(checkout / ".aider.conf.yml")
    monkeypatch.chdir(checkout)
    capfd.readouterr()
    result = cli(
        "run",
        "--emulator",
        "--print-profile",
        "--",
        "aider",
        "--message",
        "hi",
        env={"HOME": str(home), "COPILOT_HOST_HOME": str(tmp_path / "never")},
    )
    assert result.exit_code == 0, result.stderr
    _out, err = capfd.readouterr()
    assert result.stdout.splitlines()[-1].endswith("aider --message hi")
    assert "--model" not in result.stdout
    skipped = f"{checkout / '.aider.conf.yml'} skipped (not a regular file)"
    assert err == (
        f"copilot-host run: aider's --model not set: {skipped}; "
        f"aider's --weak-model not set: {skipped}\n"
    )


# -- signals while the command starts -----------------------------------------------------------


class _Gateway:
    """The gateway as ``_foreground`` sees it, with a hook for the moment run has taken its
    signals and is about to start the command."""

    def __init__(self, at_start: Any) -> None:
        self._at_start = at_start
        self.handler: Any = None

    @property
    def on_failure(self) -> Any:
        return self.handler

    @on_failure.setter
    def on_failure(self, handler: Any) -> None:
        self.handler = handler
        if handler is not None:
            self._at_start(handler)


def test_a_sigterm_that_reaches_run_before_its_command_started_is_passed_on_once_it_has(
    capfd: pytest.CaptureFixture[str],
) -> None:
    def terminate(_handler: Any) -> None:
        signal.raise_signal(signal.SIGTERM)  # handled at once, by run's own handler

    before = signal.getsignal(signal.SIGTERM)
    script = "import time; print('started', flush=True); time.sleep(30)"
    code = _run._foreground([sys.executable, "-c", script], dict(os.environ), _Gateway(terminate))  # type: ignore[arg-type]
    assert code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    assert capfd.readouterr() == ("", "")  # ended before it could say it started


def test_a_gateway_that_stops_before_the_command_started_ends_it_once_it_has(
    capfd: pytest.CaptureFixture[str],
) -> None:
    def fail(handler: Any) -> None:
        handler(RuntimeError("boom"))

    script = "import time; time.sleep(30)"
    code = _run._foreground([sys.executable, "-c", script], dict(os.environ), _Gateway(fail))  # type: ignore[arg-type]
    assert code == 128 + signal.SIGTERM
    _out, err = capfd.readouterr()
    assert err == "copilot-host run: the gateway stopped (RuntimeError); ending the command\n"


def test_holding_run_s_signals_twice_is_undone_by_one_release() -> None:
    """Threads started while held inherit the mask; the main thread takes signals again
    after one release however often it was held."""
    signals = _run._MainThreadSignals()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    signals.hold()
    signals.hold()
    assert signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    signals.release()
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    signals.release()  # nothing held: nothing changes
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
