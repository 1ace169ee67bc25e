"""What ``serve`` and ``run`` share: their gateway options, the account behind the gateway
(this login's, or the built-in emulator's), the model names they were given, the log file,
and the gateway itself served on a bound socket.

The account and the gateway's loop are set up here once, so the two commands cannot drift:
``--host``, the refusals, the access line and the model rules are the same in both.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from ._account import Account
from ._budget import max_credits_option
from ._context import seam
from ._emulated import ScriptedCall, script_option
from ._ownfile import open_own_file
from ._plan import PLAN_CHECK_SECONDS
from ._recording import LedgerChoice, ledger_options, open_recorder

if TYPE_CHECKING:
    from copilot_host.gateway import GatewayApp, GatewayServer
    from copilot_host.gateway._ledger import Recorder
    from copilot_host.github import AsyncGitHubCopilotHost, EditorIdentity

__all__ = [
    "GatewayNames",
    "LogFile",
    "account",
    "check_script",
    "gateway_options",
    "plan_line",
    "serve_gateway",
]

F = TypeVar("F", bound=Callable[..., Any])


# -- options -----------------------------------------------------------------------------------


def _alias(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise click.BadParameter(
                f"{value!r} is not NAME=MODEL (for example sonnet=claude-sonnet-4.6)"
            )
        aliases[name.strip()] = target.strip()
    return aliases


def gateway_options(command: F) -> F:
    """The options ``serve`` and ``run`` share (besides --port and --host, which each
    command words for itself)."""
    decorators = [
        click.option(
            "--emulator",
            is_flag=True,
            help="Serve the built-in emulator's models instead of this login's: an emulated "
            "login in a throwaway folder, nothing leaves this machine, answers are echoes "
            "(text only, unless --emulator-script scripts tool calls).",
        ),
        click.option(
            "--model-alias",
            "aliases",
            multiple=True,
            metavar="NAME=MODEL",
            callback=_alias,
            help="Serve requests for NAME with MODEL (repeatable).",
        ),
        click.option(
            "--default-model",
            metavar="MODEL",
            help="Serve requests for a model no rule finds with MODEL (else they get 404); "
            "auto: Copilot Auto picks.",
        ),
        click.option(
            "--log",
            "log_path",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Append the access lines, warnings and the stop line to FILE (made 0600).",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return ledger_options(max_credits_option(script_option(command)))


@dataclass(frozen=True)
class GatewayNames:
    """``--model-alias`` and ``--default-model``, checked for spelling."""

    aliases: dict[str, str] = field(default_factory=dict)
    default: str | None = None

    @property
    def given(self) -> bool:
        return bool(self.aliases) or self.default is not None

    def check(self) -> None:
        """A usage error for a spelling the gateway cannot take."""
        from copilot_host.gateway import ModelNames

        try:
            ModelNames(self.aliases, self.default)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


# -- the account -------------------------------------------------------------------------------


def check_script(emulator: bool, script: tuple[ScriptedCall, ...] | None) -> None:
    """A usage error for ``--emulator-script`` without ``--emulator``."""
    if script is not None and not emulator:
        raise click.UsageError("--emulator-script scripts the emulator: add --emulator")


@contextmanager
def account(
    emulator: bool,
    editor: EditorIdentity | None = None,
    script: tuple[ScriptedCall, ...] | None = None,
) -> Iterator[Account]:
    """This login's account (presenting ``editor`` when given); or with ``emulator`` the
    built-in emulator's (its model making the ``script``'s tool calls), logged in within a
    throwaway folder that is removed on the way out (``COPILOT_HOST_HOME`` and the keyring
    are never read or written)."""
    if emulator:
        from ._emulated import emulated_account

        with emulated_account(editor, script or ()) as emulated:
            yield emulated
        return
    from ._context import make_store

    store = make_store()
    # Creates the store folder (0700) if needed and refuses an insecure one, before the
    # port is taken or a key is made.
    store.preflight(key_file=True)
    # Resolved here, in the command's thread: the gateway's loop may run in another one.
    s = seam()
    factory, clock = s.async_host_factory, s.clock

    def make_host() -> AsyncGitHubCopilotHost:
        extra: dict[str, Any] = {} if editor is None else {"editor": editor}
        if factory is not None:
            return factory(store=store, clock=clock, **extra)
        from copilot_host.github import AsyncGitHubCopilotHost

        if clock is not None:
            extra["clock"] = clock
        return AsyncGitHubCopilotHost(store=store, **extra)

    yield Account(
        store, make_host, s.upstream_transport, clock=clock, make_sockets=s.upstream_sockets
    )


# -- the log file ------------------------------------------------------------------------------


class LogFile:
    """``--log FILE``: opened for appending, 0600, never through a symbolic link, never
    blocking, refused unless a regular file of this user's with one name
    (:func:`._ownfile.open_own_file` says why); lines behind the redaction filter."""

    def __init__(self, path: Path) -> None:
        opened = open_own_file(path, noun="log file", code="log_file_io", append=True)
        self.path = path
        self.stream: IO[str] = os.fdopen(opened.fd, "a", encoding="utf-8", buffering=1)

    def handler(self, fmt: str, datefmt: str | None = None) -> Any:
        import logging

        from copilot_host import RedactingFilter

        from ._logging import line_formatter

        handler = logging.StreamHandler(self.stream)
        handler.setFormatter(line_formatter(fmt, datefmt))
        handler.addFilter(RedactingFilter())
        return handler

    def write(self, line: str) -> None:
        from copilot_host import mask_secrets

        self.stream.write(mask_secrets(line) + "\n")

    def write_stamped(self, line: str) -> None:
        """An access line already stamped and redacted, with its newline."""
        self.stream.write(line)

    def close(self) -> None:
        self.stream.close()


def stop_line(requests: int, *, emulator: bool, spend: str | None = None) -> str:
    """The one line a gateway ends with: the requests it answered and, once it served,
    what the model requests cost (``GatewayApp.spend.totals()``)."""
    what = "copilot-host gateway (emulator)" if emulator else "copilot-host gateway"
    line = f"{what} stopped after {requests} request{'s' if requests != 1 else ''}"
    return f"{line}; {spend}" if spend else line


# -- the gateway, served -----------------------------------------------------------------------


async def serve_gateway(
    server: GatewayServer,
    gateway: Account,
    key: str,
    names: GatewayNames,
    *,
    on_app: Callable[[GatewayApp], None] | None = None,
    max_credits: float | None = None,
    on_plan: Callable[[str], None] | None = None,
    access_line: Callable[[str], None] | None = None,
    ledger: LedgerChoice | None = None,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Build the gateway for ``gateway``'s account and serve it with ``server`` until the
    server is told to stop; ``on_app`` is given the app once it is built (its ``spend``
    makes the stop line, however the server ends), ``access_line`` each access line
    (``create_app``'s). The host is made, used and closed on
    this loop (an asynchronous host belongs to one); the app never closes it. What the
    server's ``on_started`` raises (a :class:`ReaderGone` from the listening line) stops
    it the orderly way and is raised once it has stopped. ``on_plan`` is given the one
    line that says the account's plan can use only Auto model selection, when it can
    (:func:`plan_line`), before the gateway listens. ``ledger`` is where each model request
    is recorded (opened here, closed once the server has stopped), ``warn`` where a line
    saying the ledger is off (or stopped recording) goes."""
    from copilot_host import SYSTEM_CLOCK
    from copilot_host.gateway import rewrites_from_environment

    try:
        # COPILOT_HOST_REWRITES=-name,-name turns rewrites off (docs/WIRE.md).
        rewrites = rewrites_from_environment()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    clock = gateway.clock if gateway.clock is not None else SYSTEM_CLOCK
    recorder = open_recorder(ledger, clock, warn or (lambda _line: None)) if ledger else None
    try:
        await _serve_with(
            server,
            gateway,
            key,
            names,
            rewrites=rewrites,
            recorder=recorder,
            on_app=on_app,
            max_credits=max_credits,
            on_plan=on_plan,
            access_line=access_line,
        )
    finally:
        if recorder is not None:
            # After the grace period: what is still in flight is recorded interrupted.
            recorder.close()


async def _serve_with(
    server: GatewayServer,
    gateway: Account,
    key: str,
    names: GatewayNames,
    *,
    rewrites: frozenset[str],
    recorder: Recorder | None,
    on_app: Callable[[GatewayApp], None] | None,
    max_credits: float | None,
    on_plan: Callable[[str], None] | None,
    access_line: Callable[[str], None] | None,
) -> None:
    from copilot_host.gateway import create_app
    from copilot_host.gateway._plumbing import record_with

    async with gateway.make_host() as host:
        extra: dict[str, Any] = {}
        if gateway.make_transport is not None:
            extra["transport"] = gateway.make_transport()
        if gateway.make_sockets is not None:
            extra["sockets"] = gateway.make_sockets()
        if gateway.clock is not None:
            extra["clock"] = gateway.clock
        app = create_app(
            host,
            api_key=key,
            model_aliases=names.aliases,
            default_model=names.default,
            max_credits=max_credits,
            rewrites=rewrites,
            access_line=access_line,
            **extra,
        )
        if recorder is not None:
            record_with(app, recorder)
        if on_app is not None:
            on_app(app)
        # The serving layer's upstream transport (aiohttp on [fast]) before the client opens.
        server.adopt(app)
        # Unusable HTTPS settings fail here, as a typed error, before anything listens.
        await app.startup()
        await _check_names(app, host, names, emulator=gateway.emulator)
        if on_plan is None:
            await server.serve(app)
        elif host.availability() is not None:
            line = await plan_line(host)
            if line is not None:
                on_plan(line)
            await server.serve(app)
        else:
            # Logged out at start: the plan is told at the first registration.
            await _serve_then_tell(server, app, host, on_plan)


async def _serve_then_tell(
    server: GatewayServer, app: GatewayApp, host: Any, on_plan: Callable[[str], None]
) -> None:
    import asyncio

    async def tell() -> None:
        await app.first_registration()
        line = await plan_line(host)
        if line is not None:
            on_plan(line)

    teller = asyncio.create_task(tell())
    try:
        await server.serve(app)
    finally:
        teller.cancel()


async def plan_line(host: Any, timeout: float = PLAN_CHECK_SECONDS) -> str | None:
    """The Auto-only line for the login's plan (``CopilotUsage.auto_only_line``); None
    when the plan is another, there is no login, or the plan could not be read within
    ``timeout`` seconds."""
    import asyncio

    if host.availability() is None:
        return None
    try:
        usage = await asyncio.wait_for(host.usage(), timeout)
    except Exception:  # best effort: any failure means "not known"
        return None
    line = usage.auto_only_line()
    return line if isinstance(line, str) else None


async def _check_names(app: GatewayApp, host: Any, names: GatewayNames, *, emulator: bool) -> None:
    """Aliases and the default model must name models the account has: checked before
    listening when a login exists now (always with the emulator); otherwise each
    registration warns about them."""
    if not names.given or (not emulator and host.availability() is None):
        return
    problems = await app.model_name_problems()
    if problems:
        raise click.UsageError("; ".join(problems))
