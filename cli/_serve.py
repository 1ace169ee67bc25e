"""``copilot-host serve``: the gateway (:mod:`copilot_host.gateway`) served by
:class:`copilot_host.gateway.GatewayServer` on a loopback address, with a fresh key per run.

Start-up, in order: the address is checked (loopback only: a usage error otherwise), the
port is bound (``--port 0``: a free one), the store folder is checked, a new key is made
and written to the key file, the server starts on the bound socket, and only then is the
listening line printed: a program that reads it can connect at once.

Stopping: SIGINT or SIGTERM, and SIGHUP (its terminal closed) or SIGQUIT (Ctrl-\\) alike.
The server takes them while it serves: it stops accepting, lets requests in flight finish
for up to :data:`copilot_host.gateway._plumbing.GRACE` seconds, cancels what is left, and raises the
signal again once it has stopped; the CLI's own handling then ends the command the usual
way (exit 128 + the signal: 130, 143, 129, 131). A signal ignored at start (``nohup``)
stays ignored. The key file is removed on every way out but SIGKILL; the next start
replaces a key file left by a killed gateway.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._account import Account
from ._context import output, set_error_sink
from ._editor import editor_from_environment
from ._emulated import ScriptedCall
from ._failure import CliFailure, Problem
from ._gateway import (
    GatewayNames,
    LogFile,
    account,
    check_script,
    gateway_options,
    serve_gateway,
)
from ._logging import SecondStamp
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand, Output, write_stdout
from ._recording import LedgerChoice, ledger_choice, ledger_warning

if TYPE_CHECKING:
    from copilot_host.gateway import GatewayApp
    from copilot_host.store import CredentialStore, GatewayKey

__all__ = [
    "DEFAULT_PORT",
    "KEY_PREFIX",
    "LOOPBACK",
    "RequestCount",
    "access_log",
    "host_option",
    "listen",
    "new_key",
    "serve",
]

# How access lines (and the gateway's warnings beside them) show their time.
ACCESS_DATEFMT = "%Y-%m-%dT%H:%M:%S"
# The fixed default port: the same base URL every day, for tools configured once.
DEFAULT_PORT = 4141
KEY_PREFIX = "cph_"

# --host value -> (address bound, host as the base URL names it).
LOOPBACK = {
    "127.0.0.1": ("127.0.0.1", "127.0.0.1"),
    "localhost": ("127.0.0.1", "127.0.0.1"),
    "::1": ("::1", "[::1]"),
    "[::1]": ("::1", "[::1]"),
}
# What serve adds to the library's line when the address cannot be had.
_BIND_HINTS = {
    "port_in_use": (
        " (another copilot-host serve?); choose another port with --port, or --port 0 for a "
        "free one"
    ),
    "address_unavailable": " (try --host 127.0.0.1)",
}

_EPILOG = """\b
Examples:
  copilot-host serve                   http://127.0.0.1:4141/v1, a new key each run
  copilot-host serve --port 0 --json   a free port; one JSON line says where and the key
  copilot-host serve --host ::1        IPv6 loopback: http://[::1]:4141/v1
  copilot-host serve --max-credits 25  stop relaying once answers report 25 AI credits
  copilot-host serve --emulator        the built-in emulator's models, before any login
  copilot-host serve --model-alias fast=gpt-4.1 --default-model claude-sonnet-4.6
  copilot-host serve --default-model auto   names it does not serve go to Copilot Auto

\b
Then, from any language (KEY: the key shown, or the key file's text):
  printf 'header = "Authorization: Bearer %s"\\n' "$(cat KEY_FILE)" |
    curl http://127.0.0.1:4141/v1/models -K -   (the key on stdin, not in ps)
  OpenAI SDK:     base_url="http://127.0.0.1:4141/v1", api_key=KEY
  Anthropic SDK:  base_url="http://127.0.0.1:4141", api_key=KEY  (no /v1)

\b
--json prints exactly one line on stdout, once the gateway accepts connections:
  {"v": 1, "event": "listening", "base_url": "http://127.0.0.1:PORT/v1", "api_key": "…"}
and nothing after it (a failure before it: {"v": 1, "event": "error", "code": …});
with --emulator the line also has "emulator": true.
The key is also in gateway-PORT.key (0600) in the store folder while the gateway runs
(with --emulator, in its throwaway folder). One access line per request goes to stderr
(with credits=… when the answer reported its cost), and to FILE with --log FILE; one
line with the totals when it stops. Ctrl-C, SIGTERM, SIGHUP or SIGQUIT stops it (exit
130, 143, 129, 131).
"""


def _loopback(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    chosen = value.strip().lower()
    if chosen not in LOOPBACK:
        raise click.BadParameter(
            f"{value!r} is not a loopback address. The gateway lends your Copilot account "
            "to whoever reaches it, so it serves this machine only: use 127.0.0.1, ::1 or "
            "localhost"
        )
    return chosen


# --host, worded once for serve and run: both listen on loopback only.
host_option = click.option(
    "--host",
    "address",
    default="127.0.0.1",
    show_default=True,
    callback=_loopback,
    help="Loopback address to listen on: 127.0.0.1, ::1 or localhost (binds 127.0.0.1).",
)


@click.command(cls=CopilotHostCommand, epilog=_EPILOG)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on; 0 picks a free one.",
)
@host_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON line (base URL and key) on stdout once listening.",
)
@gateway_options
def serve(
    *,
    port: int,
    address: str,
    as_json: bool,
    emulator: bool,
    aliases: dict[str, str],
    default_model: str | None,
    log_path: Path | None,
    max_credits: float | None,
    emulator_script: tuple[ScriptedCall, ...] | None,
    ledger_file: Path | None,
    no_ledger: bool,
    max_credits_per_day: float | None,
) -> None:
    """Serve this login's Copilot models to programs in any language.

    A gateway on this machine's loopback address that speaks the OpenAI API
    (/v1/models, /v1/chat/completions, /v1/responses, /v1/embeddings) and the Anthropic
    Messages API (/v1/messages, and /v1/messages/count_tokens, answered with an
    estimate). It holds
    the GitHub and Copilot tokens itself: programs present only the gateway's key, made
    anew each run. It starts and stays up while logged out (requests get 503
    not_logged_in) and follows logins, logouts and account changes without a restart.
    What it changes in agents' requests so that Copilot takes them is named in each
    access line (rewrote=...); COPILOT_HOST_REWRITES=-name,-name turns changes off.
    """
    out = output()
    no_core_dumps()
    _take_stop_signals()
    if as_json:
        set_error_sink(lambda problem: _json_line(_error_event(problem)))
    names = GatewayNames(aliases, default_model)
    names.check()
    check_script(emulator, emulator_script)
    ledger = ledger_choice(
        ledger_file=ledger_file,
        no_ledger=no_ledger,
        max_credits_per_day=max_credits_per_day,
        emulator=emulator,
    )
    editor = editor_from_environment()
    log = LogFile(log_path) if log_path is not None else None
    try:
        bound, shown = LOOPBACK[address]
        with account(emulator, editor, emulator_script) as gateway:
            store = gateway.store
            listener = listen(bound, port)
            try:
                port = listener.getsockname()[1]
                base_url = f"http://{shown}:{port}/v1"
                key = new_key()
                with _key_file(store, port, key) as key_file:
                    counted = RequestCount()
                    undo_access_log = access_log(log, counted)
                    try:
                        _run(
                            listener,
                            gateway,
                            key,
                            names,
                            lambda: counted.listening(
                                lambda: _listening(
                                    out,
                                    as_json=as_json,
                                    base_url=base_url,
                                    key=key,
                                    key_file=key_file,
                                    store=store,
                                    emulator=emulator,
                                )
                            ),
                            max_credits=max_credits,
                            on_app=counted.serving,
                            access_line=counted.line,
                            ledger=ledger,
                        )
                    finally:
                        if counted.started:
                            _stopped(out, log, counted, emulator=emulator)
                        undo_access_log()
            finally:
                listener.close()
    finally:
        if log is not None:
            log.close()


# -- start-up ---------------------------------------------------------------------------------


def listen(address: str, port: int) -> socket.socket:
    """A socket listening on ``address`` (a value of :data:`LOOPBACK`) and ``port``; a
    usage failure that says what to do instead when it cannot be had."""
    from copilot_host import CopilotHostError
    from copilot_host.gateway._plumbing import bind

    try:
        return bind(address, port)
    except CopilotHostError as exc:
        raise CliFailure(exc.code, exc.message + _BIND_HINTS.get(exc.code, "")) from None


def new_key() -> str:
    """A fresh gateway key."""
    import secrets

    # 256 random bits; the prefix makes a leaked key recognisable for what it is.
    return KEY_PREFIX + secrets.token_urlsafe(32)


@contextmanager
def _key_file(store: CredentialStore, port: int, key: str) -> Iterator[GatewayKey]:
    """The store's key file for this gateway; another gateway on the port is port_in_use."""
    from copilot_host import StoreLockedError
    from copilot_host._internal import show_path

    try:
        with store.gateway_key(port, key) as key_file:
            yield key_file
    except StoreLockedError as exc:
        if exc.code != "gateway_running":
            raise
        raise CliFailure(
            "port_in_use",
            "another copilot-host serve on this port holds "
            f"{show_path(store.home / f'gateway-{port}.key')}; stop it or choose another port "
            "with --port",
        ) from None


class RequestCount:
    """Whether the gateway listened, and the access lines it wrote: the app gives each to
    :meth:`line` (``create_app(access_line=...)``), which counts it and writes it where
    :func:`access_log` said; the stop line (written only after it listened, and told) says
    how many requests were served."""

    def __init__(self) -> None:
        self.requests = 0
        self.started = False
        self.app: GatewayApp | None = None
        self._outputs: tuple[Callable[[str], None], ...] = ()
        self._redact: Callable[[str], str] = str
        self._stamp = SecondStamp(ACCESS_DATEFMT)

    def serving(self, app: GatewayApp) -> None:
        self.app = app

    def stop_line(self, *, emulator: bool) -> str:
        """The line the gateway ends with (serve's and run's alike): the requests counted
        and what the app's answers reported they cost (nothing before it was built)."""
        from ._gateway import stop_line

        spend = self.app.spend.totals() if self.app is not None else None
        return stop_line(self.requests, emulator=emulator, spend=spend)

    def listening(self, then: Callable[[], None]) -> None:
        then()
        # Only once told: a listening line nobody could read (stdout's reader gone) means
        # the gateway ends as quietly as any command whose reader went away.
        self.started = True

    def write_to(self, *outputs: Callable[[str], None]) -> None:
        """Where :meth:`line` writes (each takes a whole line, with its newline)."""
        # Imported here, once, not in line(): an import statement in a function costs
        # each call a look for a submodule, which _internal's lazy names answer with an
        # AttributeError raised and caught (a few microseconds, every request).
        from copilot_host._internal import redact_line

        self._redact = redact_line
        self._outputs = outputs

    def line(self, text: str) -> None:
        """One access line: counted, then stamped and behind the redaction a logging
        handler would apply (:func:`copilot_host._internal.redact_line`), written."""
        self.requests += 1
        if self._outputs:
            stamped = f"{self._stamp(time.time())} {self._redact(text)}\n"
            for output in self._outputs:
                output(stamped)


def _stopped(out: Output, log: LogFile | None, counted: RequestCount, *, emulator: bool) -> None:
    line = counted.stop_line(emulator=emulator)
    out.info(line)
    if log is not None:
        log.write(line)


def access_log(
    log: LogFile | None = None, counted: RequestCount | None = None, *, stderr: bool = True
) -> Callable[[], None]:
    """The gateway's access lines (``counted.line``) on stderr (``stderr=False``: not
    there) and in the log file; its warnings (the budget, a quota running low, an alias
    whose model is gone) there too, through logging, behind the redaction filter; returns
    the undo."""
    import logging

    from copilot_host.gateway import ACCESS_LOGGER
    from copilot_host.gateway._plumbing import write_stderr_line

    from ._logging import stderr_handler

    if counted is not None:
        outputs: list[Callable[[str], None]] = [write_stderr_line] if stderr else []
        if log is not None:
            outputs.append(log.write_stamped)
        counted.write_to(*outputs)
    logger = logging.getLogger(ACCESS_LOGGER)
    fmt = "%(asctime)s %(message)s"
    handlers = [stderr_handler(logging.INFO, fmt, ACCESS_DATEFMT)] if stderr else []
    if log is not None:
        handlers.append(log.handler(fmt, ACCESS_DATEFMT))
    before = (logger.level, logger.propagate)
    for handler in handlers:
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # The gateway's warnings (an alias whose model is gone, a relay cut short) go to the
    # log file too: under run it is the only place they can be read.
    gateway_log = logging.getLogger("copilot_host.gateway")
    warnings = log.handler(fmt, ACCESS_DATEFMT) if log is not None else None
    if warnings is not None:
        warnings.setLevel(logging.WARNING)
        gateway_log.addHandler(warnings)

    def undo() -> None:
        if warnings is not None:
            gateway_log.removeHandler(warnings)
        if counted is not None:
            counted.write_to()
        for handler in handlers:
            logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]

    return undo


def _run(
    listener: socket.socket,
    gateway: Account,
    key: str,
    names: GatewayNames,
    on_listening: Callable[[], None],
    *,
    max_credits: float | None = None,
    on_app: Callable[[GatewayApp], None] | None = None,
    access_line: Callable[[str], None] | None = None,
    ledger: LedgerChoice | None = None,
) -> None:
    import asyncio

    from copilot_host.gateway import GatewayServer

    # The signals, the open-file limit, a stderr nobody reads and malloc's thresholds are
    # the process's: serve is the whole process, so it takes them all.
    server = GatewayServer(
        listener=listener,
        signals=True,
        raise_open_files=True,
        queue_stderr=True,
        tune_malloc=True,
        on_started=on_listening,
    )
    from copilot_host.gateway._plumbing import write_stderr_line

    def on_plan(line: str) -> None:
        write_stderr_line(f"copilot-host serve: {line}\n")

    def warn(line: str) -> None:
        # As the gateway's warnings go: stderr, and the log file when there is one.
        ledger_warning(line)

    asyncio.run(
        serve_gateway(
            server,
            gateway,
            key,
            names,
            on_app=on_app,
            max_credits=max_credits,
            on_plan=on_plan,
            access_line=access_line,
            ledger=ledger,
            warn=warn,
        )
    )


def _take_stop_signals() -> None:
    """From the start, SIGHUP and SIGQUIT end serve as SIGTERM does (exit 129, 131)."""
    from copilot_host.gateway._plumbing import STOP_SIGNALS

    from ._signals import current_signals

    current_signals().install(STOP_SIGNALS)


# -- what people and programs are told --------------------------------------------------------


def _json_line(document: dict[str, Any]) -> None:
    import json

    # The documented line, byte for byte: json's default separators.
    write_stdout(json.dumps(document, ensure_ascii=False))


def _error_event(problem: Problem) -> dict[str, Any]:
    return {
        "v": 1,
        "event": "error",
        "code": problem.code,
        "message": problem.message,
        "retryable": problem.retryable,
    }


def _listening(
    out: Output,
    *,
    as_json: bool,
    base_url: str,
    key: str,
    key_file: GatewayKey,
    store: CredentialStore,
    emulator: bool = False,
) -> None:
    if as_json:
        line: dict[str, Any] = {"v": 1, "event": "listening", "base_url": base_url, "api_key": key}
        if emulator:
            line["emulator"] = True
        _json_line(line)
        # Nothing follows the listening line on stdout, a failure's report included.
        set_error_sink(lambda _problem: None)
        return
    from copilot_host._internal import clean

    root = base_url.removesuffix("/v1")
    quoted = key_file.quoted
    if emulator:
        out.info(f"copilot-host gateway (emulator) listening on {out.strong(base_url)}")
        out.warn(
            "emulator: the models are the built-in emulator's and every answer is an echo; "
            "nothing leaves this machine and your login is not used"
        )
        identity = None
    else:
        out.info(f"copilot-host gateway listening on {out.strong(base_url)}")
        try:
            identity = store.availability()
        except Exception:  # the first request reports it properly
            identity = None
    if identity is not None:
        out.info(f"Serving the Copilot models of {clean(identity.account)}.")
    elif not emulator:
        out.warn(
            "not logged in: requests get 503 until you run `copilot-host login` (no restart needed)"
        )
    out.info("")
    out.info("API key (shown once; also in the key file while this runs):")
    out.info(f"  {key}")
    out.info(f"  key file: {quoted}")
    out.info("")
    out.info("Point your tools at it:")
    out.info(f'  OpenAI SDK      OpenAI(base_url="{base_url}", api_key=KEY)')
    out.info(f'  Anthropic SDK   Anthropic(base_url="{root}", api_key=KEY)   (no /v1)')
    # On stdin (-K -): a command line is visible to every local user, and printf is a
    # shell builtin, so the key is in no process's arguments.
    bearer = f'printf \'header = "Authorization: Bearer %s"\\n\' "$(cat {quoted})"'
    out.info(f"  curl            {bearer} |")
    out.info(f"                    curl {base_url}/models -K -")
    out.info(f"  environment     OPENAI_BASE_URL={base_url} OPENAI_API_KEY=$(cat {quoted})")
    out.info(f"                  ANTHROPIC_BASE_URL={root} ANTHROPIC_AUTH_TOKEN=$(cat {quoted})")
    out.info("                  (read by the SDKs and by agents built on them)")
    out.info(
        "  coding agents   copilot-host run -- claude   (or codex, aider, opencode: see README)"
    )
    out.hint("One line per request follows. Ctrl-C stops the gateway.")
