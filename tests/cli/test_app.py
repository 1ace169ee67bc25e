"""The group: --help/--version, usage errors, one-line failures, --debug, exit codes."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from typing import Any

import pytest
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

from copilot_host import Secret, TransportError, register_secret
from copilot_host._version import __version__

from .conftest import Cli, LeakGuard, canary_token

COMMANDS = ["login", "logout", "status", "models", "usage", "doctor", "demo", "serve", "run"]


def test_main_is_a_click_group() -> None:
    import click

    assert isinstance(main, click.Group)
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command)
        assert command.name == name
    assert main.get_command(ctx, "nope") is None


def test_listing_matches_each_commands_own_help() -> None:
    import click
    from copilot_host_cli._app import COMMANDS as TABLE

    ctx = click.Context(main)
    for name, (_module, short) in TABLE.items():
        command = main.get_command(ctx, name)
        assert command is not None and command.help is not None
        assert command.help.splitlines()[0] == short


def test_version_prints_the_constant(cli: Cli) -> None:
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"copilot-host {__version__}\n"
    assert result.stderr == ""


@pytest.mark.parametrize("args", [["--help"], ["-h"], *([c, "--help"] for c in COMMANDS)])
def test_help_everywhere_with_examples(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: copilot-host")
    assert "Examples:\n" in result.stdout
    # Every example names a real command of ours.
    for line in result.stdout.split("Examples:\n", 1)[1].splitlines():
        if not line.strip():
            break
        words = line.split()
        assert words[0] in ("copilot-host", "NO_COLOR=1"), line
        invoked = words[1] if words[0] == "copilot-host" else words[2]
        assert invoked in COMMANDS, line


def test_group_help_lists_exit_codes(cli: Cli) -> None:
    text = cli("--help").stdout
    for code in ("0 ok", "1 failed", "2 usage", "130", "143"):
        assert code in text


@pytest.mark.parametrize(
    "args", [["nope"], ["status", "--nope"], ["login", "extra"], ["models", "--json=1"]]
)
def test_usage_errors_exit_2(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Error:" in result.stderr


def _raising(exc: BaseException) -> Any:
    def factory(**_: Any) -> Any:
        raise exc

    return factory


def test_library_error_is_one_line_exit_1(cli: Cli) -> None:
    seam = CliSeam(
        host_factory=_raising(TransportError("could not reach GitHub; check the network"))
    )
    result = cli("models", seam=seam)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: could not reach GitHub; check the network\n"


def test_json_mode_error_is_also_a_document(cli: Cli) -> None:
    import json

    seam = CliSeam(host_factory=_raising(TransportError("down", code="timeout")))
    result = cli("models", "--json", seam=seam)
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "v": 1,
        "error": {"code": "timeout", "message": "down", "retryable": True},
    }
    assert result.stderr == "error: down\n"


def test_unexpected_error_shows_its_type_only(cli: Cli, leak_guard: LeakGuard) -> None:
    token = leak_guard.canary(canary_token())
    seam = CliSeam(host_factory=_raising(RuntimeError(f"boom {token}")))
    result = cli("models", seam=seam)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "unexpected RuntimeError" in result.stderr
    assert "--debug" in result.stderr
    assert "Traceback" not in result.stderr


def test_debug_shows_a_redacted_traceback(cli: Cli, leak_guard: LeakGuard) -> None:
    shaped = leak_guard.canary(canary_token())
    # A secret of no recognisable shape is caught because it was registered as a Secret.
    registered = Secret(leak_guard.canary("plain" + canary_token("")))
    register_secret(registered)
    seam = CliSeam(host_factory=_raising(RuntimeError(f"boom {shaped} {registered.reveal()}")))
    result = cli("--debug", "models", seam=seam)
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert "RuntimeError: boom [REDACTED] [REDACTED]" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: unexpected RuntimeError")


def test_debug_logs_library_records_redacted(cli: Cli, leak_guard: LeakGuard) -> None:
    token = leak_guard.canary(canary_token())

    def factory(**_: Any) -> Any:
        logging.getLogger("copilot_host.github").debug("sending Authorization: token %s", token)
        raise TransportError("offline")

    result = cli("--debug", "models", seam=CliSeam(host_factory=factory))
    assert "sending Authorization: token [REDACTED]" in result.stderr or (
        "[REDACTED]" in result.stderr
    )
    # Without --debug the DEBUG record does not appear at all.
    quiet = cli("models", seam=CliSeam(host_factory=factory))
    assert "sending" not in quiet.stderr
    assert quiet.stderr == "error: offline\n"


def test_logging_handlers_are_removed_after_each_invocation(cli: Cli) -> None:
    before = list(logging.getLogger().handlers)
    cli("--debug", "status")
    cli("status")
    assert logging.getLogger().handlers == before


def test_keyboard_interrupt_exits_130(cli: Cli) -> None:
    result = cli("models", seam=CliSeam(host_factory=_raising(KeyboardInterrupt())))
    assert result.exit_code == 130
    assert result.stderr == "error: interrupted\n"


def test_no_color_and_non_tty_have_no_escapes(cli: Cli) -> None:
    for env in ({"NO_COLOR": "1"}, {}):
        result = cli("logout", env=env)
        assert "\x1b" not in result.stdout + result.stderr


def _run_in_pty(args: list[str], env_extra: dict[str, str]) -> str:
    """Run ``main(args)`` in a child whose stdout and stderr are a real pseudo-terminal."""
    import os
    import pty

    code = f"from copilot_host_cli import main\nmain({args!r}, prog_name='copilot-host')\n"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | env_extra
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        os.execve(sys.executable, [sys.executable, "-c", code], env)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    os.close(fd)
    return b"".join(chunks).decode()


def test_styles_on_a_terminal_none_with_no_color(copilot_home: Any) -> None:
    styled = _run_in_pty(["status"], {})
    assert "\x1b[2m" in styled  # the dim hint
    plain = _run_in_pty(["status"], {"NO_COLOR": "1"})
    assert "Not logged in." in plain
    assert "copilot-host login" in plain
    assert "\x1b[" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", styled) == plain


def test_error_line_is_red_on_a_terminal_and_plain_with_no_color(tmp_path: Any) -> None:
    home = tmp_path / "insecure"
    home.mkdir()
    home.chmod(0o755)
    env = {"COPILOT_HOST_HOME": str(home)}
    assert "\x1b[31m" in _run_in_pty(["status"], env)
    plain = _run_in_pty(["status"], {**env, "NO_COLOR": "1"})
    assert plain.startswith("error: ")
    assert "\x1b[" not in plain


def test_python_dash_m_style_invocation_of_main() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from copilot_host_cli import main; main(['--version'])"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == f"copilot-host {__version__}\n"
