"""``copilot-host doctor`` when things fail in the ways test_doctor.py does not show: a store
that cannot be read at all, a keyring that is locked, failing or locks between two reads, a
network that is down, GitHub failing or answering garbage, a plan GitHub does not show, an
identity refused for another reason than its version, and an exchange answer without a
``Date``; each failed check with the fix that applies."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import keyring
import keyring.errors
import pytest
from copilot_host_cli._context import CliSeam

from copilot_host import Secret
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.store._record import MAGIC
from copilot_host.testing import (
    Faults,
    GitHubEmulator,
    Inventory,
    RawAnswer,
    Session,
    minimal_models,
)
from tests.conftest import MemoryKeyring

from .conftest import Cli
from .test_doctor import FREE, _doctor, _failed, _logged_in, _scenario

pytestmark = pytest.mark.usefixtures("copilot_home")

NEEDS_THE_STORE = FREE[1:]


def _not_checked(checks: dict[str, Any], codes: list[str]) -> list[str]:
    return [code for code in codes if checks[code]["ok"] is not None]


def _set_byte(record: Path, at: int, change: Callable[[int], int]) -> None:
    """The login record with one byte changed, as damage or another version would."""
    data = bytearray(record.read_bytes())
    data[at] = change(data[at])
    record.write_bytes(bytes(data))


# -- the store cannot be read ------------------------------------------------------------


def test_a_record_written_by_a_newer_copilot_host_says_to_upgrade(
    cli: Cli, emulate: Any, copilot_home: Path
) -> None:
    env = _logged_in(cli, emulate)
    _set_byte(copilot_home / "credential", len(MAGIC), lambda _old: 9)  # its format version
    sent = len(env.emulator.requests)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["store"])
    assert "written by a newer copilot-host" in checks["store"]["message"]
    assert checks["store"]["fix"] == (
        "upgrade copilot-host (pip install --upgrade copilot-host): a newer version wrote "
        "this record"
    )
    # Nothing that needs the store claims "not logged in": it says why it was not checked.
    assert _not_checked(checks, NEEDS_THE_STORE) == []
    assert checks["login"]["message"] == "not checked: the store cannot be read"
    assert checks["keyring"]["message"] == "not checked: the store cannot be read (see store)"
    assert "see store" in checks["availability"]["message"]
    assert len(env.emulator.requests) == sent  # GitHub was not asked


def test_a_store_folder_behind_a_symbolic_link_loop_says_what_failed(
    cli: Cli, emulate: Any, tmp_path: Path
) -> None:
    env = emulate(_scenario())
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    home = str(loop / "copilot-host")
    result = cli("doctor", "--json", seam=env.seam, env={"COPILOT_HOST_HOME": home})
    checks = {c["code"]: c for c in json.loads(result.stdout)["checks"]}
    assert result.exit_code == 1
    assert checks["store"]["ok"] is False
    assert "Too many levels of symbolic links" in checks["store"]["message"]
    assert checks["store"]["fix"] == "check the store folder's permissions and free space"
    assert _not_checked(checks, NEEDS_THE_STORE) == []
    assert env.emulator.requests == ()


# -- the keyring -------------------------------------------------------------------------


class _Keyring(MemoryKeyring):
    """The keyring that held the key at login, answering ``get_password`` with ``answer``
    from the ``after``-th call on (the calls before it answer as usual)."""

    def __init__(self, items: dict[tuple[str, str], str], answer: Callable[[], str], after: int):
        super().__init__()
        self.items = dict(items)
        self.calls = 0
        self._answer = answer
        self._after = after

    def get_password(self, service: str, username: str) -> str | None:
        self.calls += 1
        if self.calls > self._after:
            return self._answer()
        return super().get_password(service, username)


def _locked() -> str:
    raise keyring.errors.KeyringLocked("the collection is locked")


def _broken() -> str:
    raise RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")


@pytest.mark.parametrize(
    ("answer", "said", "fix"),
    [
        (_locked, "The OS keyring is locked", "unlock the OS keyring"),
        (_broken, "The OS keyring failed (RuntimeError)", "start or unlock the OS keyring"),
    ],
    ids=["locked", "failing"],
)
def test_a_keyring_that_cannot_give_the_key_says_what_to_do(
    cli: Cli,
    emulate: Any,
    memory_keyring: MemoryKeyring,
    answer: Callable[[], str],
    said: str,
    fix: str,
) -> None:
    env = _logged_in(cli, emulate)
    keyring.set_keyring(_Keyring(memory_keyring.items, answer, after=0))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["keyring"])
    assert checks["keyring"]["message"].startswith(said)
    assert checks["keyring"]["fix"].startswith(fix)
    # What the backend's exception said is never shown.
    assert "freedesktop" not in checks["keyring"]["message"]
    assert checks["availability"]["ok"] is None


def test_a_keyring_that_locks_after_the_keyring_check_fails_availability_with_its_fix(
    cli: Cli, emulate: Any, memory_keyring: MemoryKeyring
) -> None:
    """The screen locked (and the keyring with it) between the keyring check and the
    session exchange, which loads the login again."""
    env = _logged_in(cli, emulate)
    keyring.set_keyring(_Keyring(memory_keyring.items, _locked, after=1))
    sent = len(env.emulator.requests)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert checks["keyring"]["ok"] is True
    assert checks["availability"]["message"].startswith("The OS keyring is locked")
    assert checks["availability"]["fix"].startswith("unlock the OS keyring")
    assert len(env.emulator.requests) == sent  # no exchange without the login's token


def test_a_record_that_fails_its_integrity_check_is_kept_aside_with_its_fix(
    cli: Cli, emulate: Any, copilot_home: Path
) -> None:
    env = _logged_in(cli, emulate)
    # The last byte of the tag: the header still reads.
    _set_byte(copilot_home / "credential", -1, lambda old: old ^ 0x01)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["keyring"])
    assert checks["store"]["ok"] is True and checks["login"]["ok"] is True
    assert "failed its integrity check" in checks["keyring"]["message"]
    assert checks["keyring"]["fix"] == (
        "run `copilot-host login` to replace the damaged record (it is kept aside)"
    )
    assert CredentialStore().set_aside() != ()


# -- GitHub ------------------------------------------------------------------------------


def _stored(env: Any) -> None:
    """The record ``login`` writes, with the emulator's token (no request sent)."""
    CredentialStore().save("octocat", Secret(env.emulator.github_token))


def test_a_network_that_is_down_says_to_check_it(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate)
    env.emulator.stop()
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert checks["availability"]["fix"] == (
        "check the network (and HTTPS_PROXY), then run `copilot-host doctor` again"
    )
    # No answer came: nothing to compare the clock with.
    assert checks["clock"]["ok"] is None
    assert "availability" in checks["clock"]["message"]


def test_an_exchange_failing_twice_says_github_is_busy(cli: Cli, emulate: Any) -> None:
    env = emulate(_scenario(faults=Faults(exchange_failures=(503, 503), retry_after="0")))
    _stored(env)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert "HTTP 503" in checks["availability"]["message"]
    assert checks["availability"]["fix"] == "GitHub is busy or failing: try again in a few minutes"
    assert [r.status for r in env.emulator.requests_to("copilot_token")] == [503, 503]


def test_an_exchange_answered_with_garbage_points_at_debug(cli: Cli, emulate: Any) -> None:
    env = emulate(_scenario(faults=Faults(malformed=frozenset({"copilot_token"}))))
    _stored(env)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["availability"])
    assert checks["availability"]["fix"] == "run `copilot-host doctor --debug` for details"


def _plan_answered(cli: Cli, emulate: Any, answer: RawAnswer) -> tuple[int, dict[str, Any]]:
    env = _logged_in(cli, emulate, _scenario(faults=Faults(answers={"copilot_user": answer})))
    return _doctor(cli, env)


def test_a_plan_github_does_not_show_this_app_is_not_checked(cli: Cli, emulate: Any) -> None:
    code, checks = _plan_answered(cli, emulate, RawAnswer(404, b'{"message":"Not Found"}'))
    assert code == 0
    assert checks["plan"]["ok"] is None
    assert checks["plan"]["message"] == (
        "not checked: GitHub does not show this login's plan to its OAuth app"
    )


def test_a_plan_refused_by_an_organisations_policy_says_whom_to_ask(cli: Cli, emulate: Any) -> None:
    refused = RawAnswer(
        403,
        b"unauthorized: not authorized to use this Copilot feature",
        (("Content-Type", "text/plain"),),
    )
    code, checks = _plan_answered(cli, emulate, refused)
    assert (code, _failed(checks)) == (1, ["plan"])
    assert checks["plan"]["fix"].startswith("ask an administrator to allow this client")


def test_a_plan_answered_with_garbage_fails_with_its_fix(cli: Cli, emulate: Any) -> None:
    env = _logged_in(cli, emulate, _scenario(faults=Faults(malformed=frozenset({"copilot_user"}))))
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["plan"])
    assert checks["plan"]["fix"] == "run `copilot-host doctor --debug` for details"


def test_an_identity_github_fails_to_answer_says_so_and_the_other_is_served(
    cli: Cli, emulate: Any
) -> None:
    env = emulate(_scenario(faults=Faults(models_failures=(500, 500), retry_after="0")))
    _stored(env)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["editor_identity"])
    assert "HTTP 500" in checks["editor_identity"]["message"]
    assert checks["editor_identity"]["fix"] == (
        "GitHub is busy or failing: try again in a few minutes"
    )
    assert checks["cli_identity"]["ok"] is True


def test_a_retired_api_version_names_no_minimum_and_says_to_upgrade(cli: Cli, emulate: Any) -> None:
    env = emulate(
        _scenario(inventory=Inventory(models=minimal_models(), min_api_version="2099-01-01"))
    )
    _stored(env)
    code, checks = _doctor(cli, env)
    assert (code, _failed(checks)) == (1, ["editor_identity", "cli_identity"])
    assert "API version is no longer supported" in checks["editor_identity"]["message"]
    assert checks["editor_identity"]["fix"].startswith("upgrade copilot-host")
    assert (
        checks["cli_identity"]["fix"] == "upgrade copilot-host (pip install --upgrade copilot-host)"
    )


# -- the clock without GitHub's Date -----------------------------------------------------------


class _DropsDate(httpx2.BaseTransport):
    """A proxy between this machine and GitHub that drops every answer's ``Date``."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._inner.handle_request(request)
        del response.headers["date"]
        return response

    def close(self) -> None:
        self._inner.close()


def _without_date(emulator: GitHubEmulator) -> CliSeam:
    def factory(*, store: Any, clock: Any, editor: Any = None) -> GitHubCopilotHost:
        extra = {"editor": editor} if editor is not None else {}
        return GitHubCopilotHost(store=store, transport=_DropsDate(emulator.transport()), **extra)

    return CliSeam(host_factory=factory)


@pytest.mark.parametrize(
    ("skew", "ok", "said"),
    [
        (0.0, True, "GitHub sent no Date to compare with; the session ends at "),
        # GitHub's clock an hour behind this one: its sessions end before they arrive.
        (
            -3600.0,
            False,
            "sessions look expired when they arrive: by this clock the session ended 30 min ago",
        ),
    ],
    ids=["in-time", "expired-on-arrival"],
)
def test_without_githubs_date_the_clock_is_judged_by_the_sessions_end(
    cli: Cli, emulate: Any, skew: float, ok: bool, said: str
) -> None:
    env = emulate(_scenario(session=Session(clock_skew=skew)))
    _stored(env)
    result = cli("doctor", "--json", seam=_without_date(env.emulator))
    checks = {c["code"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["clock"]["ok"] is ok
    assert checks["clock"]["message"].startswith(said)
    assert checks["clock"]["message"].endswith("UTC by GitHub's clock")
    assert (checks["clock"]["fix"] is None) is ok


# -- where the seat comes from --------------------------------------------------------------


def test_the_policy_line_says_which_organisations_and_enterprises_give_the_seat(
    cli: Cli, emulate: Any
) -> None:
    orgs = ("a5db0bcaae94032fe715fb34a5e4bce2", "7184f66dfcee98cb5f08a1cb936d5225")
    seat = Session(organization_list=orgs, enterprise_list=(4711,))
    env = _logged_in(cli, emulate, _scenario(session=seat))
    code, checks = _doctor(cli, env)
    assert code == 0
    assert checks["policy"]["message"] == (
        "no policy refuses copilot-host's identities; the seat comes from 2 organisation(s) "
        "and 1 enterprise(s)"
    )
    only = emulate(_scenario(session=Session(enterprise_list=(4711,))))
    _stored(only)  # the same login, now seated by an enterprise alone
    _code, checks = _doctor(cli, only)
    assert checks["policy"]["message"].endswith("; the seat comes from 1 enterprise(s)")
