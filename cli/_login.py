"""``copilot-host login``: GitHub's device flow, verified and stored encrypted."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ._context import make_host, make_store, output, seam, set_error_sink
from ._editor import check_client_id_text, client_id_from_environment, editor_from_environment
from ._events import LoginEvents
from ._failure import CliFailure, Interrupted, signal_word
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand, Output
from ._signals import Stop

if TYPE_CHECKING:
    from copilot_host import LoginIdentity
    from copilot_host.store import RecordHeader, Saved

__all__ = ["login"]

_EPILOG = """\b
Examples:
  copilot-host login                        opens your browser at the device page
  copilot-host login --headless             over SSH: shows the code, opens nothing
  copilot-host login --headless --key-file  a server without an OS keyring
  copilot-host login --json --headless      drive the login from another program
  copilot-host login --client-id Ov23li...  log in with another Copilot-enabled app

\b
--json prints one event per line on stdout (people's text stays on stderr):
  {"v":1,"event":"device_code","user_code":"ABCD-1234",
   "verification_uri":"https://github.com/login/device",
   "expires_in":899,"deadline":"2025-01-01T12:15:00Z","interval":5,
   "client_id":"Iv1.b507a08c87ecfe98"}
  {"v":1,"event":"authorized","account":"octocat","login_id":"…",
   "protection":"keyring"}
  {"v":1,"event":"error","code":"access_denied","message":"…","retryable":false}
--json and --headless never ask a question: add --force to replace a login.
"""


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--headless", is_flag=True, help="Never open a browser or ask a question.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON events on stdout.")
@click.option("--force", is_flag=True, help="Replace an existing login without asking.")
@click.option(
    "--key-file",
    is_flag=True,
    help="With no usable OS keyring, keep the data key in a 0600 file beside the store.",
)
@click.option(
    "--client-id",
    "client_id",
    metavar="ID",
    default=None,
    help="Log in with this Copilot-enabled OAuth app instead of VS Code's "
    "(also COPILOT_HOST_CLIENT_ID; default: the app of the current login).",
)
def login(
    headless: bool, as_json: bool, force: bool, key_file: bool, client_id: str | None
) -> None:
    """Log in to GitHub with a one-time code; keep the login encrypted.

    Shows a code to enter at https://github.com/login/device (and, unless --headless,
    opens that page in your browser), waits for you to authorize, checks that the
    account may use Copilot, and only then stores the credential.
    """
    out = output()
    no_core_dumps()
    events = LoginEvents(out, enabled=as_json)
    if as_json:
        # First, so that even a signal during the imports below ends with an error event.
        set_error_sink(events.error)

    from copilot_host import SYSTEM_CLOCK, StoreCorruptError
    from copilot_host._internal import clean

    from ._wait import wait_for_login

    s = seam()
    editor = editor_from_environment()
    given = check_client_id_text(client_id, "--client-id") if client_id is not None else None
    from_env = client_id_from_environment() if given is None else None
    # The store keeps the key: in the OS keyring, or by explicit choice in a key file.
    store = make_store(key_file=key_file)

    try:
        current = store.header()
    except StoreCorruptError:
        # An unreadable record is no login to protect: replace it without asking. It is
        # set aside (kept) only when the new login is stored, so a failed login changes
        # nothing.
        current = None
        out.warn(
            "the stored login record is damaged and cannot be used; "
            "it will be set aside when the new login is stored"
        )
    if current is not None and not force:
        who = clean(current.account)
        if headless or as_json:
            raise CliFailure(
                "already_logged_in",
                f"already logged in as {who}; rerun with --force to replace that login",
            )
        if not _ask(out, f"You are logged in as {out.strong(who)}. Replace that login?"):
            out.info(f"Kept the login of {who}; nothing changed.")
            return

    chosen, why = _choose_client_id(given, from_env, current)
    events.client_id = chosen
    # Shown just before the device code: the device page names the app, which must be no
    # surprise (and a login that fails before any code names none).
    events.app_line = f"Authorizing OAuth app {chosen} ({why})"
    # Without a usable keyring the store refuses to save and its error names --key-file
    # and the trade-off; it reaches the person as that one line.
    from copilot_host.github import DEFAULT_CLIENT_ID

    minted = None if chosen == DEFAULT_CLIENT_ID else chosen
    with make_host(store, editor, client_id=minted) as host:
        identity = wait_for_login(
            host, out=out, events=events, headless=headless, seam=s, clock=s.clock or SYSTEM_CLOCK
        )
        # What the store wrote and set aside, as it said: nothing is read back.
        saved = host.last_saved
        from ._plan import plan_line_now

        auto_only = plan_line_now(host)
    try:
        _report_login(out, events, saved, identity, as_json=as_json)
        if auto_only is not None:
            out.warn(auto_only)
    except Stop as stop:
        # The login is stored: a signal now must not read as "nothing happened".
        raise Interrupted(
            stop.signum,
            f"{signal_word(stop.signum)}, but the login had just completed: logged in as "
            f"{clean(identity.account)} (run `copilot-host logout` to undo)",
            code="interrupted_after_login",
        ) from None


def _choose_client_id(
    given: str | None, from_env: str | None, current: RecordHeader | None
) -> tuple[str, str]:
    """The OAuth app to log in with and why: --client-id, COPILOT_HOST_CLIENT_ID, the app
    the current login was minted for, else VS Code's."""
    from copilot_host.github import DEFAULT_CLIENT_ID

    if given is not None:
        chosen, why = given, "given with --client-id"
    elif from_env is not None:
        chosen, why = from_env, "given with COPILOT_HOST_CLIENT_ID"
    elif current is not None and current.client_id is not None:
        chosen, why = current.client_id, "the app of the current login"
    else:
        return DEFAULT_CLIENT_ID, "VS Code's, the default"
    if chosen == DEFAULT_CLIENT_ID:
        return chosen, "VS Code's, the default"
    return chosen, why


def _ask(out: Output, question: str) -> bool:
    """The yes/no question; the prompt's line is ended whatever the answer."""
    if sys.stdin is None:
        # Started with stdin closed (<&-): nobody can answer. The same as end of input.
        raise click.exceptions.Abort
    try:
        return click.confirm(question, default=False, err=True)
    except click.exceptions.Abort:
        out.info()
        raise
    except Stop as stop:
        out.info()
        raise Interrupted(stop.signum, f"{signal_word(stop.signum)}; nothing was changed") from None


def _report_login(
    out: Output,
    events: LoginEvents,
    saved: Saved | None,
    identity: LoginIdentity,
    *,
    as_json: bool,
) -> None:
    from copilot_host._internal import clean, show_path

    from ._status import describe_protection

    protection = saved.header.protection if saved is not None else None
    account = clean(identity.account)
    events.authorized(
        account=account,
        login_id=identity.login_id,
        protection=protection.kind if protection is not None else None,
    )
    if not as_json:
        out.result(f"{out.good('Logged in')} to GitHub as {out.strong(account)}.")
    if protection is not None:
        out.info(f"Stored encrypted; the key is kept in the {describe_protection(protection)}.")
    if saved is not None and saved.set_aside is not None:
        out.info(
            f"The damaged login record was set aside at {show_path(saved.set_aside)}; delete "
            "it if unneeded."
        )
