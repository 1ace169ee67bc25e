"""The parts serve and run share (cli/_gateway.py) and serve's emulator wording, in
process. (The commands themselves run in child processes: tests/gateway/
test_serve_emulator.py, tests/cli/test_run.py.)"""

from __future__ import annotations

import io
import json
import logging
import re
import stat
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import click
import pytest
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam
from copilot_host_cli._emulated import emulated_account
from copilot_host_cli._failure import CliFailure
from copilot_host_cli._gateway import GatewayNames, LogFile, stop_line
from copilot_host_cli._output import Output
from copilot_host_cli._serve import RequestCount, _listening, access_log

from copilot_host import Secret, register_secret
from copilot_host._safety._text import shell_quote
from copilot_host.gateway import ACCESS_LOGGER
from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.store import GatewayKey
from tests.cli.conftest import Cli


def _banner(home: Path, *, as_json: bool) -> tuple[str, str]:
    with emulated_account() as account, click.Context(main):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            _listening(
                Output(),
                as_json=as_json,
                base_url="http://127.0.0.1:8765/v1",
                key="cph_shown-once",
                key_file=GatewayKey(
                    account.store.home / "gateway-8765.key",
                    shell_quote(account.store.home / "gateway-8765.key"),
                ),
                store=account.store,
                emulator=True,
            )
        folder = account.store.home.parent
        assert folder.exists()
    # The throwaway folder goes with the account.
    assert not folder.exists()
    return out.getvalue(), err.getvalue()


def test_the_emulators_json_line_says_so(tmp_path: Path) -> None:
    stdout, stderr = _banner(tmp_path, as_json=True)
    assert json.loads(stdout) == {
        "v": 1,
        "event": "listening",
        "base_url": "http://127.0.0.1:8765/v1",
        "api_key": "cph_shown-once",
        "emulator": True,
    }
    assert stderr == ""


def test_the_emulators_banner_says_so_and_suggests_the_auth_token(tmp_path: Path) -> None:
    stdout, stderr = _banner(tmp_path, as_json=False)
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[0] == "copilot-host gateway (emulator) listening on http://127.0.0.1:8765/v1"
    assert lines[1].startswith("warning: emulator: the models are the built-in emulator's")
    assert "not logged in" not in stderr and "Serving the Copilot models" not in stderr
    assert "ANTHROPIC_AUTH_TOKEN=$(cat " in stderr and "ANTHROPIC_API_KEY" not in stderr
    assert "copilot-host run -- claude" in stderr


def test_the_log_file_takes_access_lines_warnings_and_the_stop_line(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    secret = Secret("cph_" + "s" * 43)
    register_secret(secret)
    log = LogFile(path)
    counted = RequestCount()
    undo = access_log(log, counted, stderr=False)
    try:
        # The app hands its access lines to counted.line (create_app's access_line).
        counted.line("GET /v1/models model=- status=200")
        counted.line(f"key {secret.reveal()} and Bearer abcdefgh12345\u200b")
        logging.getLogger(ACCESS_LOGGER).warning("budget reached")
        logging.getLogger("copilot_host.gateway").warning("an alias lost its model")
        logging.getLogger("copilot_host.gateway").info("not for the log file")
    finally:
        undo()
    counted.line("after the undo: counted, written nowhere")
    log.write(stop_line(counted.requests, emulator=False))
    log.close()
    lines = path.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines[:4]] == [
        "GET /v1/models model=- status=200",
        "key [REDACTED] and [REDACTED]",
        "budget reached",
        "an alias lost its model",
    ]
    # Every line but the stop line starts with the local time, to the second.
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", line.split(" ", 1)[0]) for line in lines[:4]
    )
    assert secret.reveal() not in path.read_text()
    assert lines[-1] == "copilot-host gateway stopped after 3 requests"
    assert "not for the log file" not in path.read_text()
    assert "after the undo" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Undone: nothing more reaches the file's handlers.
    assert not logging.getLogger("copilot_host.gateway").handlers
    assert not logging.getLogger(ACCESS_LOGGER).handlers


def test_stop_lines() -> None:
    assert stop_line(1, emulator=True) == "copilot-host gateway (emulator) stopped after 1 request"
    assert stop_line(0, emulator=False) == "copilot-host gateway stopped after 0 requests"


def test_the_log_file_must_be_a_regular_file_of_ours(tmp_path: Path) -> None:
    with pytest.raises(CliFailure, match="No such file or directory"):
        LogFile(tmp_path / "missing-folder" / "x.log")


def test_names_are_checked_for_spelling() -> None:
    GatewayNames({"fast": "gpt-4.1"}, "gpt-4.1").check()
    assert GatewayNames({"fast": "gpt-4.1"}).given and GatewayNames(default="x").given
    assert not GatewayNames().given
    with pytest.raises(click.UsageError, match="NAME=MODEL"):
        GatewayNames({"a b": "gpt-4.1"}).check()
    with pytest.raises(click.UsageError, match="default model"):
        GatewayNames(default="a b").check()


@pytest.mark.usefixtures("copilot_home")
def test_with_a_login_a_bad_alias_is_a_usage_error_before_serve_listens(
    cli: Cli, emulate: Any
) -> None:
    env = emulate()
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    emulator = env.emulator
    seam = CliSeam(
        async_host_factory=lambda *, store, clock: AsyncGitHubCopilotHost(
            store=store, transport=emulator.async_transport()
        ),
        upstream_transport=emulator.async_transport,
    )
    result = cli("serve", "--port", "0", "--json", "--model-alias", "opus=claude-opus-9", seam=seam)
    assert result.exit_code == 2
    assert result.stdout == ""  # it never listened
    assert "--model-alias opus=claude-opus-9: this account has no model" in result.stderr


def test_the_plan_is_asked_within_its_bound_and_never_fails_the_start() -> None:
    """``plan_line``: the Auto-only line, else None, whatever the host does."""
    import asyncio

    from copilot_host_cli._gateway import plan_line

    from copilot_host import CopilotUsage, ServerError

    def usage(**fields: Any) -> CopilotUsage:
        return CopilotUsage(
            login="o", plan="free", unit="requests", reset_at=None, quotas=(), **fields
        )

    class Host:
        def __init__(self, answer: Any, *, logged_in: bool = True) -> None:
            self.answer, self.logged_in, self.asked = answer, logged_in, 0

        def availability(self) -> object | None:
            return object() if self.logged_in else None

        async def usage(self) -> CopilotUsage:
            self.asked += 1
            if self.answer == "hang":
                await asyncio.Event().wait()
            if isinstance(self.answer, BaseException):
                raise self.answer
            return self.answer  # type: ignore[no-any-return]

    auto = usage(auto_only=True, sku="free_limited_copilot")
    assert asyncio.run(plan_line(Host(auto))) == (
        "this plan (free) can use only Auto model selection; requests that name a model "
        "are refused: use the model auto"
    )
    assert asyncio.run(plan_line(Host(usage()))) is None
    assert asyncio.run(plan_line(Host(ServerError("busy")))) is None
    assert asyncio.run(plan_line(Host(ValueError("odd")))) is None
    assert asyncio.run(plan_line(Host("hang"), timeout=0.01)) is None
    logged_out = Host(auto, logged_in=False)
    assert asyncio.run(plan_line(logged_out)) is None and logged_out.asked == 0


class _Asked(Exception):
    """Raised by the recording GatewayServer below once it has seen its options."""


@pytest.mark.parametrize("command", ["serve", "run"])
def test_serve_and_run_ask_for_the_process_wide_settings(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both own their process, so both take what GatewayServer leaves off by default for an
    embedding application: the open-file limit and malloc's thresholds (serve, in the main
    thread, the signals and a queued stderr too)."""
    import socket

    from copilot_host import gateway

    asked: dict[str, Any] = {}

    class Recording(gateway.GatewayServer):
        def __init__(self, **options: Any) -> None:
            asked.update(options)
            raise _Asked

    monkeypatch.setattr(gateway, "GatewayServer", Recording)
    with socket.socket() as listener, pytest.raises(_Asked):
        if command == "serve":
            from copilot_host_cli._serve import _run as serve_run

            serve_run(listener, None, "key", GatewayNames(), lambda: None)  # type: ignore[arg-type]
        else:
            from copilot_host_cli._run import _Gateway

            _Gateway(listener, None, "key", GatewayNames())  # type: ignore[arg-type]
    assert asked["raise_open_files"] is True
    assert asked["tune_malloc"] is True
    wanted = command == "serve"
    assert asked.get("signals", False) is wanted
    assert asked.get("queue_stderr", False) is wanted
