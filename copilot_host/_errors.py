"""The one error tree of copilot-host.

Every error the library raises on purpose derives from ``CopilotHostError``; each carries a
stable ``code`` (for ``--json`` output and programs) and a ``retryable`` flag. Messages are
one actionable line and never contain a secret: they are built from our own words plus
server text that went through :func:`copilot_host._safety._text.clean`.

* CopilotHostError                  (every one: .code, .retryable, .request_id)
                                    itself: ledger_off (serve, run: --max-credits-per-day
                                    with the ledger off)
  x OriginError                     invalid_origin, origin_not_allowed, origin_mismatch
  x ModelValidationError            invalid_model
    + NoEligibleModelsError         no_models                     (.skipped)
  x RouteCollisionError             route_collision
  x LoginError                      login_failed, expiring_user_token (an app whose user
                                    tokens expire)
    + NotLoggedInError              not_logged_in
    + LoginChangedError             login_changed
    + AccessDeniedError             access_denied
    + DeviceCodeExpiredError        expired_token
    + LoginCancelledError           login_cancelled
    + LoginRevokedError             login_invalid
  x EntitlementError                no_copilot_access, not_signed_up, subscription_ended,
                                    oauth_app_not_enabled, personal_access_token,
                                    usage_unavailable, policy_refused (an organisation's
                                    policy refuses this client), integrator_refused (the
                                    model is not served to the login's OAuth app),
                                    auto_unavailable (Copilot Auto refused, or it offers
                                    no model on the API called; the status in the
                                    message), and GitHub's other notification ids as sent
  x TransportError                  network_error, timeout (retryable), network_config,
                                    answer_cut (the gateway: an answer broke off)
  x ServerError                     server_error, rate_limited    (retryable)
  x QuotaExceededError              quota_exceeded (.reset_at)
  x ResponseError                   bad_response, response_too_large, oauth_error
  x ClientOutdatedError             client_outdated               (.minimum_version)
  x SessionError                    session_expired, refresh_failed, timeout (retryable),
                                    host_closed, wrong_event_loop, session_refused
                                    (the gateway: upstream refused a session, retryable)
  x StoreError                      store_error, store_io, invalid_store_path,
                                    invalid_account, invalid_credential, key_file_missing,
                                    invalid_client_id, ledger_io (the ledger: retryable),
                                    key_file_io (a gateway's key file)
    + StoreCorruptError             store_corrupt, ledger_corrupt
    + StoreInsecureError            store_insecure, ledger_insecure
    + StoreVersionError             store_version, ledger_version
    + StoreLockedError              store_locked (retryable), gateway_running (another
                                    gateway holds the port's key file)
    + KeyringUnavailableError       keyring_unavailable, keyring_locked, keyring_timeout,
                                    keyring_entry_missing, keyring_entries_left
  x copilot_host.gateway.ServingError
                                    port_in_use, address_unavailable, listen_failed,
                                    server_unsupported (a uvicorn lacking what the
                                    gateway's server relies on)

The CLI's own codes, in its ``--json`` error documents beside the codes above (README, "Check
the login, list the models, log out"): already_logged_in, command_not_found, command_not_executable,
gateway_start (run: its gateway did not start), demo_failed, doctor_failed, no_answer (a
question the CLI asked went unanswered), ledger_unavailable, log_file_io, report_file_io,
output_failed (stdout or stderr could not be written), interrupted and terminated (a
signal: SIGINT, else SIGTERM or SIGHUP), interrupted_after_login (a signal just after a
login was stored), port_in_use (serve: another gateway has the port), internal_error (a
bug: the type only, the details under --debug).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from ._models import SkippedModel

__all__ = [
    "AccessDeniedError",
    "ClientOutdatedError",
    "CopilotHostError",
    "DeviceCodeExpiredError",
    "EntitlementError",
    "KeyringUnavailableError",
    "LoginCancelledError",
    "LoginChangedError",
    "LoginError",
    "LoginRevokedError",
    "ModelValidationError",
    "NoEligibleModelsError",
    "NotLoggedInError",
    "OriginError",
    "QuotaExceededError",
    "ResponseError",
    "RouteCollisionError",
    "ServerError",
    "SessionError",
    "StoreCorruptError",
    "StoreError",
    "StoreInsecureError",
    "StoreLockedError",
    "StoreVersionError",
    "TransportError",
]


class CopilotHostError(Exception):
    """Base of every error copilot-host raises on purpose.

    ``code`` is stable across releases; ``retryable`` says whether the same call may
    succeed later without the person doing anything. ``request_id`` is GitHub's
    ``x-github-request-id`` of the answer the error was built from, when it had one (also
    named in the message): what GitHub Support asks for.
    """

    code: str = "error"
    retryable: bool = False
    request_id: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool | None = None,
        request_id: str | None = None,
    ):
        # Imported here so that the error module stays dependency-free for the lazy package.
        from ._safety._text import one_line

        super().__init__(one_line(message))
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        if request_id is not None:
            self.note_request_id(request_id)

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def note_request_id(self, request_id: str | None) -> None:
        """Record the request id of the answer this error came from (once; a malformed id
        is ignored), and name it in the message."""
        if self.request_id is not None or not isinstance(request_id, str):
            return
        if not _REQUEST_ID.fullmatch(request_id):
            return
        self.request_id = request_id
        self.args = (f"{self.message} (GitHub request id {request_id})", *self.args[1:])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> tuple[object, ...]:
        # Keep code, retryable and request id across pickling (multiprocessing,
        # concurrent.futures), and what a subclass sets (``reset_at``, ``minimum_version``):
        # each waiter of a shared failure raises a copy made this way.
        return (
            _rebuild,
            (type(self), self.message, self.code, self.retryable, self.request_id),
            dict(self.__dict__),
        )


# GitHub's request ids are hex groups joined by ':' (e.g. "C0DE:1A2B:3C4D5E:6F7A8B:65F0"); a
# bounded, inert charset, so a hostile header cannot smuggle text into a message.
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._-]{0,79}")


def _rebuild(
    cls: type[CopilotHostError], message: str, code: str, retryable: bool, request_id: str | None
) -> CopilotHostError:
    error = cls(message, code=code, retryable=retryable)
    error.request_id = request_id
    return error


class OriginError(CopilotHostError, ValueError):
    """An inference origin is malformed, not on the allowlist, or not the one expected."""

    code = "invalid_origin"


class ModelValidationError(CopilotHostError, ValueError):
    """A model in the inventory failed validation; registration adds nothing."""

    code = "invalid_model"


class NoEligibleModelsError(ModelValidationError):
    """The inventory holds no model that can be registered; nothing was registered.

    ``skipped`` lists every entry and why it was skipped, so a program (or
    ``copilot-host models --all``) can still show them.
    """

    code = "no_models"
    skipped: tuple[SkippedModel, ...] = ()


class RouteCollisionError(CopilotHostError):
    """A route id is already held by another owner in the catalog."""

    code = "route_collision"


class LoginError(CopilotHostError):
    """Logging in failed, or there is no valid login."""

    code = "login_failed"


class NotLoggedInError(LoginError):
    code = "not_logged_in"


class LoginChangedError(LoginError):
    """The stored login changed (logout, or another account) while a session was in use."""

    code = "login_changed"


class AccessDeniedError(LoginError):
    code = "access_denied"


class DeviceCodeExpiredError(LoginError):
    code = "expired_token"


class LoginCancelledError(LoginError):
    code = "login_cancelled"


class LoginRevokedError(LoginError):
    """GitHub no longer accepts the stored credential (revoked or expired)."""

    code = "login_invalid"


class EntitlementError(CopilotHostError):
    """The account is logged in but may not use Copilot."""

    code = "no_copilot_access"


class TransportError(CopilotHostError):
    """The network failed: connection refused, reset, TLS failure or timeout."""

    code = "network_error"
    retryable = True


class ServerError(CopilotHostError):
    """The server answered with a 5xx or rate-limit status."""

    code = "server_error"
    retryable = True


class QuotaExceededError(CopilotHostError):
    """The account's Copilot quota is used up (HTTP 402 ``quota_exceeded``).

    ``reset_at`` is when the quota resets (an aware datetime), when the service said so.
    """

    code = "quota_exceeded"
    reset_at: datetime | None = None


class ResponseError(CopilotHostError):
    """The server's answer was malformed, too large, or an unexpected error."""

    code = "bad_response"


class ClientOutdatedError(CopilotHostError):
    """The service refused this client as too old (HTTP 466, a model's minimum editor
    version, a retired API version): upgrade copilot-host, or have the embedding
    application present a newer editor identity.

    ``minimum_version`` is the oldest version the refusal's text named as served
    (``"1.104.1"``), when it named one: the service gives no such field.
    """

    code = "client_outdated"
    minimum_version: str | None = None


class SessionError(CopilotHostError):
    """No usable Copilot session could be obtained."""

    code = "session_expired"


class StoreError(CopilotHostError):
    """The durable credential store cannot be used."""

    code = "store_error"


class StoreCorruptError(StoreError):
    code = "store_corrupt"


class StoreInsecureError(StoreError):
    code = "store_insecure"


class StoreVersionError(StoreError):
    code = "store_version"


class StoreLockedError(StoreError):
    code = "store_locked"
    retryable = True


class KeyringUnavailableError(StoreError):
    code = "keyring_unavailable"
