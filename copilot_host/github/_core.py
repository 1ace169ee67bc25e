"""What the blocking and asyncio GitHub hosts share: configuration, the identity check, the
credential held for redaction, and the store steps of a login. No network I/O here."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._clock import Clock
from .._errors import LoginChangedError
from .._hosts import LoginIdentity
from .._safety._redact import register_secret
from .._safety._secret import Secret
from ._headers import DEFAULT_EDITOR, EditorIdentity, check_client_id, copilot_headers
from ._login import Keep

if TYPE_CHECKING:
    from ..store import CredentialStore

__all__ = ["PROVIDER_ID", "HostCore"]

# The catalog owner key and route-id prefix of every route this adapter registers.
PROVIDER_ID = "github-copilot"


class HostCore:
    """Configuration and bookkeeping common to both hosts.

    ``availability()`` is the store's: the stored login, from its stat-keyed cache (no
    network, no keyring).
    """

    def __init__(
        self,
        *,
        store: CredentialStore | None,
        client_id: str,
        editor: EditorIdentity | None,
        clock: Clock,
        key_file: bool | None,
    ) -> None:
        if key_file is not None:
            warnings.warn(
                "the host's key_file= is deprecated (removed in 0.3.0): the store keeps the "
                "key, so choose there: CredentialStore(key_file=True)",
                DeprecationWarning,
                stacklevel=3,
            )
        if store is None:
            from ..store import CredentialStore

            store = CredentialStore(clock=clock, key_file=bool(key_file))
        self._store = store
        # The store's own method, not a wrapper: availability() runs before every request
        # an application sends, and a call frame there is a measurable share of its cost.
        self.availability: Callable[[], LoginIdentity | None] = store.availability
        # Only the deprecated argument overrides the store's own choice.
        self._key_file = key_file
        self._client_id = check_client_id(client_id)
        self._editor = editor if editor is not None else DEFAULT_EDITOR
        if not isinstance(self._editor, EditorIdentity):
            raise TypeError("editor must be an EditorIdentity")
        self._clock = clock
        self._headers: Mapping[str, str] = MappingProxyType(copilot_headers(self._editor))
        # The GitHub token last loaded or saved. Never read: holding it keeps it in the
        # redaction registry (a weak set), so logs are scrubbed of it and inventory
        # validation refuses an id or label carrying it, for as long as the host lives.
        self._held: Secret | None = None

    @property
    def provider_id(self) -> str:
        return PROVIDER_ID

    @property
    def store(self) -> CredentialStore:
        return self._store

    @property
    def editor(self) -> EditorIdentity:
        return self._editor

    @property
    def client_id(self) -> str:
        return self._client_id

    def request_headers(self) -> Mapping[str, str]:
        return self._headers

    # -- the store's part of the steps ----------------------------------------------------

    def _check(self) -> None:
        """Fail before a code is shown if the login could not be stored afterwards."""
        self._store.preflight(key_file=self._key_file)

    def _keep(self, step: Keep) -> LoginIdentity:
        identity = self._store.save(step.account, step.token, key_file=self._key_file).identity
        self._hold(step.token)
        return identity

    def _load(self, wanted: LoginIdentity) -> tuple[LoginIdentity, Secret]:
        """The stored login and token, if the stored login is still ``wanted``."""
        stored, token = self._store.load()
        if stored.login_id != wanted.login_id:
            raise LoginChangedError(
                "the stored login changed (logged out or logged in again elsewhere); "
                "register the models again"
            )
        self._hold(token)
        return stored, token

    def _load_current(self) -> tuple[LoginIdentity, Secret]:
        """The stored login and token, whoever it is (``NotLoggedInError`` if none)."""
        stored, token = self._store.load()
        self._hold(token)
        return stored, token

    def _hold(self, token: Secret) -> None:
        register_secret(token)
        self._held = token

    def _forget(self) -> None:
        self._held = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client_id={self._client_id!r})"
