"""What the blocking and asyncio GitHub hosts share: configuration, the identity check, the
credential held for redaction, and the store steps of a login. No network I/O here."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._clock import Clock
from .._errors import CopilotHostError, LoginChangedError
from .._hosts import CopilotSession, LoginIdentity
from .._safety._redact import register_secret
from .._safety._secret import Secret
from .._sessions._auto import AutoProbe, AutoSession
from ._headers import (
    DEFAULT_CLIENT_ID,
    DEFAULT_EDITOR,
    EditorIdentity,
    check_client_id,
    cli_headers,
    copilot_headers,
)
from ._login import Keep
from ._usage import AUTO_ONLY_SKUS

if TYPE_CHECKING:
    from ..store import CredentialStore, Saved
    from ._wire import WireResponse

__all__ = ["PROVIDER_ID", "HostCore"]

_log = logging.getLogger("copilot_host.github")

# The catalog owner key and route-id prefix of every route this adapter registers.
PROVIDER_ID = "github-copilot"
# Organisation hosts, where a policy may allow one Copilot client and refuse another.
_ORGANISATION_HOSTS = frozenset(
    {"api.business.githubcopilot.com", "api.enterprise.githubcopilot.com"}
)


def _integration(headers: Mapping[str, str]) -> str | None:
    return next(
        (v.strip() for k, v in headers.items() if k.lower() == "copilot-integration-id"), None
    )


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
    ) -> None:
        if store is None:
            from ..store import CredentialStore

            store = CredentialStore(clock=clock)
        self._store = store
        # The store's own method, not a wrapper: availability() runs before every request
        # an application sends, and a call frame there is a measurable share of its cost.
        self.availability: Callable[[], LoginIdentity | None] = store.availability
        self._client_id = check_client_id(client_id)
        self._editor = editor if editor is not None else DEFAULT_EDITOR
        if not isinstance(self._editor, EditorIdentity):
            raise TypeError("editor must be an EditorIdentity")
        self._clock = clock
        # The two identities a request may present: the chat client's (the default) and
        # the Copilot CLI's, for organisations that allow only that one. Which one a login
        # uses is chosen at discovery and kept in memory for the life of the host.
        self._chat: Mapping[str, str] = MappingProxyType(copilot_headers(self._editor))
        self._cli: Mapping[str, str] = MappingProxyType(cli_headers(self._editor))
        self._headers: Mapping[str, str] = self._chat
        self._cli_logins: set[str] = set()
        # The login the last discovery was for: a switch made for its requests is kept
        # for it, so the next registration does not switch back.
        self._login: str | None = None
        # The GitHub token last loaded or saved. Never read: holding it keeps it in the
        # redaction registry (a weak set), so logs are scrubbed of it and inventory
        # validation refuses an id or label carrying it, for as long as the host lives.
        self._held: Secret | None = None
        self._saved: Saved | None = None
        # The logins whose Auto pool call was answered 404: their Auto sessions come from
        # the routing call from then on (docs/WIRE.md, "Copilot Auto").
        self._pool_refused: set[str] = set()

    @property
    def provider_id(self) -> str:
        return PROVIDER_ID

    @property
    def login_hint(self) -> str:
        """How a person logs in, for the core's "not logged in" messages."""
        return "run `copilot-host login` first"

    @property
    def store(self) -> CredentialStore:
        return self._store

    @property
    def editor(self) -> EditorIdentity:
        return self._editor

    @property
    def client_id(self) -> str:
        return self._client_id

    def client_id_mismatch(self) -> str | None:
        """The stored login's OAuth app when it is not this host's ``client_id=``, else None.

        A status check for applications (DESIGN, "Client id"): the token keeps working
        for the app it was minted for, but a re-login from this host would authorize a
        different app. None too when nobody is logged in. Reads only the record's header
        (no network, no keyring).
        """
        header = self._store.header()
        if header is None:
            return None
        stored = header.client_id if header.client_id is not None else DEFAULT_CLIENT_ID
        return None if stored == self._client_id else stored

    def request_headers(self) -> Mapping[str, str]:
        return self._headers

    def switch_identity(self, refused: Mapping[str, str]) -> Mapping[str, str] | None:
        """The other identity's headers, given the header set that was refused, and from
        now on what :meth:`request_headers` returns; None when there is no other one.

        The request pipeline calls this once for a request the service refused as the
        wrong client (an inventory model answered 400 ``model_not_supported``), and once
        more, with the headers it got here, when the request failed under them too: that
        hands the first identity back, so a switch that did not work is not kept."""
        refused_id = _integration(refused)
        for current, other in ((self._chat, self._cli), (self._cli, self._chat)):
            if refused_id == _integration(current):
                self._headers = other
                if self._login is not None:
                    if other is self._cli:
                        self._cli_logins.add(self._login)
                    else:
                        self._cli_logins.discard(self._login)
                return other
        return None

    # -- the identity at discovery ----------------------------------------------------------

    def _discovery_headers(self, session: CopilotSession) -> Mapping[str, str]:
        """The identity this login's discovery presents: the one that worked before."""
        login = session.identity.login_id
        self._login = login
        self._headers = self._cli if login in self._cli_logins else self._chat
        return self._headers

    def _discovery_fallback(
        self, session: CopilotSession, sent: Mapping[str, str], refused: WireResponse
    ) -> Mapping[str, str] | None:
        """The other identity to retry discovery with once, or None.

        Only a 403 from an organisation host, on a session that is not due for refresh
        (so not a stale one: the enterprise host answers those with 403 too): oh-my-pi
        issues #11372 and #11669 saw such organisations allow the Copilot CLI's identity
        only. From the CLI's identity (kept from an earlier discovery or an inference
        switch) the retry is the chat identity: a policy that has since turned the CLI
        off must not lock the login out of discovery for the life of the host."""
        if (
            refused.status != 403
            or session.endpoint.host not in _ORGANISATION_HOSTS
            or self._clock.monotonic() >= session.refresh_monotonic
        ):
            return None
        # ``sent`` is one of the two: ``_discovery_headers`` chose it.
        return self._cli if sent is self._chat else self._chat

    @staticmethod
    def _tried(*sent: Mapping[str, str] | None) -> tuple[str, ...]:
        """The integration ids of the header sets a discovery presented (for its refusal)."""
        return tuple(found for headers in sent if headers and (found := _integration(headers)))

    def _kept(self, session: CopilotSession, headers: Mapping[str, str]) -> None:
        """``headers`` worked for this login's discovery: its requests present them."""
        self._headers = headers
        if headers is self._cli:
            self._cli_logins.add(session.identity.login_id)
        else:
            self._cli_logins.discard(session.identity.login_id)

    # -- Copilot Auto -------------------------------------------------------------------

    def _asks_pool(self, session: CopilotSession) -> bool:
        """Whether an Auto session for this login comes from the pool call (the default)
        or, since that was answered 404, from the routing call."""
        return session.identity.login_id not in self._pool_refused

    def _pool_gated(self, session: CopilotSession) -> None:
        self._pool_refused.add(session.identity.login_id)

    def _probed(
        self, session: CopilotSession, found: AutoSession | CopilotHostError | None
    ) -> AutoProbe:
        """What registration makes of its one bounded pool call: the pool when it was
        read; else Auto's route only for a plan that can use nothing else (its requests
        try again, and fail plainly if Auto stays closed)."""
        only = session.sku in AUTO_ONLY_SKUS
        if isinstance(found, CopilotHostError):
            _log.debug("Copilot Auto's pool was not read at registration (%s)", found.code)
            return AutoProbe(None, offered=only, only=only)
        if found is None:
            self._pool_gated(session)
        return AutoProbe(found, offered=found is not None or only, only=only)

    # -- the store's part of the steps ----------------------------------------------------

    def _check(self) -> None:
        """Fail before a code is shown if the login could not be stored afterwards."""
        self._store.preflight()

    @property
    def last_saved(self) -> Saved | None:
        """What the store did when this host last kept a login (the record written, the
        login it replaced, a record set aside); None before any."""
        return self._saved

    def _keep(self, step: Keep) -> LoginIdentity:
        # The default app is not recorded: such a record stays format 1, readable by 0.3.0.
        minted = None if self._client_id == DEFAULT_CLIENT_ID else self._client_id
        saved = self._saved = self._store.save(step.account, step.token, client_id=minted)
        self._hold(step.token)
        return saved.identity

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
