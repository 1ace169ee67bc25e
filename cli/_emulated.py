"""The emulated account of ``--emulator`` and ``demo``: the built-in GitHub emulator and a
login kept in a throwaway folder.

The store is given its folder explicitly and keeps its data key in a key file inside it,
so neither ``COPILOT_HOST_HOME`` nor the OS keyring is ever read or written, and the
emulator's transports route GitHub's hosts to 127.0.0.1, so nothing leaves the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

    from copilot_host.github import AsyncGitHubCopilotHost, EditorIdentity
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator

    from ._account import Account

__all__ = ["emulated_account", "emulated_login", "throwaway_store"]


def throwaway_store(home: Path) -> CredentialStore:
    """A store in ``home`` (a throwaway folder) whose data key goes to a key file there."""
    from copilot_host.store import CredentialStore

    return CredentialStore(home, key_file=True)


@contextmanager
def emulated_login(
    editor: EditorIdentity | None = None,
) -> Iterator[tuple[CredentialStore, GitHubEmulator]]:
    """The emulator (text answers only) and its account logged in to a store in a
    throwaway folder; everything is removed on exit. ``editor`` (``COPILOT_HOST_EDITOR``)
    is presented to the emulator as it would be to GitHub."""
    import tempfile

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.testing import GitHubEmulator, Replies, Scenario

    # Text answers only: an agent would run an emulated tool call, with empty arguments,
    # on this machine.
    scenario = Scenario(replies=Replies(tool_calls=False))
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
def emulated_account(editor: EditorIdentity | None = None) -> Iterator[Account]:
    """The emulator's account, logged in, for the gateway (see :func:`emulated_login`)."""
    from copilot_host.github import AsyncGitHubCopilotHost

    from ._account import Account

    with emulated_login(editor) as (store, emulator):

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
