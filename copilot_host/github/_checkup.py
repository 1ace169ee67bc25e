"""What ``copilot-host doctor`` asks GitHub, and what it reads of the answers.

Three kinds of step, each sans-IO (build a request, read its answer) with a small driver
over a blocking ``send``:

* the session exchange, read for what it says without its token: its refusal, when its
  answer arrived by this machine's clock and by GitHub's (``Date``), the session's
  ``expires_at``, the plan's ``sku``, and what it reports of the account's organisations
  (``chat_enabled``, how many organisations and enterprises give the seat);
* discovery (``GET {api}/models``) under each identity copilot-host presents (the editor's
  and the Copilot CLI's), read for its refusal, its ``client_version_deprecated`` notes and
  the oldest version a refusal names (the service publishes its minimum versions nowhere
  else: docs/WIRE.md, "What doctor reads");
* with the person's consent, one small model request per API, read for its refusal.

Nothing here raises for an answer: a refusal, a malformed answer or a network failure is
reported in the result, as the typed error the other steps raise for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from .._api import ApiProtocol
from .._clock import Clock
from .._errors import ClientOutdatedError, CopilotHostError, EntitlementError, SessionError
from .._hosts import CopilotSession, LoginIdentity
from .._models import Inventory
from .._safety._secret import Secret
from .._safety._text import clean
from .._sessions._refusals import POLICY_REFUSED, Refusal
from ._discovery import WHAT as DISCOVERY
from ._discovery import build_models_request, parse_models
from ._exchange import build_exchange_request, parse_exchange
from ._headers import EditorIdentity
from ._status import client_outdated_error, policy_error, server_date, status_error
from ._wire import INVALID, WireRequest, WireResponse, decode

__all__ = ["Checkup", "IdentityCheck", "ProbeCheck", "run_checkup", "run_probe"]

Send = Callable[[WireRequest], WireResponse]
# The warning code the service puts on every /models entry when it calls the client stale.
DEPRECATED = "client_version_deprecated"
# What a probe asks for: a one-word answer, at most this many tokens of it.
PROBE_PROMPT = "Reply with the single word: ok"
PROBE_TOKENS = 16
_API_NAMES = {
    ApiProtocol.OPENAI_CHAT: "Chat Completions",
    ApiProtocol.OPENAI_RESPONSES: "OpenAI Responses",
    ApiProtocol.ANTHROPIC_MESSAGES: "Anthropic Messages",
}


@dataclass(frozen=True, slots=True)
class IdentityCheck:
    """What ``/models`` answered one identity: ``name`` is ``"editor"`` (the chat client's)
    or ``"cli"`` (the Copilot CLI's); ``error`` is its refusal (None: served), ``models``
    the entries listed, ``deprecated`` whether an entry called the client deprecated, and
    ``minimum`` the oldest version the refusal named (None when it named none)."""

    name: str
    editor_version: str
    integration_id: str
    error: CopilotHostError | None = None
    models: int = 0
    deprecated: bool = False
    minimum: str | None = None

    @property
    def refused_by_policy(self) -> bool:
        return self.error is not None and self.error.code == "policy_refused"


@dataclass(frozen=True, slots=True)
class Checkup:
    """What the exchange and discovery answered the stored ``login``; no token in it.

    ``error`` is the exchange's refusal or failure (None: a session was granted).
    ``received_wall`` is this machine's clock when the answer arrived, ``server_date``
    GitHub's ``Date`` on it and ``expires_at`` the session's end by GitHub's clock (epoch
    seconds, each None when not known). ``sku``, ``chat_enabled``, ``organisations`` and
    ``enterprises`` (how many the answer lists) are as the answer says (None: absent).
    ``identities`` holds one :class:`IdentityCheck` per identity (none without a session);
    ``inventory`` is what the first identity served listed. ``policy_error`` is the
    ``policy_refused`` error naming every identity, when an organisation's policy refused
    them all.
    """

    login: LoginIdentity
    error: CopilotHostError | None = None
    received_wall: float | None = None
    server_date: float | None = None
    expires_at: float | None = None
    sku: str | None = None
    chat_enabled: bool | None = None
    organisations: int | None = None
    enterprises: int | None = None
    endpoint: str | None = None
    identities: tuple[IdentityCheck, ...] = ()
    inventory: Inventory | None = None
    policy_error: EntitlementError | None = None
    # What a probe needs: the session and the headers of the identity that was served.
    session: CopilotSession | None = field(default=None, repr=False)
    served: Mapping[str, str] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ProbeCheck:
    """One small model request: ``model`` on ``protocol``, answered ``status`` (None: no
    answer) in ``seconds``; ``error`` is its refusal (None: answered 200)."""

    protocol: ApiProtocol
    model: str
    status: int | None
    seconds: float
    error: CopilotHostError | None = None


def _count(value: object) -> int | None:
    return len(value) if isinstance(value, list) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object, limit: int) -> str | None:
    return clean(value, limit=limit) or None if isinstance(value, str) else None


def _answered(login: LoginIdentity, response: WireResponse) -> Checkup:
    """What the exchange's answer says besides the session, read leniently; the token is
    dropped before anything else is read."""
    base = Checkup(login, received_wall=response.received_wall, server_date=server_date(response))
    value = decode(response.body)
    if value is INVALID or not isinstance(value, dict):
        return base
    value.pop("token", None)
    chat = value.get("chat_enabled")
    endpoints = value.get("endpoints")
    return replace(
        base,
        expires_at=_number(value.get("expires_at")),
        sku=_text(value.get("sku"), 64),
        chat_enabled=chat if isinstance(chat, bool) else None,
        organisations=_count(value.get("organization_list")),
        enterprises=_count(value.get("enterprise_list")),
        endpoint=_text(endpoints.get("api"), 120) if isinstance(endpoints, dict) else None,
    )


def _integration(headers: Mapping[str, str]) -> str:
    return next((v for k, v in headers.items() if k.lower() == "copilot-integration-id"), "")


def _editor_version(headers: Mapping[str, str]) -> str:
    return next((v for k, v in headers.items() if k.lower() == "editor-version"), "")


def _identity(
    name: str, headers: Mapping[str, str], session: CopilotSession, send: Send
) -> tuple[IdentityCheck, Inventory | None]:
    integration = _integration(headers)
    check = IdentityCheck(name, _editor_version(headers), integration)
    try:
        found = parse_models(send(build_models_request(session, headers)), (integration,))
    except ClientOutdatedError as exc:
        return replace(check, error=exc, minimum=exc.minimum_version), None
    except CopilotHostError as exc:
        return replace(check, error=exc), None
    listed = len(found.models) + len(found.skipped)
    deprecated = any(DEPRECATED in spec.warning_codes for spec in found.models)
    return replace(check, models=listed, deprecated=deprecated), found


def run_checkup(
    login: LoginIdentity,
    token: Secret,
    editor: EditorIdentity,
    identities: Mapping[str, Mapping[str, str]],
    send: Send,
) -> Checkup:
    """Exchange ``token``, then list the models under each of ``identities`` (name ->
    headers, in order), reporting every answer."""
    try:
        response = send(build_exchange_request(token, editor))
    except CopilotHostError as exc:
        return Checkup(login, error=exc)
    base = _answered(login, response)
    try:
        session = parse_exchange(response, login)
    except CopilotHostError as exc:
        return replace(base, error=exc)
    checks: list[IdentityCheck] = []
    inventory: Inventory | None = None
    served: Mapping[str, str] | None = None
    for name, headers in identities.items():
        check, found = _identity(name, headers, session, send)
        checks.append(check)
        if found is not None and inventory is None:
            inventory, served = found, headers
    refused = [check.integration_id for check in checks if check.refused_by_policy]
    policy = None
    if checks and len(refused) == len(checks):
        policy = Refusal(POLICY_REFUSED, 403).error(DISCOVERY, refused)
    return replace(
        base,
        identities=tuple(checks),
        inventory=inventory,
        policy_error=policy,
        session=session,
        served=served,
    )


def _probe_body(protocol: ApiProtocol, model: str) -> dict[str, object]:
    if protocol is ApiProtocol.OPENAI_RESPONSES:
        return {
            "model": model,
            "input": PROBE_PROMPT,
            "max_output_tokens": PROBE_TOKENS,
            "stream": False,
        }
    if protocol is ApiProtocol.ANTHROPIC_MESSAGES:
        return {
            "model": model,
            "max_tokens": PROBE_TOKENS,
            "messages": [{"role": "user", "content": [{"type": "text", "text": PROBE_PROMPT}]}],
        }
    # GPT-5 and o-series models refuse Chat's max_tokens ("Use 'max_completion_tokens'
    # instead": jcode #190, caozhiyuan/copilot-api #164; reported).
    cap = "max_completion_tokens" if model.startswith(("gpt-5", "o1", "o3", "o4")) else "max_tokens"
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROBE_PROMPT}],
        cap: PROBE_TOKENS,
        "stream": False,
    }


def build_probe_request(
    session: CopilotSession, headers: Mapping[str, str], protocol: ApiProtocol, model: str
) -> WireRequest:
    """One small model request, as a person's own turn (``X-Initiator: user``); never
    retried: each send is billed."""
    sent = dict(headers)
    sent["Accept"] = "application/json"
    sent["Content-Type"] = "application/json"
    sent["X-Initiator"] = "user"
    if protocol is ApiProtocol.ANTHROPIC_MESSAGES:
        sent["anthropic-version"] = "2023-06-01"
    sent["Authorization"] = f"Bearer {session.token.reveal()}"
    body = json.dumps(_probe_body(protocol, model), separators=(",", ":")).encode()
    what = f"the {_API_NAMES[protocol]} probe ({clean(model, limit=64)})"
    return WireRequest("POST", session.endpoint.url(protocol.path), what, tuple(sent.items()), body)


def read_probe(
    response: WireResponse, request: WireRequest, identities: tuple[str, ...]
) -> CopilotHostError | None:
    """A probe's refusal as the typed error the other steps raise for it (None: 200)."""
    if response.status == 200:
        return None
    if response.status == 401:
        return SessionError(f"{request.what} was refused: the session was not accepted")
    found = client_outdated_error(response, request.what) or policy_error(
        response, request.what, identities
    )
    if found is not None:
        found.note_request_id(response.request_id)
        return found
    error = status_error(response, request.what)
    error.note_request_id(response.request_id)
    return error


def run_probe(
    checkup: Checkup, protocol: ApiProtocol, model: str, send: Send, clock: Clock
) -> ProbeCheck:
    """Send one probe with the session and identity ``checkup`` was served with."""
    session, headers = checkup.session, checkup.served
    if session is None or headers is None:
        raise SessionError("no Copilot session to probe with: the checkup found none")
    request = build_probe_request(session, headers, protocol, model)
    started = clock.monotonic()
    try:
        response = send(request)
    except CopilotHostError as exc:
        return ProbeCheck(protocol, model, None, clock.monotonic() - started, exc)
    seconds = clock.monotonic() - started
    error = read_probe(response, request, (_integration(headers),))
    return ProbeCheck(protocol, model, response.status, seconds, error)
