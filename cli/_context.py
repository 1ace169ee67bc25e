"""One invocation's context: its output, its JSON error sink, the store and hosts it
makes, and the private test seam.

The seam is how tests point the CLI at the loopback emulator. It is reachable only from
Python, by passing ``obj=CliSeam(...)`` to ``main`` (click's test runner does this, and so
does the child-process harness in ``tests/cli``). No option, argument or environment
variable leads there: a person running ``copilot-host`` always talks to GitHub.com
through the adapter's fixed URLs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ._failure import ErrorSink, Problem
from ._output import Output

if TYPE_CHECKING:
    import httpx2

    from copilot_host import Clock
    from copilot_host.github import AsyncGitHubCopilotHost, EditorIdentity, GitHubCopilotHost
    from copilot_host.store import CredentialStore

__all__ = [
    "AsyncHostFactory",
    "CliSeam",
    "HostFactory",
    "error_sink",
    "make_async_host",
    "make_host",
    "make_store",
    "output",
    "seam",
    "set_error_sink",
    "use_json_errors",
]

_OUTPUT_KEY = "copilot_host_cli.output"
_ERROR_SINK_KEY = "copilot_host_cli.error_sink"
JSON_VERSION = 1

# Called as factory(store=..., clock=...) (and editor=... when COPILOT_HOST_EDITOR is
# set); returns a host the command owns (and closes).
HostFactory = Callable[..., "GitHubCopilotHost"]
# Called as factory(store=..., clock=...) on the event loop that will use it; returns an
# asynchronous host the command owns (and closes): serve's.
AsyncHostFactory = Callable[..., "AsyncGitHubCopilotHost"]


class CliSeam(NamedTuple):
    """What a test may substitute. ``None`` everywhere means the real thing.

    (A NamedTuple rather than a dataclass: immutable, and ``dataclasses`` stays out of
    the start-up of ``--help`` and ``--version``.)"""

    host_factory: HostFactory | None = None
    # Replaces webbrowser.open (returns whether a browser opened).
    open_browser: Callable[[str], bool] | None = None
    # Replaces the wait between device polls (the real one wakes early on cancel).
    sleep: Callable[[float], None] | None = None
    clock: Clock | None = None
    # Pretend stderr is (or is not) a terminal, to exercise the live countdown.
    err_is_tty: bool | None = None
    # The spinner/countdown refresh period of the login wait.
    tick: float | None = None
    # Called once the login wait has begun (tests use it to authorize in the emulator).
    on_waiting: Callable[[], None] | None = None
    async_host_factory: AsyncHostFactory | None = None
    # Makes the transport serve sends model requests through (None: the network).
    upstream_transport: Callable[[], httpx2.AsyncBaseTransport] | None = None
    # The longest wait for a best-effort live lookup (usage --report's quota).
    lookup_seconds: float | None = None
    # Makes the connector of Copilot's WebSocket (create_app's ``sockets``): with a test's
    # upstream_transport, sockets stay off unless this routes them too.
    upstream_sockets: Callable[[], Any] | None = None


def seam(ctx: click.Context | None = None) -> CliSeam:
    ctx = ctx or click.get_current_context()
    obj = ctx.find_object(CliSeam)
    return obj if obj is not None else CliSeam()


def output(ctx: click.Context | None = None) -> Output:
    ctx = ctx or click.get_current_context()
    out = ctx.meta.get(_OUTPUT_KEY)
    if not isinstance(out, Output):
        out = Output(err_is_tty=seam(ctx).err_is_tty)
        ctx.meta[_OUTPUT_KEY] = out
    return out


def set_error_sink(sink: ErrorSink) -> None:
    """In --json mode a failure is also reported on stdout, through ``sink``."""
    click.get_current_context().meta[_ERROR_SINK_KEY] = sink


def error_sink(ctx: click.Context) -> ErrorSink | None:
    sink = ctx.meta.get(_ERROR_SINK_KEY)
    return sink if callable(sink) else None


def use_json_errors(**fields: object) -> None:
    """For one-document commands: a failure becomes ``{"v":1,"error":{...}}`` on stdout,
    with ``fields`` beside the error (what a program can still use after a failure)."""
    out = output()

    def sink(problem: Problem) -> None:
        out.json(
            {
                "v": JSON_VERSION,
                "error": {
                    "code": problem.code,
                    "message": problem.message,
                    "retryable": problem.retryable,
                },
                **fields,
            }
        )

    set_error_sink(sink)


def make_store(*, key_file: bool = False) -> CredentialStore:
    """The store at ``$COPILOT_HOST_HOME`` (or the platform's state folder); new logins
    keep their key in the OS keyring, or with ``key_file`` in a 0600 file beside it."""
    from copilot_host.store import CredentialStore

    return CredentialStore(key_file=key_file)


def make_host(
    store: CredentialStore,
    editor: EditorIdentity | None = None,
    *,
    client_id: str | None = None,
) -> GitHubCopilotHost:
    """The GitHub.com host (or, in tests only, the seam's emulator-backed one);
    ``editor`` is what ``COPILOT_HOST_EDITOR`` named (None: the built-in identity),
    ``client_id`` the OAuth app a login is minted for (None: the default)."""
    s = seam()
    extra: dict[str, object] = {} if editor is None else {"editor": editor}
    if client_id is not None:
        extra["client_id"] = client_id
    if s.host_factory is not None:
        return s.host_factory(store=store, clock=s.clock, **extra)
    from copilot_host.github import GitHubCopilotHost

    if s.clock is not None:
        extra["clock"] = s.clock
    return GitHubCopilotHost(store=store, **extra)  # type: ignore[arg-type]


def make_async_host(
    store: CredentialStore, editor: EditorIdentity | None = None
) -> AsyncGitHubCopilotHost:
    """The asyncio GitHub.com host (or, in tests only, the seam's emulator-backed one);
    made on the event loop that will use it."""
    s = seam()
    extra: dict[str, object] = {} if editor is None else {"editor": editor}
    if s.async_host_factory is not None:
        return s.async_host_factory(store=store, clock=s.clock, **extra)
    from copilot_host.github import AsyncGitHubCopilotHost

    if s.clock is not None:
        extra["clock"] = s.clock
    return AsyncGitHubCopilotHost(store=store, **extra)  # type: ignore[arg-type]
