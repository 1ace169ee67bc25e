"""What the blocking and asyncio GitHub hosts share: configuration, identity checks and
the cached credential kept in the redaction registry. No I/O here."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._clock import Clock
from .._errors import LoginChangedError
from .._hosts import LoginIdentity
from .._redact import register_secret
from .._secret import Secret
from ._headers import DEFAULT_EDITOR, EditorIdentity, check_client_id, copilot_headers

if TYPE_CHECKING:
    from ..store import CredentialStore

__all__ = ["PROVIDER_ID", "HostCore"]

# The catalog owner key and route-id prefix of every route this adapter registers.
PROVIDER_ID = "github-copilot"


class HostCore:
    """Configuration and bookkeeping common to both hosts."""

    def __init__(
        self,
        *,
        store: CredentialStore | None,
        client_id: str,
        editor: EditorIdentity | None,
        clock: Clock,
        key_file: bool,
    ) -> None:
        if store is None:
            from ..store import CredentialStore

            store = CredentialStore(clock=clock)
        self._store = store
        self._client_id = check_client_id(client_id)
        self._editor = editor if editor is not None else DEFAULT_EDITOR
        if not isinstance(self._editor, EditorIdentity):
            raise TypeError("editor must be an EditorIdentity")
        self._clock = clock
        self._key_file = bool(key_file)
        self._headers: Mapping[str, str] = MappingProxyType(copilot_headers(self._editor))
        self._token_lock = threading.Lock()
        # (login id, GitHub token) of the last credential loaded or saved. Holding it keeps
        # it in the redaction registry (a weak set), so logs are scrubbed of it and the
        # core's inventory validation refuses a model id or label that carries it.
        self._known_token: tuple[str, Secret] | None = None

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

    def availability(self) -> LoginIdentity | None:
        """The stored login, from the store's stat-keyed cache: no network, no keyring."""
        return self._store.availability()

    def request_headers(self) -> Mapping[str, str]:
        return self._headers

    def _remember(self, identity: LoginIdentity, token: Secret) -> None:
        register_secret(token)
        with self._token_lock:
            self._known_token = (identity.login_id, token)

    def _forget(self) -> None:
        with self._token_lock:
            self._known_token = None

    @staticmethod
    def _same_login(wanted: LoginIdentity, stored: LoginIdentity) -> None:
        if stored.login_id != wanted.login_id:
            raise LoginChangedError(
                "the stored login changed (logged out or logged in again elsewhere); "
                "register the models again"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client_id={self._client_id!r})"
