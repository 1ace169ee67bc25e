"""``copilot-host status``: who is logged in, from the record's non-secret header.

No key, no keyring, no network: the header is readable without decrypting (so it is
shown "as recorded"; every real use of the credential verifies header and ciphertext
together).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from ._context import JSON_VERSION, make_store, output, use_json_errors
from ._failure import EXIT_FAILED
from ._format import ago, local_time
from ._output import CopilotHostCommand, Output, ReaderGone

if TYPE_CHECKING:
    from copilot_host import StoreCorruptError
    from copilot_host.store import CredentialStore, Protection, RecordHeader

__all__ = ["describe_protection", "status"]

_EPILOG = """\b
Examples:
  copilot-host status
  copilot-host status --json | jq -r .account

\b
--json prints one document (fields are only ever added):
  {"v":1,"logged_in":true,"account":"octocat","login_id":"…",
   "logged_in_at":"2025-01-01T12:00:00Z",
   "protection":{"kind":"keyring","backend":"Secret Service"},
   "client_id":"Iv1.b507a08c87ecfe98","client_id_default":true,
   "store":"/path/to/record","home":"/path","set_aside":[]}
Logged out: {"v":1,"logged_in":false,...}; exit code 1.
A damaged record: {"v":1,"logged_in":false,"damaged":true,...}; exit code 1.
"""


def _client_id(header: RecordHeader) -> str:
    """The OAuth app the stored token was minted for (a record without one: the default,
    copilot_host.github.DEFAULT_CLIENT_ID, spelled here because status must not import
    the HTTP stack)."""
    return header.client_id if header.client_id is not None else "Iv1.b507a08c87ecfe98"


def describe_protection(protection: Protection) -> str:
    from copilot_host._internal import clean, show_path

    if protection.kind == "keyring":
        return f"OS keyring ({clean(protection.backend)})"
    # A key file is named by its path, exactly (runs of spaces and odd bytes included).
    where = show_path(protection.backend)
    return f"key file {where} (readable by anyone who can read your files)"


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def status(as_json: bool) -> None:
    """Show who is logged in and how the login is protected.

    Reads only this machine's record (no network, no keyring). Exit code 0 when logged
    in, 1 when not.
    """
    out = output()
    if as_json:
        use_json_errors()  # first: a failure at any later point is a JSON document too

    from copilot_host import StoreCorruptError
    from copilot_host._internal import show_path

    store = make_store()
    damaged: StoreCorruptError | None = None
    try:
        header = store.header()
    except StoreCorruptError as exc:
        # A state to report, not a failure of status: logged out, with a record to replace.
        header, damaged = None, exc
    set_aside = [str(p) for p in store.set_aside()]

    try:
        _show(out, store, header, damaged, set_aside, as_json=as_json)
    except ReaderGone:
        # The reader stopped early, but a script may still go by the exit code: "not
        # logged in" stays 1.
        if header is None:
            raise click.exceptions.Exit(EXIT_FAILED) from None
        raise
    if damaged is not None:
        out.error(damaged.message)
    for path in set_aside:
        out.warn(
            f"a damaged login record was set aside at {show_path(path)}; delete it when you "
            "no longer need it"
        )
    if header is None:
        raise click.exceptions.Exit(EXIT_FAILED)


def _show(
    out: Output,
    store: CredentialStore,
    header: RecordHeader | None,
    damaged: StoreCorruptError | None,
    set_aside: list[str],
    *,
    as_json: bool,
) -> None:
    from copilot_host._internal import clean, show_path

    from ._events import iso_utc

    if as_json:
        doc: dict[str, Any] = {"v": JSON_VERSION, "logged_in": header is not None}
        if damaged is not None:
            doc["damaged"] = True
        if header is not None:
            doc.update(
                account=clean(header.account),
                login_id=clean(header.login_id),
                logged_in_at=iso_utc(header.created_at),
                protection={
                    "kind": header.protection.kind,
                    "backend": header.protection.backend
                    if header.protection.kind == "key-file"
                    else clean(header.protection.backend),
                },
                client_id=_client_id(header),
                client_id_default=header.client_id is None,
            )
        doc.update(store=str(store.record_path), home=str(store.home), set_aside=set_aside)
        out.json(doc)
    elif damaged is not None:
        out.result("Not logged in: the stored login record is damaged.")
    elif header is None:
        out.result("Not logged in.")
        out.hint("Run `copilot-host login` to log in.")
    else:
        rows = [
            (
                "logged in",
                f"{local_time(header.created_at)} ({ago(header.created_at, time.time())})",
            ),
            (
                "OAuth app",
                f"{_client_id(header)}"
                + (" (VS Code's, the default)" if header.client_id is None else ""),
            ),
            ("protection", describe_protection(header.protection)),
            ("store", show_path(store.record_path)),
        ]
        out.result(f"Logged in to GitHub as {out.strong(clean(header.account))}")
        for label, value in rows:
            out.result(f"  {label:<11} {value}")
