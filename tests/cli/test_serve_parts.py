"""serve's start-up parts in-process: the listening socket and the key file. (The command
itself runs in a child process: tests/gateway/test_serve.py.)"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import secrets
import socket
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import click
import pytest
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam, error_sink, make_async_host, make_host
from copilot_host_cli._failure import CliFailure, Problem
from copilot_host_cli._output import Output
from copilot_host_cli._serve import (
    KEY_PREFIX,
    _error_event,
    _key_file,
    _listening,
    access_log,
    listen,
    new_key,
)

from copilot_host import Secret
from copilot_host.gateway import ACCESS_LOGGER
from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
from copilot_host.store import CredentialStore, GatewayKey
from tests._clock import FakeClock


def test_it_listens_on_a_free_loopback_port() -> None:
    with listen("127.0.0.1", 0) as listener:
        address, port = listener.getsockname()
        assert (address, listener.proto) == ("127.0.0.1", socket.IPPROTO_TCP)
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass


def test_a_port_in_use_names_the_port_and_the_way_out() -> None:
    with listen("127.0.0.1", 0) as first:
        port = first.getsockname()[1]
        with pytest.raises(CliFailure) as caught:
            listen("127.0.0.1", port)
    assert caught.value.problem.code == "port_in_use"
    assert f"127.0.0.1:{port} is already in use" in caught.value.problem.message
    assert "--port 0" in caught.value.problem.message


def test_an_address_this_machine_lacks_is_address_unavailable() -> None:
    # TEST-NET-1 (RFC 5737): on no interface of this machine, so bind() fails at once.
    with pytest.raises(CliFailure) as caught:
        listen("192.0.2.1", 0)
    assert caught.value.problem.code == "address_unavailable"
    assert "192.0.2.1:0" in caught.value.problem.message


def test_keys_are_long_random_and_recognisable() -> None:
    keys = {new_key() for _ in range(32)}
    assert len(keys) == 32
    assert all(k.startswith(KEY_PREFIX) and len(k) >= len(KEY_PREFIX) + 43 for k in keys)


def test_a_second_gateway_on_the_port_is_port_in_use(copilot_home: Path) -> None:
    store = CredentialStore(copilot_home)
    with _key_file(store, 8765, new_key()) as key_file:
        with pytest.raises(CliFailure) as caught, _key_file(store, 8765, new_key()):
            pass
        assert caught.value.problem.code == "port_in_use"
        assert str(key_file.path) in caught.value.problem.message


def test_a_failure_is_one_versioned_json_event() -> None:
    problem = Problem("port_in_use", "127.0.0.1:1 is already in use", retryable=False)
    assert _error_event(problem) == {
        "v": 1,
        "event": "error",
        "code": "port_in_use",
        "message": "127.0.0.1:1 is already in use",
        "retryable": False,
    }


def _listening_output(
    copilot_home: Path, *, as_json: bool, logged_in: bool
) -> tuple[str, str, object]:
    """What the listening report writes (stdout, stderr) and the error sink it leaves."""
    store = CredentialStore(copilot_home, key_file=True)
    if logged_in:
        store.save("octocat", Secret("gho_" + "k" * 36))
    with click.Context(main) as ctx, redirect_stdout(io.StringIO()) as out:
        err = io.StringIO()
        with redirect_stderr(err):
            _listening(
                Output(),
                as_json=as_json,
                base_url="http://127.0.0.1:8765/v1",
                key="cph_shown-once",
                key_file=GatewayKey(copilot_home / "gateway-8765.key", "KEYFILE"),
                store=store,
            )
        sink = error_sink(ctx)
    return out.getvalue(), err.getvalue(), sink


def test_json_mode_prints_one_listening_event_and_nothing_after(copilot_home: Path) -> None:
    stdout, stderr, sink = _listening_output(copilot_home, as_json=True, logged_in=True)
    assert [json.loads(line) for line in stdout.splitlines()] == [
        {
            "v": 1,
            "event": "listening",
            "base_url": "http://127.0.0.1:8765/v1",
            "api_key": "cph_shown-once",
        }
    ]
    assert stderr == ""
    assert callable(sink)  # a later failure is told on stderr only, never after this line


def test_people_are_told_the_account_the_key_and_how_to_point_tools_at_it(
    copilot_home: Path,
) -> None:
    stdout, stderr, _sink = _listening_output(copilot_home, as_json=False, logged_in=True)
    assert stdout == ""
    assert "listening on http://127.0.0.1:8765/v1" in stderr
    assert "Serving the Copilot models of octocat." in stderr
    assert "  cph_shown-once\n" in stderr
    assert 'Anthropic(base_url="http://127.0.0.1:8765", api_key=KEY)' in stderr
    assert "$(cat KEYFILE)" in stderr  # the path as the store quotes it for a shell


def test_logged_out_it_says_requests_get_503_until_a_login(copilot_home: Path) -> None:
    _stdout, stderr, _sink = _listening_output(copilot_home, as_json=False, logged_in=False)
    assert "not logged in: requests get 503 until you run `copilot-host login`" in stderr


def test_access_lines_reach_stderr_redacted_and_the_undo_puts_logging_back() -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    before = (logger.level, logger.propagate, list(logger.handlers))
    token = "gho_" + secrets.token_hex(18)
    err = io.StringIO()
    with redirect_stderr(err):
        undo = access_log()
        try:
            logger.info("POST /v1/chat/completions 200 %s", token)
            logger.debug("not an access line")
        finally:
            undo()
        logger.info("after the undo")
    (line,) = err.getvalue().splitlines()
    assert line.endswith(" POST /v1/chat/completions 200 [REDACTED]")
    assert token not in err.getvalue()
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


@pytest.mark.parametrize("clock", [None, FakeClock()], ids=["real-clock", "seam-clock"])
def test_the_cli_makes_the_real_hosts_unless_a_test_substitutes_them(
    clock: FakeClock | None, copilot_home: Path
) -> None:
    store = CredentialStore(copilot_home, key_file=True)
    with click.Context(main, obj=CliSeam(clock=clock)):
        host = make_host(store)
        async_host = make_async_host(store)
    try:
        assert type(host) is GitHubCopilotHost and host.store is store
        assert type(async_host) is AsyncGitHubCopilotHost and async_host.store is store
        if clock is not None:  # the seam's clock, not the system's
            assert host._clock is clock and async_host._clock is clock
    finally:
        host.close()
        asyncio.run(async_host.aclose())


def test_a_hard_linked_key_file_name_never_writes_or_empties_the_other_file(
    copilot_home: Path, tmp_path: Path
) -> None:
    """A hard link planted at the key file's name: the key goes into a new file put at the
    name (written aside, then renamed), so the other file is neither written nor, on exit,
    emptied."""
    other = tmp_path / "someone-elses-file"
    other.write_text("untouched\n")
    other.chmod(0o600)
    os.link(other, copilot_home / "gateway-8765.key")
    store = CredentialStore(copilot_home)
    with store.gateway_key(8765, "cph_x" * 4) as key_file:
        assert key_file.path.read_text() == "cph_x" * 4 + "\n"
        assert os.stat(key_file.path).st_nlink == 1
        assert other.read_text() == "untouched\n"
    assert other.read_text() == "untouched\n"
    assert not (copilot_home / "gateway-8765.key").exists()
