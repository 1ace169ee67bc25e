"""``copilot-host run`` called in this process (click's runner), its command a real child
process writing to this process's descriptors: this login's account through the test
seam, the emulator's, and the failures before the command starts."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from copilot_host_cli._context import CliSeam

from copilot_host.gateway._server._stack import PURE_PYTHON_ENV
from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.testing import GitHubEmulator
from tests.cli.conftest import Cli
from tests.cli.test_run import CODEX_MODEL_ARGS

CHILD = Path(__file__).resolve().parent / "run_child.py"


def _logged_in(cli: Cli, env: Any, capfd: pytest.CaptureFixture[str]) -> CliSeam:
    """``login`` on the emulator of ``env``, then the seam through which ``run`` reaches
    that emulator (its host and the gateway's upstream)."""
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    capfd.readouterr()
    emulator: GitHubEmulator = env.emulator
    return CliSeam(
        async_host_factory=lambda *, store, clock: AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport()
        ),
        upstream_transport=emulator.async_transport,
    )


def _echo_argv(path: Path) -> None:
    """A stand-in agent at ``path`` that prints its arguments as JSON."""
    path.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    path.chmod(0o755)


def _look(capfd: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out, _err = capfd.readouterr()
    seen: dict[str, Any] = json.loads(out)
    return seen


@pytest.mark.usefixtures("copilot_home")
@pytest.mark.parametrize("pure", [False, True], ids=["default", "pure-python"])
def test_this_logins_account_through_the_seam(
    cli: Cli,
    emulate: Any,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pure: bool,
) -> None:
    # The gateway's thread on either server stack.
    if pure:
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    else:
        monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    env = emulate()
    seam = _logged_in(cli, env, capfd)
    home = tmp_path / "agent-home"
    home.mkdir()
    log = tmp_path / "run.log"
    result = cli(
        "run",
        "--log",
        str(log),
        "--model-alias",
        "fast=gpt-4.1",
        "--",
        sys.executable,
        str(CHILD),
        "look",
        "7",
        seam=seam,
        env={"HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-canary"},
    )
    assert result.exit_code == 7
    assert (result.stdout, result.stderr) == ("", "")
    seen = _look(capfd)
    assert seen["status"] == 200
    assert seen["env"]["ANTHROPIC_API_KEY"] is None
    assert seen["key_found_in"] == []
    logged = log.read_text()
    assert " GET /v1/models model=- status=200 " in logged
    assert logged.endswith(
        "copilot-host gateway stopped after 1 request; 0 model requests, credits none reported\n"
    )
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    # The gateway went upstream to the emulator of this test.
    assert env.emulator.requests_to("models")


def test_the_emulators_account_and_a_codex_profile(
    cli: Cli, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    _echo_argv(codex)
    result = cli(
        "run",
        "--emulator",
        "--",
        str(codex),
        "exec",
        "hi",
        env={"HOME": str(tmp_path), "COPILOT_HOST_HOME": str(tmp_path / "never")},
    )
    assert result.exit_code == 0, result.stderr
    out, _err = capfd.readouterr()
    argv = json.loads(out)
    assert argv[-8:] == [*CODEX_MODEL_ARGS, "exec", "hi"]
    assert not (tmp_path / "never").exists()


@pytest.mark.usefixtures("copilot_home")
def test_failures_before_the_command_starts(cli: Cli, tmp_path: Path) -> None:
    python = ["--", sys.executable, "-c", "raise SystemExit(3)"]
    result = cli("run", *python)
    assert result.exit_code == 1
    assert "copilot-host login" in result.stderr
    result = cli("run", "--emulator", "--model-alias", "nothing", *python)
    assert result.exit_code == 2 and "is not NAME=MODEL" in result.stderr
    result = cli("run", "--emulator", "--model-alias", "a b=gpt-4.1", *python)
    assert result.exit_code == 2 and "NAME=MODEL" in result.stderr
    result = cli("run", "--emulator", "--default-model", "gpt-9", *python)
    assert result.exit_code == 2
    assert "--default-model gpt-9: this account has no such model" in result.stderr
    link = tmp_path / "link.log"
    link.symlink_to(tmp_path / "elsewhere.log")
    result = cli("run", "--emulator", "--log", str(link), *python)
    assert result.exit_code == 1
    assert result.stderr == f"error: cannot write the log file {link}: it is a symbolic link\n"
    assert not (tmp_path / "elsewhere.log").exists()
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = cli("run", "--emulator", "--log", str(folder), *python)
    assert result.exit_code == 2  # click refuses a folder for a file option
    result = cli("run", "--emulator", *python)
    assert result.exit_code == 3
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # A FIFO with a reader opens at once; the gateway refuses it as not a regular file
    # (tests/cli/test_run.py shows one without a reader is refused without blocking).
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = cli("run", "--emulator", "--log", str(fifo), *python)
    finally:
        os.close(reader)
    assert result.exit_code == 1
    assert "is not a regular file of yours" in result.stderr


def test_commands_that_cannot_run(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", "--emulator", "--", "copilot-host-no-such-command")
    assert (result.exit_code, result.stderr) == (
        127,
        "error: copilot-host-no-such-command: command not found\n",
    )
    plain = tmp_path / "plain"
    plain.write_text("text\n")
    result = cli("run", "--emulator", "--", str(plain))
    assert (result.exit_code, result.stderr) == (126, f"error: {plain}: permission denied\n")
    result = cli("run", "--emulator", "--", str(tmp_path))
    assert (result.exit_code, result.stderr) == (126, f"error: {tmp_path}: is a directory\n")
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    result = cli("run", "--emulator", "--", str(garbage))
    assert result.exit_code == 126
    assert result.stderr == f"error: {garbage}: cannot run it (Exec format error)\n"


def test_a_command_that_dies_of_a_signal_is_128_plus_it(cli: Cli) -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"
    result = cli("run", "--emulator", "--", sys.executable, "-c", script)
    assert result.exit_code == 128 + signal.SIGUSR1


@pytest.mark.usefixtures("copilot_home")
def test_codex_gets_the_first_of_equally_new_models_in_the_inventorys_order(
    cli: Cli, emulate: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Two codex models of the same version, listed by the inventory in the reverse of
    their ids' order: "newest" ties, and the inventory's order decides (as the Claude
    family rule does), not the order of the gateway's listing, which is by id."""
    from copilot_host.testing import Inventory, Scenario, chat_model

    both = ("/chat/completions", "/responses")
    inventory = (
        chat_model("gpt-4.1"),
        chat_model("gpt-5.3-codex-max", endpoints=both),
        chat_model("gpt-5.3-codex", endpoints=both),
        chat_model("gpt-5.2-codex", endpoints=both),
    )
    env = emulate(Scenario(inventory=Inventory(models=inventory)))
    seam = _logged_in(cli, env, capfd)
    codex = tmp_path / "codex"
    _echo_argv(codex)
    result = cli("run", "--", str(codex), "exec", "hi", seam=seam, env={"HOME": str(tmp_path)})
    assert result.exit_code == 0, result.stderr
    argv = json.loads(capfd.readouterr()[0])
    assert argv[-7:] == [
        'model="gpt-5.3-codex-max"',
        "-c",
        "model_context_window=128000",
        "-c",
        "model_auto_compact_token_limit=115200",  # no prompt limit listed: the window's
        "exec",
        "hi",
    ]


def test_run_says_in_its_one_line_that_the_plan_can_use_only_auto(
    cli: Cli, emulate: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from copilot_host.testing import Scenario, Usage

    env = emulate(Scenario(usage=Usage(usage_plan="free")))
    seam = _logged_in(cli, env, capfd)
    result = cli("run", "--", sys.executable, "-c", "pass", seam=seam)
    assert result.exit_code == 0, result.stderr
    err = capfd.readouterr()[1] + result.stderr
    lines = [line for line in err.splitlines() if line.startswith("copilot-host run:")]
    assert lines == [
        "copilot-host run: this plan (free) can use only Auto model selection; requests that "
        "name a model are refused: use the model auto"
    ]
