"""SIGINT and SIGTERM anywhere in a command: the documented outcome, then 130 or 143.

Each child is held at a known point (``--hold-*`` in the harness) before the signal is
sent, so what is asserted is the outcome there, never a timing. Marked slow (real
processes); each stays within a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

from copilot_host import TransportError
from copilot_host.store import CredentialStore

from .conftest import Cli

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("copilot_home")]

SIGNALS = [
    pytest.param(signal.SIGINT, 130, "interrupted", id="SIGINT"),
    pytest.param(signal.SIGTERM, 143, "terminated", id="SIGTERM"),
]


def _error_document(code: str) -> str:
    error = {"code": code, "message": code, "retryable": False}
    return json.dumps({"v": 1, "error": error}, separators=(",", ":")) + "\n"


@pytest.mark.parametrize(("signum", "exit_code", "word"), SIGNALS)
def test_a_signal_while_models_json_waits_for_discovery(
    hold: Any, signum: int, exit_code: int, word: str
) -> None:
    child = hold("--logged-in", "--hold-endpoint", "models", "--", "models", "--json")
    assert child.wait_held() == "endpoint"
    child.send(signum)
    assert child.finish() == (exit_code, _error_document(word), f"error: {word}\n")


def test_sigterm_while_models_waits_is_one_line(hold: Any) -> None:
    child = hold("--logged-in", "--hold-endpoint", "models", "--", "models")
    assert child.wait_held() == "endpoint"
    child.send(signal.SIGTERM)
    assert child.finish() == (143, "", "error: terminated\n")


@pytest.mark.parametrize(("signum", "exit_code", "word"), SIGNALS)
def test_a_signal_during_status_json(hold: Any, signum: int, exit_code: int, word: str) -> None:
    child = hold("--logged-in", "--hold-store", "header", "--", "status", "--json")
    assert child.wait_held() == "store"
    child.send(signum)
    assert child.finish() == (exit_code, _error_document(word), f"error: {word}\n")


def test_sigterm_during_logout_leaves_the_login_whole(hold: Any, copilot_home: Path) -> None:
    child = hold("--logged-in", "--hold-store", "delete", "--", "logout")
    assert child.wait_held() == "store"
    child.send(signal.SIGTERM)
    assert child.finish() == (143, "", "error: terminated\n")
    header = CredentialStore().header()
    assert header is not None and header.account == "octocat"
    assert [n for n in os.listdir(copilot_home) if n.startswith(".")] == []  # no temp file


def test_sigterm_during_the_demo_unwinds_and_removes_its_folder(hold: Any, tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # Step 5 registers the models: the demo's own emulator stalls there.
    child = hold("--hold-endpoint", "models", "--", "demo", env={"TMPDIR": str(tmpdir)})
    assert child.wait_held() == "endpoint"
    child.send(signal.SIGTERM)
    code, out, err = child.finish()
    assert (code, err) == (143, "error: terminated\n")
    steps = [line.split("  ")[0] for line in out.splitlines() if line.startswith("ok [")]
    assert steps == [
        "ok [1/10] started the loopback GitHub emulator",
        "ok [2/10] GitHub issued a device code",
        "ok [3/10] authorization simulated",
        "ok [4/10] Copilot access verified, login stored encrypted",
    ]
    # Every `with` on the way out ran: the throwaway home and its key file are gone.
    assert os.listdir(tmpdir) == []


def test_sigterm_before_the_login_wait_is_an_error_event(hold: Any) -> None:
    child = hold(
        "--logged-in",
        "--hold-store",
        "header",
        "--",
        "login",
        "--headless",
        "--json",
        "--force",
    )
    assert child.wait_held() == "store"
    child.send(signal.SIGTERM)
    event = {
        "v": 1,
        "event": "error",
        "code": "terminated",
        "message": "terminated",
        "retryable": False,
    }
    expected = json.dumps(event, separators=(",", ":")) + "\n"
    assert child.finish() == (143, expected, "error: terminated\n")


@pytest.mark.parametrize(("signum", "exit_code", "word"), SIGNALS)
def test_a_signal_at_the_replace_question(
    hold: Any, signum: int, exit_code: int, word: str
) -> None:
    child = hold("--logged-in", "--", "login", stdin=True)
    prompt = b"You are logged in as octocat. Replace that login? [y/N]: "
    assert child.child.stderr.read(len(prompt)) == prompt  # it now waits for an answer
    child.send(signum)
    code, out, err = child.finish()
    # The prompt's line is ended before the error line.
    assert (code, out, err) == (exit_code, "", f"\nerror: {word}; nothing was changed\n")
    header = CredentialStore().header()
    assert header is not None and header.account == "octocat"


def test_sigterm_after_the_login_completed_says_so(hold: Any) -> None:
    # Held at the result line: the login is stored by then.
    child = hold("--fast", "--hold-output", "0", "--", "login", "--headless", "--key-file")
    assert child.wait_held() == "output"
    child.send(signal.SIGTERM)
    code, out, err = child.finish()
    assert (code, out) == (143, "")  # the signal stopped that very write: it stays unsaid
    assert err.splitlines()[-1] == (
        "error: terminated, but the login had just completed: logged in as octocat "
        "(run `copilot-host logout` to undo)"
    )
    assert CredentialStore().header() is not None


def test_a_signal_in_the_middle_of_the_document_adds_no_second_one(hold: Any) -> None:
    # Held inside the write of the models document, as a write blocked on a reader that
    # stopped reading is: an error document after (part of) that one would be no JSON.
    child = hold("--logged-in", "--hold-output", "0", "--", "models", "--json")
    assert child.wait_held() == "output"
    child.send(signal.SIGTERM)
    assert child.finish() == (143, "", "error: terminated\n")


def test_a_second_signal_exits_at_once(hold: Any) -> None:
    # The first signal lands in a clean-up that does not end by itself; the second one
    # must not wait for it. The code is the first signal's.
    child = hold("--logged-in", "--hold-store", "header", "--stubborn", "--", "status", "--json")
    assert child.wait_held() == "store"
    child.send(signal.SIGTERM)
    assert child.wait_held() == "swallowed"
    child.send(signal.SIGINT)
    assert child.finish() == (143, "", "")


def test_a_signal_ignored_by_whoever_started_us_stays_ignored(hold: Any) -> None:
    # A background job of a script starts with SIGINT ignored; it must stay so.
    child = hold(
        "--logged-in", "--hold-store", "header", "--", "status", shell="trap '' INT; exec \"$@\""
    )
    assert child.wait_held() == "store"
    child.send(signal.SIGINT)  # discarded as it is sent: the disposition is SIG_IGN
    child.release()
    code, out, err = child.finish()
    assert (code, err) == (0, "")
    assert out.startswith("Logged in to GitHub as octocat\n")


# -- in-process uses of main ---------------------------------------------------------------


def _handlers() -> tuple[object, object]:
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


def _recording_factory(seen: list[tuple[object, object]]) -> Any:
    def factory(**_: Any) -> Any:
        seen.append(_handlers())
        raise TransportError("offline")

    return factory


def test_click_runner_main_installs_for_the_call_and_restores(cli: Cli) -> None:
    seen: list[tuple[object, object]] = []
    before = _handlers()
    result = cli("models", seam=CliSeam(host_factory=_recording_factory(seen)))
    assert (result.exit_code, result.stderr) == (1, "error: offline\n")
    [during] = seen
    assert during[0] is not before[0] and during[1] is not before[1]
    assert _handlers() == before


def test_main_in_another_thread_leaves_signals_to_the_application(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[tuple[object, object]] = []
    codes: list[object] = []
    seam = CliSeam(host_factory=_recording_factory(seen))

    def run() -> None:
        try:
            main(["models"], obj=seam, prog_name="copilot-host")
        except SystemExit as exc:
            codes.append(exc.code)

    before = _handlers()
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(30)
    assert seen == [before]
    assert codes == [1]
    assert capsys.readouterr().err == "error: offline\n"
    assert _handlers() == before
