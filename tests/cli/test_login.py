"""login through CliRunner against the loopback emulator (via the private test seam)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Callable
from typing import Any

import keyring
import keyring.backends.fail
import pytest
from copilot_host_cli._wait import DEVICE_URL

from copilot_host.github._urls import VERIFICATION_URI
from copilot_host.store import CredentialStore
from copilot_host.testing import DeviceFlow, Faults, Scenario, Session

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def _opening_into(opened: list[str]) -> Callable[[str], bool]:
    """A browser opener that records each page and says it opened."""

    def open_browser(url: str) -> bool:
        opened.append(url)
        return True

    return open_browser


def test_the_page_we_open_is_the_adapters_fixed_page() -> None:
    assert DEVICE_URL == VERIFICATION_URI == "https://github.com/login/device"


def test_login_opens_the_fixed_page_and_stores_the_login(cli: Cli, emulate: Any) -> None:
    opened: list[str] = []
    env = emulate(open_browser=_opening_into(opened))
    result = cli("login", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Logged in to GitHub as octocat.\n"
    assert opened == [DEVICE_URL]
    assert "WDJB-MJHT" in result.stderr
    assert "https://github.com/login/device" in result.stderr
    assert f"Opened {DEVICE_URL} in your browser" in result.stderr
    assert "OS keyring (MemoryKeyring)" in result.stderr
    header = CredentialStore().header()
    assert header is not None
    assert header.account == "octocat"
    # Entitlement was verified (one exchange) before the credential was stored.
    assert len(env.emulator.requests_to("copilot_token")) == 1


def test_login_falls_back_to_instructions_without_a_browser(cli: Cli, emulate: Any) -> None:
    env = emulate(open_browser=lambda url: False)
    result = cli("login", seam=env.seam)
    assert result.exit_code == 0
    assert "Could not open a browser here: open the address above" in result.stderr


def test_headless_never_opens_a_browser(cli: Cli, emulate: Any) -> None:
    opened: list[str] = []
    env = emulate(open_browser=_opening_into(opened))
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 0
    assert opened == []
    assert "Open that address on any device" in result.stderr
    assert "WDJB-MJHT" in result.stderr


def test_json_events_on_stdout_people_text_on_stderr(cli: Cli, emulate: Any) -> None:
    env = emulate()
    result = cli("login", "--json", "--headless", seam=env.seam)
    assert result.exit_code == 0
    code, authorized = _events(result.stdout)
    assert code["v"] == 1
    assert code["event"] == "device_code"
    assert code["user_code"] == "WDJB-MJHT"
    assert code["verification_uri"] == "https://github.com/login/device"
    assert 890 <= code["expires_in"] <= 900
    assert code["interval"] == 5
    assert code["deadline"].endswith("Z")
    header = CredentialStore().header()
    assert header is not None
    assert authorized == {
        "v": 1,
        "event": "authorized",
        "account": "octocat",
        "login_id": header.login_id,
        "protection": "keyring",
    }
    assert "WDJB-MJHT" in result.stderr  # people still see the code


@pytest.mark.parametrize(
    ("scenario", "code", "words"),
    [
        (Scenario(login=DeviceFlow(login_result="access_denied")), "access_denied", "denied"),
        (Scenario(login=DeviceFlow(login_result="expired_token")), "expired_token", "expired"),
        (
            Scenario(session=Session(entitlement="no_copilot_access")),
            "no_copilot_access",
            "Copilot",
        ),
        (Scenario(faults=Faults(malformed=frozenset({"device_code"}))), "bad_response", ""),
    ],
)
def test_failed_logins_store_nothing(
    cli: Cli, emulate: Any, scenario: Scenario, code: str, words: str
) -> None:
    env = emulate(scenario)
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 1
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: ")
    assert words in last
    assert "Traceback" not in result.stderr
    assert CredentialStore().header() is None

    as_json = cli("login", "--headless", "--json", seam=emulate(scenario).seam)
    assert as_json.exit_code == 1
    error = _events(as_json.stdout)[-1]
    assert error["event"] == "error"
    assert error["code"] == code
    # The same words both times; GitHub's request id differs from one answer to the next.
    same = re.compile(r" \(GitHub request id [0-9A-F:]+\)$")
    assert same.sub("", error["message"]) == same.sub("", last.removeprefix("error: "))
    assert isinstance(error["retryable"], bool)


def _login_id() -> str:
    header = CredentialStore().header()
    assert header is not None
    return header.login_id


def test_already_logged_in_headless_and_json_refuse_naming_force(cli: Cli, emulate: Any) -> None:
    env = emulate()
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    first = _login_id()
    headless = cli("login", "--headless", seam=env.seam)
    assert headless.exit_code == 1
    assert headless.stderr == (
        "error: already logged in as octocat; rerun with --force to replace that login\n"
    )
    as_json = cli("login", "--json", seam=env.seam)
    assert as_json.exit_code == 1
    assert _events(as_json.stdout) == [
        {
            "v": 1,
            "event": "error",
            "code": "already_logged_in",
            "message": "already logged in as octocat; rerun with --force to replace that login",
            "retryable": False,
        }
    ]
    assert _login_id() == first
    forced = cli("login", "--headless", "--force", seam=env.seam)
    assert forced.exit_code == 0
    assert _login_id() != first


def test_already_logged_in_asks_before_replacing(cli: Cli, emulate: Any) -> None:
    env = emulate()
    assert cli("login", seam=env.seam).exit_code == 0
    first = _login_id()

    kept = cli("login", seam=env.seam, input="n\n")
    assert kept.exit_code == 0
    assert "You are logged in as octocat. Replace that login?" in kept.stderr
    assert "nothing changed" in kept.stderr
    assert kept.stdout == ""
    assert _login_id() == first

    no_answer = cli("login", seam=env.seam, input="")
    assert no_answer.exit_code == 1
    assert "--force" in no_answer.stderr.splitlines()[-1]
    assert _login_id() == first

    replaced = cli("login", seam=env.seam, input="y\n")
    assert replaced.exit_code == 0
    assert replaced.stdout == "Logged in to GitHub as octocat.\n"
    assert _login_id() != first


def test_no_usable_keyring_names_key_file_and_stores_nothing(cli: Cli, emulate: Any) -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())
    env = emulate()
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 1
    line = result.stderr.splitlines()[-1]
    assert line.startswith("error: ")
    assert "--key-file" in line
    assert "anyone who can read your files" in line
    assert CredentialStore().header() is None
    # Refused before a code was requested or shown: nobody authorizes a login that
    # could not be kept.
    assert env.emulator.requests == ()
    assert "github.com/login/device" not in result.stderr

    with_file = cli("login", "--headless", "--key-file", seam=env.seam)
    assert with_file.exit_code == 0, with_file.stderr
    header = CredentialStore().header()
    assert header is not None
    assert header.protection.kind == "key-file"
    assert "key file" in with_file.stderr


def test_plain_progress_lines_when_not_a_terminal(cli: Cli, emulate: Any) -> None:
    env = emulate(Scenario(login=DeviceFlow(pending_polls=2)))
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 0
    assert "Waiting for authorization (the code expires in 15:00)..." in result.stderr
    assert "\r" not in result.stderr
    assert "\x1b" not in result.stderr


def test_live_countdown_on_a_terminal(cli: Cli, emulate: Any) -> None:
    holder: dict[str, Any] = {}
    ticks = threading.Event()

    def approve_soon() -> None:
        # Approve once the countdown has had time to draw a few frames.
        threading.Timer(0.3, holder["env"].emulator.authorize).start()

    def sleep(seconds: float) -> None:
        ticks.wait(0.02)

    env = emulate(
        Scenario(login=DeviceFlow(auto_approve=False)),
        err_is_tty=True,
        tick=0.02,
        sleep=sleep,
        on_waiting=approve_soon,
    )
    holder["env"] = env
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 0, result.stderr
    frames = result.stderr.count("\r\x1b[2K")
    assert frames >= 3
    assert "left (Ctrl-C to cancel)" in result.stderr
    assert "15:00 left" in result.stderr or "14:59 left" in result.stderr
    # The live line is erased before the result is printed.
    assert result.stdout == "Logged in to GitHub as octocat.\n"


def test_sigint_during_the_wait_cancels_in_process(cli: Cli, emulate: Any) -> None:
    env = emulate(
        Scenario(login=DeviceFlow(auto_approve=False)),
        sleep=None,
        tick=0.02,
        on_waiting=lambda: os.kill(os.getpid(), signal.SIGINT),
    )
    before = signal.getsignal(signal.SIGINT)
    result = cli("login", "--headless", "--json", seam=env.seam)
    assert result.exit_code == 130
    events = _events(result.stdout)
    assert events[-1]["event"] == "error"
    assert events[-1]["code"] == "login_cancelled"
    assert result.stderr.splitlines()[-1] == "error: login cancelled; nothing was stored"
    assert CredentialStore().header() is None
    assert signal.getsignal(signal.SIGINT) is before
    # No poll succeeded, and the wait ended long before the 5 s interval.
    assert not env.emulator.requests_to("copilot_token")


def _plant_damaged_record() -> bytes:
    record = CredentialStore().record_path
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"garbage\n")
    finally:
        os.close(fd)
    return record.read_bytes()


def test_a_failure_during_the_wait_stops_the_login_behind_it(cli: Cli, emulate: Any) -> None:
    # The main thread fails while the worker waits for the first poll: the worker must be
    # cancelled and gone when the command ends, not left to complete the login later.
    def broken_browser(_url: str) -> bool:
        raise RuntimeError("no browser")

    env = emulate(Scenario(login=DeviceFlow(interval=1)), sleep=None, open_browser=broken_browser)
    before = set(threading.enumerate())  # an earlier test's worker may still wind down
    result = cli("login", "--key-file", seam=env.seam)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].startswith("error: unexpected RuntimeError")
    workers = [t for t in threading.enumerate() if t.name == "copilot-host-login"]
    assert [t for t in workers if t not in before] == []
    assert not env.emulator.requests_to("access_token")
    assert CredentialStore().header() is None


@pytest.mark.parametrize(
    "args",
    [("--headless",), ("--headless", "--force", "--key-file"), ("--json",), ()],
    ids=["headless", "force-key-file", "json", "interactive"],
)
def test_a_damaged_record_is_no_login_to_protect(
    cli: Cli, emulate: Any, args: tuple[str, ...]
) -> None:
    damaged = _plant_damaged_record()
    env = emulate()
    result = cli("login", *args, seam=env.seam, input="")  # no question is asked
    assert result.exit_code == 0, result.stderr
    assert "Replace that login?" not in result.stderr
    assert "damaged" in result.stderr
    header = CredentialStore().header()
    assert header is not None and header.account == "octocat"
    aside = CredentialStore().set_aside()
    assert [p.read_bytes() for p in aside] == [damaged]
    assert f"set aside at {aside[0]}" in result.stderr


def test_a_failed_login_leaves_a_damaged_record_where_it_was(cli: Cli, emulate: Any) -> None:
    damaged = _plant_damaged_record()
    env = emulate(Scenario(login=DeviceFlow(login_result="access_denied")))
    result = cli("login", "--headless", seam=env.seam)
    assert result.exit_code == 1
    assert CredentialStore().record_path.read_bytes() == damaged
    assert CredentialStore().set_aside() == ()


def test_a_folder_that_cannot_be_created_fails_before_a_code_is_shown(
    cli: Cli, emulate: Any
) -> None:
    import secrets

    home = f"/proc/copilot-host-test-{secrets.token_hex(6)}"
    env = emulate()
    result = cli(
        "login", "--headless", "--key-file", seam=env.seam, env={"COPILOT_HOST_HOME": home}
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error: Could not create the credential store folder")
    assert result.stderr.count("\n") == 1
    assert env.emulator.requests == ()
