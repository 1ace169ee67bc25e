"""``copilot-host doctor``: why copilot-host does not work for this login, one check a line.

The checks and their order are :mod:`._checks`'; this module runs them, asks before the
probes spend anything, prints (a line per check as it is made, or one JSON document) and
decides the exit status: 0 when no check failed, 1 when one did, 2 when doctor itself
could not run (or could not ask before spending).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from ._context import JSON_VERSION, make_host, make_store, output, use_json_errors
from ._editor import editor_from_environment
from ._failure import CliFailure
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand, Output, ReaderGone
from ._signals import Stop

if TYPE_CHECKING:
    from collections.abc import Callable

    from copilot_host.github import EditorIdentity, GitHubCopilotHost
    from copilot_host.store import CredentialStore

    from ._checks import Check, Checks, Probe

__all__ = ["EXIT_DOCTOR_FAILED", "doctor"]

# doctor could not run (or could not ask before spending): not a verdict on the login.
EXIT_DOCTOR_FAILED = 2

_EPILOG = """\b
Examples:
  copilot-host doctor                  every check below but the probes (nothing billed)
  copilot-host doctor --probe          also one small request per API (billed: asks first)
  copilot-host doctor --probe --yes    the same without asking (scripts)
  copilot-host doctor --json | jq -r '.checks[] | select(.ok == false) | .fix'
  copilot-host doctor --emulator       every check against the built-in emulator

\b
The checks, in order (their "code"):
  store            the state folder and the login record can be read
  keyring          the record's data key (OS keyring or key file) opens it
  login            a login is stored (the account, the OAuth app)
  availability     GitHub grants the login a Copilot session (not revoked, entitled)
  plan             the plan: limited to Auto model selection? a quota used up?
  editor_identity  the editor identity, as /models answers it now (too old? deprecated?)
  cli_identity     the Copilot CLI identity, the same way
  clock            this clock against GitHub's Date and the session's expires_at
  policy           organisation policies refusing the identities, as GitHub answers
  probe_chat, probe_responses, probe_messages
                   with --probe: one request to the cheapest model of each API

\b
--json prints one document (fields are only ever added):
  {"v":1,"checks":[{"code":"store","ok":true,"message":"…","fix":null}, …]}
  "code"     one of the names above, in that order
  "ok"       true passed, false failed, null not checked (an earlier check it needs
             failed, or the probes were declined)
  "message"  what was found, one line (never a token)
  "fix"      one line saying what to do, for a failed check; otherwise null
Exit status: 0 no check failed, 1 a check failed, 2 doctor could not run.
"""


@contextmanager
def _subject(
    emulated: bool, editor: EditorIdentity | None
) -> Iterator[
    tuple[Callable[[], CredentialStore], Callable[[CredentialStore], GitHubCopilotHost], bool]
]:
    """What doctor checks: this machine's store and GitHub, or the emulator's account in a
    throwaway folder; and whether the probes cost anything."""
    if not emulated:
        yield make_store, lambda store: make_host(store, editor), True
        return
    from copilot_host.github import GitHubCopilotHost

    from ._emulated import emulated_login

    with emulated_login(editor) as (store, emulator):

        def host(given: CredentialStore) -> GitHubCopilotHost:
            return GitHubCopilotHost(store=given, transport=emulator.transport(), editor=editor)

        yield lambda: store, host, False


def _line(out: Output, check: Check) -> None:
    status = {True: "ok", False: "FAIL", None: "--"}[check.ok]
    shown = out.good(f"{status:<4}") if check.ok else f"{status:<4}"
    out.result(f"{shown}  {check.code:<16} {check.message}")
    if check.fix is not None:
        out.result(f"{'':<4}  {'':<16} fix: {check.fix}")


def _consent(out: Output, probes: list[Probe]) -> bool:
    """Whether the person agrees to the probes' cost; no answer at all stops doctor."""
    listed = "; ".join(f"{p.api}: {p.model}" for p in probes)
    out.info(
        f"--probe sends {len(probes)} small model request(s), one per API ({listed}), each "
        "asking for a one-word answer. Each is billed like any model request: AI credits, "
        "or a premium request on plans billed by request."
    )
    try:
        return click.confirm("Send them?", default=False, err=True)
    except click.exceptions.Abort:
        out.info()
        raise CliFailure(
            "no_answer",
            "no answer to the question, so no probe was sent: add --yes to send them "
            "without asking, or leave out --probe",
            exit_code=EXIT_DOCTOR_FAILED,
        ) from None


def _run(out: Output, checks: Checks, *, probe: bool, ask: bool, as_json: bool) -> list[Check]:
    done: list[Check] = []

    def report(check: Check) -> None:
        done.append(check)
        if not as_json:
            _line(out, check)

    for check in checks.free():
        report(check)
    if not probe:
        return done
    planned = checks.probes()
    if planned is None:
        for check in checks.unprobed("no model list to choose from (see availability)"):
            report(check)
        return done
    if planned and ask and not _consent(out, planned):
        for check in checks.unprobed("declined: nothing was sent", planned):
            report(check)
        return done
    for planned_probe in planned:
        report(checks.probe(planned_probe))
    return done


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--probe",
    is_flag=True,
    help="Also send one small model request per API the account serves (billed; asks first).",
)
@click.option("--yes", is_flag=True, help="With --probe: send the probes without asking.")
@click.option(
    "--emulator",
    is_flag=True,
    help="Check the built-in emulator's account instead (no login, nothing leaves this machine).",
)
def doctor(as_json: bool, probe: bool, yes: bool, emulator: bool) -> None:
    """Check why copilot-host may not work here, and say what to do.

    Runs the checks below in order, one line each (a failed one with its fix): the store
    and its data key, the login and whether GitHub still grants it a session, the plan,
    the editor and Copilot CLI identities as the service answers them now, this machine's
    clock, and organisation policies. With --probe, one small model request per API the
    account serves. Shows no token.
    """
    out = output()
    no_core_dumps()
    if as_json:
        use_json_errors()
    editor = editor_from_environment()

    from ._checks import Checks

    try:
        with _subject(emulator, editor) as (store, host, billed):
            checks = Checks(store, host, editor)
            try:
                found = _run(out, checks, probe=probe, ask=billed and not yes, as_json=as_json)
            finally:
                if checks.host is not None:
                    checks.host.close()
    except (CliFailure, ReaderGone, Stop, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as exc:
        # Every answer of the store, the keyring and GitHub is a check's result: what
        # lands here is doctor's own failure, told apart from a verdict by its status.
        raise CliFailure(
            "doctor_failed",
            f"doctor could not run: unexpected {type(exc).__name__}; rerun with --debug "
            "for details and report it if it persists",
            exit_code=EXIT_DOCTOR_FAILED,
        ) from exc
    if as_json:
        out.json({"v": JSON_VERSION, "checks": [check.document() for check in found]})
    failed = sum(check.ok is False for check in found)
    skipped = sum(check.ok is None for check in found)
    note = " (the emulator's account: nothing was billed)" if emulator else ""
    passed = len(found) - failed - skipped
    out.hint(f"{passed} passed, {failed} failed, {skipped} not checked{note}")
    if failed:
        raise click.exceptions.Exit(1)
