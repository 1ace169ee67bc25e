"""The emulated account of ``--emulator`` and ``demo``: the built-in GitHub emulator and a
login kept in a throwaway folder, and ``--emulator-script``, the tool calls its model makes.

The store is given its folder explicitly and keeps its data key in a key file inside it,
so neither ``COPILOT_HOST_HOME`` nor the OS keyring is ever read or written, and the
emulator's transports route GitHub's hosts to 127.0.0.1, so nothing leaves the machine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    import httpx2

    from copilot_host.github import AsyncGitHubCopilotHost, EditorIdentity
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator

    from ._account import Account

__all__ = [
    "ScriptedCall",
    "emulated_account",
    "emulated_login",
    "read_script",
    "script_option",
    "throwaway_store",
]

# One scripted tool call: the tool's name and its arguments (a JSON object).
ScriptedCall = tuple[str, Mapping[str, Any]]
# Larger than any script a person writes by hand; read whole.
_MAX_SCRIPT_BYTES = 1024 * 1024


def read_script(path: Path) -> tuple[ScriptedCall, ...]:
    """The tool calls of an ``--emulator-script`` file: a JSON list of ``{"name": TOOL,
    "arguments": {...}}`` (``arguments`` may be left out: ``{}``). A ``click.BadParameter``
    (one line) says what is wrong with any other content."""
    try:
        with path.open("rb") as file:
            raw = file.read(_MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise click.BadParameter(f"cannot read {path}: {why}") from None
    if len(raw) > _MAX_SCRIPT_BYTES:
        raise click.BadParameter(f"{path} is larger than 1 MiB")
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise click.BadParameter(f"{path} is not JSON") from None
    if not isinstance(value, list):
        raise click.BadParameter(
            f'{path} holds a JSON list of {{"name": ..., "arguments": {{...}}}}'
        )
    calls: list[ScriptedCall] = []
    for index, call in enumerate(value):
        name = call.get("name") if isinstance(call, dict) else None
        arguments = call.get("arguments", {}) if isinstance(call, dict) else None
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            raise click.BadParameter(
                f'{path}: call {index} is not {{"name": "TOOL", "arguments": {{...}}}}'
            )
        calls.append((name, arguments))
    return tuple(calls)


def _script(
    _ctx: click.Context, _param: click.Parameter, value: Path | None
) -> tuple[ScriptedCall, ...] | None:
    return None if value is None else read_script(value)


_F = TypeVar("_F", bound=Callable[..., object])


def script_option(command: _F) -> _F:
    """``--emulator-script FILE`` (as ``emulator_script``: the calls, None when absent)."""
    return click.option(
        "--emulator-script",
        "emulator_script",
        type=click.Path(dir_okay=False, path_type=Path),
        callback=_script,
        metavar="FILE",
        help="With --emulator: the emulated model calls these tools in turn, one per "
        'request that offers the tool, then answers text. FILE is a JSON list of {"name": '
        'TOOL, "arguments": {...}} (a custom tool\'s string input as {"input": ...}); the '
        "agent runs the calls for real on this machine.",
    )(command)


def throwaway_store(home: Path) -> CredentialStore:
    """A store in ``home`` (a throwaway folder) whose data key goes to a key file there."""
    from copilot_host.store import CredentialStore

    return CredentialStore(home, key_file=True)


@contextmanager
def emulated_login(
    editor: EditorIdentity | None = None, script: tuple[ScriptedCall, ...] = ()
) -> Iterator[tuple[CredentialStore, GitHubEmulator]]:
    """The emulator (text answers only, unless ``script`` lists the tool calls its model
    makes: ``--emulator-script``) and its account logged in to a store in a throwaway
    folder; everything is removed on exit. ``editor`` (``COPILOT_HOST_EDITOR``) is
    presented to the emulator as it would be to GitHub."""
    import tempfile

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator, Replies, Scenario, ToolCall

    # Text answers unless the person scripted calls: an agent would run an unscripted
    # call, with empty arguments, on this machine.
    calls = tuple(ToolCall(name, arguments) for name, arguments in script)
    scenario = Scenario(replies=Replies(tool_calls=False, tool_script=calls))
    with (
        tempfile.TemporaryDirectory(prefix="copilot-host-emulator-") as tmp,
        GitHubEmulator(scenario) as emulator,
    ):
        store = throwaway_store(Path(tmp) / "home")
        with GitHubCopilotHost(
            store=store, transport=emulator.transport(), editor=editor
        ) as person:
            person.login(sleep=lambda _seconds: None)
        yield store, emulator


@contextmanager
def emulated_account(
    editor: EditorIdentity | None = None, script: tuple[ScriptedCall, ...] = ()
) -> Iterator[Account]:
    """The emulator's account, logged in, for the gateway (see :func:`emulated_login`)."""
    from copilot_host.github import AsyncGitHubCopilotHost

    from ._account import Account

    with emulated_login(editor, script) as (store, emulator):

        def make_host() -> AsyncGitHubCopilotHost:
            return AsyncGitHubCopilotHost(
                store=store, transport=emulator.async_transport(), editor=editor
            )

        def make_transport() -> httpx2.AsyncBaseTransport:
            # The gateway's upstream over the transport serve runs on (aiohttp on
            # [fast]); the emulator's own would be httpx2's.
            from copilot_host.gateway import upstream_transport

            return emulator.async_transport(inner=upstream_transport())

        # Copilot's WebSocket too, for the models that list it: the emulator's own.
        yield Account(
            store, make_host, make_transport, emulator=True, make_sockets=emulator.socket_connector
        )
