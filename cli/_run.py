"""``copilot-host run -- COMMAND``: a coding agent (or any program) on this login's models.

The gateway ``serve`` runs starts on a free loopback port (:mod:`._gateway`, the same
set-up), and COMMAND runs as a child attached to this terminal, with the gateway's address
and a fresh key in its environment. The key lives there only: never on a command line,
never in a file, never printed. When the command ends, the gateway stops and ``run`` exits
with the command's status (128+N when signal N ended it).

The terminal is the command's: ``run`` writes at most one line to stderr before the command
starts and nothing after it (the access lines, warnings and the stop line go to ``--log FILE`` only;
everything else the process might log goes nowhere). Ctrl-C reaches the command directly,
which is in the terminal's foreground process group, so ``run`` ignores SIGINT while the
command runs; SIGTERM, SIGHUP and SIGQUIT sent to ``run`` are passed on to it (so Ctrl-\\ reaches
a foreground command twice: from the terminal and from ``run``); ``run`` writes no core
file, whatever ends it (:mod:`._nodump`). If the gateway fails
while the command runs, one line on stderr says so and the command gets SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from ._account import Account
from ._context import output
from ._editor import editor_from_environment
from ._emulated import ScriptedCall
from ._failure import CliFailure
from ._gateway import (
    GatewayNames,
    LogFile,
    account,
    check_script,
    gateway_options,
    serve_gateway,
)
from ._nodump import no_core_dumps
from ._output import CopilotHostCommand
from ._profiles import Facts, Request, Setup, agent_for, converses, home_of
from ._recording import LedgerChoice, ledger_choice, ledger_warning
from ._serve import LOOPBACK, RequestCount, access_log, host_option, listen, new_key

if TYPE_CHECKING:
    import copilot_host as ch
    from copilot_host.gateway import GatewayApp
    from copilot_host.gateway._plumbing import Api

__all__ = ["CHILD_REMOVED", "run"]

# Variables removed from the command's environment: an Anthropic key that clients prefer to
# the token (and which may be a real Anthropic secret), and switches that send Claude Code
# to another provider.
CHILD_REMOVED = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
# Added to the command's NO_PROXY and no_proxy: every name the gateway may be reached by.
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# How long the gateway may take to start before run gives up.
START_TIMEOUT = 60.0
# Passed on to the command when run receives them.
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

_EPILOG = """\b
Examples:
  copilot-host run -- claude                      Claude Code on your Copilot models
  copilot-host run -- claude -p "Explain this repository"
  copilot-host run -- codex                       Codex CLI (run adds its provider)
  copilot-host run -- opencode                    (and aider, copilot, qwen: README)
  copilot-host run --emulator -- claude           check the setup before logging in
  copilot-host run --emulator --emulator-script tools.json -- claude
  copilot-host run --print-profile -- aider       what run adds, to give it by hand

\b
The command's environment gains OPENAI_BASE_URL, OPENAI_API_BASE, OPENAI_API_KEY,
ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, COPILOT_HOST_BASE_URL and COPILOT_HOST_API_KEY
(the key is made anew each run and is in no file and on no command line), gains
127.0.0.1,localhost,::1 in NO_PROXY and no_proxy (so no proxy sees the key), and loses
ANTHROPIC_API_KEY, CLAUDE_CODE_USE_BEDROCK and CLAUDE_CODE_USE_VERTEX. claude, codex,
opencode, aider, copilot and qwen also get the model and its limits from this account
(what you set yourself wins). On a plan that can use only Copilot Auto (Free, Student),
every model name the command sends is served by the model auto. Every program
the command starts inherits the key and can use your Copilot account through the gateway.
Exit status: the command's (128+N when signal N ended it); 127 when COMMAND is not found,
126 when it cannot be run.
"""


@click.command(
    cls=CopilotHostCommand,
    epilog=_EPILOG,
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default="a free one",
    help="Port the gateway listens on.",
)
@host_option
@gateway_options
@click.option(
    "--print-profile",
    is_flag=True,
    help="Start the gateway, print the variables (NAME=VALUE) and the command line run "
    "would use, with the key shown as KEY, and run nothing: the same by hand with serve.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    *,
    port: int,
    print_profile: bool,
    address: str,
    emulator: bool,
    aliases: dict[str, str],
    default_model: str | None,
    log_path: Path | None,
    max_credits: float | None,
    emulator_script: tuple[ScriptedCall, ...] | None,
    ledger_file: Path | None,
    no_ledger: bool,
    max_credits_per_day: float | None,
    command: tuple[str, ...],
) -> None:
    """Run a coding agent (or any command) on this login's Copilot models.

    Starts the gateway `copilot-host serve` runs on a free loopback port, then runs
    COMMAND in this terminal with the gateway's address and a fresh key in its
    environment (OPENAI_*, ANTHROPIC_*), and stops the gateway when COMMAND ends.
    Put -- before COMMAND.
    """
    output()  # the command's output settings, before anything can fail
    no_core_dumps()
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
    # Printing runs nothing: the agent need not be installed here.
    program = _look_up(command[0]) if not print_profile else shutil.which(command[0]) or command[0]
    log = LogFile(log_path) if log_path is not None else None
    signals = _MainThreadSignals()
    try:
        # The emulator's and the gateway's threads start with these signals blocked.
        signals.hold()
        with account(emulator, editor, emulator_script) as gateway:
            if not emulator:
                _logged_in(gateway)
            bound, shown = LOOPBACK[address]
            listener = listen(bound, port)
            try:
                code = _run(
                    listener,
                    gateway,
                    names,
                    log,
                    shown=shown,
                    program=program,
                    args=command[1:],
                    signals=signals,
                    max_credits=max_credits,
                    print_profile=print_profile,
                    # Printing sends no request: nothing to record.
                    ledger=None if print_profile else ledger,
                )
            finally:
                listener.close()
    finally:
        signals.release()
        if log is not None:
            log.close()
    click.get_current_context().exit(code)


# -- before the command ------------------------------------------------------------------------


def _look_up(name: str) -> str:
    """COMMAND's path, as a shell finds it; 127 when there is none, 126 when it cannot be
    run (one line, as a shell says it)."""
    found = shutil.which(name) if "/" not in name else name
    if found is None or not os.path.lexists(found):
        raise CliFailure("command_not_found", f"{name}: command not found", exit_code=127)
    if os.path.isdir(found):
        raise CliFailure("command_not_executable", f"{name}: is a directory", exit_code=126)
    if not os.access(found, os.X_OK):
        raise CliFailure("command_not_executable", f"{name}: permission denied", exit_code=126)
    return found


def _logged_in(gateway: Account) -> None:
    if gateway.store.availability() is None:
        raise CliFailure(
            "not_logged_in",
            "not logged in: run `copilot-host login` first (or try the setup with "
            "`copilot-host run --emulator -- COMMAND`)",
        )


def child_environment(base: dict[str, str], *, base_url: str, key: str) -> dict[str, str]:
    """The command's environment: ``base`` without :data:`CHILD_REMOVED`, with the
    gateway's address and key under every name agents read them from."""
    env = {name: value for name, value in base.items() if name not in CHILD_REMOVED}
    root = base_url.removesuffix("/v1")
    env.update(
        OPENAI_BASE_URL=base_url,
        # Clients on litellm (aider) read this name.
        OPENAI_API_BASE=base_url,
        OPENAI_API_KEY=key,
        ANTHROPIC_BASE_URL=root,
        # Sent as Authorization: Bearer; Claude Code neither asks to trust it nor shows it.
        ANTHROPIC_AUTH_TOKEN=key,
        COPILOT_HOST_BASE_URL=base_url,
        COPILOT_HOST_API_KEY=key,
    )
    # A client that honours HTTP_PROXY/ALL_PROXY (the OpenAI SDK, litellm, Claude Code)
    # would otherwise send the key and every prompt to the proxy: the gateway's loopback
    # names join what the user had, under both spellings clients read.
    for name in ("NO_PROXY", "no_proxy"):
        had = [part for part in env.get(name, "").split(",") if part.strip()]
        env[name] = ",".join([*had, *(host for host in _LOOPBACK_NAMES if host not in had)])
    return env


# How long run waits for the account's models before the command starts without them.
FACTS_TIMEOUT = 60.0


def _set_up(
    server: _Gateway,
    app: GatewayApp | None,
    *,
    program: str,
    args: tuple[str, ...],
    base: dict[str, str],
    base_url: str,
    names: GatewayNames,
) -> Setup:
    """What the command's profile adds, from the gateway's catalog read in-process (on
    the gateway's loop: no key, no proxy); the arguments as given for a command with no
    profile. The gateway is told which agent it serves (requests it cannot name are
    taken as that agent's: their ledger entry, a spent budget's status)."""
    agent = agent_for(program)
    loop = server.loop
    if agent is None or app is None or loop is None:
        return Setup(args=args)

    async def build() -> Setup:
        app.agent_started(agent.name)
        facts = await _facts(app, names)
        setup = agent.profile.build(
            Request(
                args=args,
                env=base,
                base_url=base_url,
                facts=facts,
                cwd=Path.cwd(),
                home=home_of(base),
            )
        )
        if setup.aliases:
            app.add_model_aliases(setup.aliases)
        return setup

    pending = asyncio.run_coroutine_threadsafe(build(), loop)
    try:
        return pending.result(FACTS_TIMEOUT)
    except TimeoutError:
        pending.cancel()
        return Setup(args=args, notes=("the account's models were not known within a minute",))


async def _facts(app: GatewayApp, names: GatewayNames) -> Facts:
    import copilot_host as ch

    try:
        routes = await app.served_routes()
    except ch.NotLoggedInError:
        return Facts(default=names.default, missing="not logged in")
    except ch.CopilotHostError as exc:
        return Facts(
            default=names.default, missing=f"the models could not be registered ({exc.code})"
        )

    def resolve(name: str, api: Api | None) -> ch.ModelSpec | None:
        route = app.route_for(name, api.protocol if api is not None else None)
        return route.spec if route is not None else None

    auto = next((r for r in routes if r.spec.auto is not None and r.spec.auto.only), None)
    if auto is None:
        # Agents are offered chat models only: the gateway's embeddings models are not theirs.
        models = tuple(route.spec for route in routes if converses(route.spec))
    else:
        # A plan that can use only Copilot Auto: the agent keeps the model names it knows
        # (the account's inventory), each served by Auto (run's gateway sends the names no
        # rule finds there) and sized by the smallest limits of Auto's pool.
        models = (*_sized_as(auto.spec), auto.spec)
    return Facts(models=models, resolve=resolve, default=names.default)


def _sized_as(auto: ch.ModelSpec) -> tuple[ch.ModelSpec, ...]:
    """The inventory's models Auto picks from, each with Auto's (its pool's smallest)
    limits."""
    from dataclasses import replace

    assert auto.auto is not None
    return tuple(
        replace(
            spec,
            context_window=auto.context_window,
            max_output_tokens=auto.max_output_tokens,
            max_prompt_tokens=auto.max_prompt_tokens,
        )
        for spec in auto.auto.inventory
    )


def _serving(counted: RequestCount) -> Callable[[GatewayApp], None]:
    """What run does with its gateway once built: counts its requests, and on a plan that
    can use only Copilot Auto serves the names no rule finds with ``auto`` (DESIGN: run's
    default model there), so any command's usual model names work."""

    def serving(app: GatewayApp) -> None:
        counted.serving(app)
        app.serve_auto_by_default()

    return serving


def _print_profile(base: dict[str, str], env: dict[str, str], argv: list[str], key: str) -> None:
    """The variables run sets (NAME=VALUE, quoted for a shell) and the command line, with
    the key shown as KEY: what to give the agent by hand with ``serve``."""
    lines = [
        f"{name}={shlex.quote(value.replace(key, 'KEY'))}"
        for name, value in env.items()
        if base.get(name) != value
    ]
    lines.append(shlex.join(arg.replace(key, "KEY") for arg in argv))
    click.echo("\n".join(lines))


# -- the gateway in a thread, the command in the foreground ---------------------------------


class _MainThreadSignals:
    """SIGINT, SIGTERM, SIGHUP and SIGQUIT for the main thread alone.

    Python runs signal handlers in the main thread, but the kernel may deliver a signal to
    any thread that does not block it; delivered to the gateway's thread, it would leave
    the main thread asleep in ``waitpid`` and the handler waiting with it (a SIGTERM for the
    command would never be passed on). Threads inherit the signal mask of the thread that
    starts them, so the signals are blocked while run's threads start (:meth:`hold`), and
    unblocked in the main thread once they have (:meth:`release`).
    """

    _SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})

    def __init__(self) -> None:
        self._before: set[int | signal.Signals] | None = None

    def hold(self) -> None:
        if self._before is None:
            self._before = signal.pthread_sigmask(signal.SIG_BLOCK, self._SIGNALS)

    def release(self) -> None:
        before, self._before = self._before, None
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


class _Gateway:
    """The gateway on its own thread and event loop, so the main thread can wait for the
    command (and take signals) while it serves."""

    def __init__(
        self,
        listener: socket.socket,
        gateway: Account,
        key: str,
        names: GatewayNames,
        *,
        max_credits: float | None = None,
        on_app: Callable[[GatewayApp], None] | None = None,
        access_line: Callable[[str], None] | None = None,
        ledger: LedgerChoice | None = None,
    ) -> None:
        from copilot_host.gateway import GatewayServer

        self._ready = threading.Event()
        # Off the main thread, so no signals; the open-file limit and malloc's thresholds
        # are the process's, which run is.
        self._server = GatewayServer(
            listener=listener,
            raise_open_files=True,
            tune_malloc=True,
            on_started=self._ready.set,
        )
        self.error: BaseException | None = None
        self.stopping = False
        self.on_failure: Callable[[BaseException | None], None] | None = None
        # The Auto-only line, when the plan is one (told before the gateway listens).
        self.plan: list[str] = []
        self.loop: asyncio.AbstractEventLoop | None = None

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            await serve_gateway(
                self._server,
                gateway,
                key,
                names,
                on_app=on_app,
                max_credits=max_credits,
                on_plan=self.plan.append,
                access_line=access_line,
                ledger=ledger,
                # Under run, the log file alone (its terminal is the command's).
                warn=ledger_warning,
            )

        def target() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:
                self.error = exc
            finally:
                self._ended()

        self._thread = threading.Thread(target=target, name="copilot-host gateway", daemon=True)

    def _ended(self) -> None:
        # A frame of its own: after asyncio.run in this thread, coverage's tracer no longer
        # sees the lines of the frame that called it, and these must be measured.
        started = self._ready.is_set()
        self._ready.set()
        if started and not self.stopping and self.on_failure is not None:
            self.on_failure(self.error)

    def start(self, signals: _MainThreadSignals) -> None:
        self._thread.start()
        # Every thread of run has started (the gateway's own threads are its children):
        # the main thread takes signals again, e.g. Ctrl-C while the gateway starts.
        signals.release()
        if not self._ready.wait(START_TIMEOUT):
            self.stop()
            raise CliFailure("gateway_start", "the gateway did not start within a minute")
        if self.error is not None:
            raise self.error.with_traceback(None)
        if not self._server.started:
            raise CliFailure("gateway_start", "the gateway stopped before it listened")

    def stop(self) -> None:
        self.stopping = True
        # Requests in flight get the server's grace period.
        self._server.stop()
        self._thread.join(self._server.grace + 5)


def _run(
    listener: socket.socket,
    gateway: Account,
    names: GatewayNames,
    log: LogFile | None,
    *,
    shown: str,
    program: str,
    args: tuple[str, ...],
    signals: _MainThreadSignals,
    max_credits: float | None = None,
    print_profile: bool = False,
    ledger: LedgerChoice | None = None,
) -> int:
    port = listener.getsockname()[1]
    base_url = f"http://{shown}:{port}/v1"
    key = new_key()
    counted = RequestCount()
    undo_access_log = access_log(log, counted, stderr=False)
    server = _Gateway(
        listener,
        gateway,
        key,
        names,
        max_credits=max_credits,
        on_app=_serving(counted),
        access_line=counted.line,
        ledger=ledger,
    )
    try:
        server.start(signals)
        base = dict(os.environ)
        setup = _set_up(
            server,
            counted.app,
            program=program,
            args=args,
            base=base,
            base_url=base_url,
            names=names,
        )
        env = child_environment(base, base_url=base_url, key=key)
        env.update(setup.env)
        env.update(dict.fromkeys(setup.key_env, key))
        argv = [program, *setup.args]
        notes = [*server.plan, *setup.notes]
        if notes:
            # run's one line before the command starts.
            os.write(2, f"copilot-host run: {'; '.join(notes)}\n".encode())
        if print_profile:
            _print_profile(base, env, argv, key)
            return 0
        with _quiet_terminal():
            return _foreground(argv, env, server)
    finally:
        server.stop()
        undo_access_log()
        if log is not None:
            log.write(counted.stop_line(emulator=gateway.emulator))


@contextmanager
def _quiet_terminal() -> Iterator[None]:
    """Nothing this process logs reaches the terminal while the command runs: stderr, as
    Python code sees it, is a sink (the command keeps the real descriptor 2)."""
    saved = sys.stderr
    with open(os.devnull, "w", encoding="utf-8") as sink:
        sys.stderr = sink
        try:
            yield
        finally:
            sys.stderr = saved


# prctl(2): the signal the calling process gets when the thread that made it ends.
_PR_SET_PDEATHSIG = 1


def _ends_with_run() -> Callable[[], None] | None:
    """On Linux, what the command runs before it starts so that it gets SIGTERM when run
    dies of a signal it cannot handle (SIGKILL, SIGSEGV, SIGABRT), as it does when run is
    told to stop; None elsewhere (macOS has no such call: the command keeps running).

    It runs in the forked child, where only the forking thread survives and the gateway's
    threads may have left any lock held: so it calls ``prctl`` (looked up here, in the
    parent) and ``getppid`` only, the second in case run died before the first took
    effect. The signal follows the thread that forks, run's main thread, which ends only
    with run. The kernel clears it when the command is set-user-ID or set-group-ID."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - not Linux; CI runs Linux
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a C library without prctl
        return None
    option, signum = ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGTERM)
    run_pid, terminated = os.getpid(), 128 + int(signal.SIGTERM)

    # test_run.py's run killed by SIGKILL shows it working; coverage cannot see it run.
    def set_death_signal() -> None:  # pragma: no cover - in the forked child, before exec
        prctl(option, signum)
        if os.getppid() != run_pid:
            os._exit(terminated)  # run is already gone

    return set_death_signal


def _foreground(argv: list[str], env: dict[str, str], server: _Gateway) -> int:
    """Run the command attached to this terminal; its exit status, or 128+N."""
    import subprocess

    child: subprocess.Popen[bytes] | None = None
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child is None:
            pending.append(signum)
        elif child.returncode is None:
            child.send_signal(signum)

    def ignore(_signum: int, _frame: FrameType | None) -> None:
        # The terminal sent Ctrl-C to the whole foreground group: the command has it.
        return

    def gateway_failed(error: BaseException | None) -> None:
        why = f" ({type(error).__name__})" if error is not None else ""
        os.write(2, f"copilot-host run: the gateway stopped{why}; ending the command\n".encode())
        if child is None:
            pending.append(signal.SIGTERM)  # not started yet: it gets it once it has
        elif child.returncode is None:
            child.send_signal(signal.SIGTERM)

    # Python handlers, not SIG_IGN: a handler is reset to the default in the command when
    # it starts, so the command still takes Ctrl-C; an ignored signal would stay ignored.
    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, ignore)
    server.on_failure = gateway_failed
    try:
        try:
            # The person's own command line, run as they typed it after --; its
            # preexec_fn is one system call (_ends_with_run says why that is safe here).
            child = subprocess.Popen(  # noqa: S603
                argv,
                env=env,
                preexec_fn=_ends_with_run(),  # noqa: PLW1509
            )
        except OSError as exc:
            # Found and executable, yet the kernel would not run it (not a program for
            # this machine, a script whose interpreter is missing): a shell says 126.
            raise CliFailure(
                "command_not_executable",
                f"{argv[0]}: cannot run it ({exc.strerror or type(exc).__name__})",
                exit_code=126,
            ) from None
        for signum in pending:
            child.send_signal(signum)
        returncode = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    return 128 - returncode if returncode < 0 else returncode
