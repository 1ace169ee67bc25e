"""Who may use the gateway: the request's Host, its Origin and its key, checked in that order.

* **Host** must name a loopback address and the port the gateway serves
  (``127.0.0.1:PORT``, ``localhost:PORT`` or ``[::1]:PORT``). A web page that rebinds its
  own DNS name to 127.0.0.1 still sends its own name as Host, so it is refused here
  (DNS rebinding).
* **Origin**: browsers send it on every cross-origin request a page's script makes (and
  ``null`` from sandboxed frames and local files); no program that holds the key needs
  it, so any Origin header is refused. There is no CORS: a page can never read an answer.
* **The key** comes as ``Authorization: Bearer KEY`` (OpenAI clients) or
  ``x-api-key: KEY`` (Anthropic clients), compared in constant time. Every key the
  request presents must be the gateway's, and there must be one.

One pass over the headers collects what these checks and the relay need
(:func:`read_headers`); a header the checks rely on that appears twice is refused rather
than guessed at.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._agents import TOLD_BY

__all__ = [
    "FORWARDED_REQUEST_HEADERS",
    "Refusal",
    "RequestHeaders",
    "check_access",
    "read_headers",
]

# Headers the access checks rely on: sent twice, the request is refused, not guessed at.
_SINGLE = frozenset({b"host", b"origin", b"authorization", b"x-api-key"})
# Client request headers sent upstream, each with the reason it is needed. Everything
# else stays here: the client's key, cookies, its User-Agent and SDK telemetry, proxy
# and forwarding headers. route.auth adds the bearer and the editor headers itself.
FORWARDED_REQUEST_HEADERS: Mapping[str, str] = {
    "content-type": "the body's media type, when it is JSON's (with its charset); the body "
    "was checked to be JSON, so any other (curl's form type) becomes application/json",
    "accept": "whether the client asks for an event stream or a JSON document",
    "anthropic-version": "the Messages API version the body is written for",
    "anthropic-beta": "the Messages API features the body opts into",
    "x-initiator": "the client's own word on who started the turn (user or agent), "
    "which route.auth keeps instead of reading it from the body",
}
# Documentation to read, not a setting: read-only, so changing it cannot look as if it did.
FORWARDED_REQUEST_HEADERS = MappingProxyType(dict(FORWARDED_REQUEST_HEADERS))
# Headers that tell which agent sent a request (copilot_host.gateway._agents): read, never
# forwarded, never logged (only the agent's name, from a closed vocabulary, is kept).
IDENTIFYING = frozenset(TOLD_BY)
# What else the gateway reads: the body's framing (declared length, transfer coding) and
# the headers it may forward.
_WANTED = (
    _SINGLE
    | IDENTIFYING
    | {b"content-length", b"transfer-encoding"}
    | {name.encode("ascii") for name in FORWARDED_REQUEST_HEADERS}
)


@dataclass(slots=True)
class RequestHeaders:
    """The request headers the gateway reads, lower-case names, values as sent."""

    # The first value of each header read (read as ``values.get(name)``: a method of
    # ours in front of it cost a Python call for each of the seven a request reads).
    values: dict[bytes, bytes] = field(default_factory=dict)
    # Every value, in order, of a header that came more than once (a forwarded header
    # such as anthropic-beta may repeat); :meth:`all` reads either.
    repeated: dict[bytes, list[bytes]] = field(default_factory=dict)
    # Access headers that came more than once.
    duplicated: set[bytes] = field(default_factory=set)

    def all(self, name: bytes) -> list[bytes] | tuple[bytes, ...]:
        """Every value of ``name``, in order (none when it was not sent)."""
        found = self.repeated.get(name)
        if found is not None:
            return found
        value = self.values.get(name)
        return () if value is None else (value,)


def read_headers(raw: Iterable[tuple[bytes, bytes]]) -> RequestHeaders:
    found = RequestHeaders()
    values = found.values
    for raw_name, value in raw:
        # ASGI servers give lower-case names; lower again so another server cannot
        # smuggle a second Host past the duplicate check in another case.
        name = raw_name.lower()
        if name not in _WANTED:
            continue
        first = values.get(name)
        if first is None:
            values[name] = value
            continue
        # Rare: a list kept only for a header that repeats.
        if name in _SINGLE:
            found.duplicated.add(name)
        repeated = found.repeated
        if name in repeated:
            repeated[name].append(value)
        else:
            repeated[name] = [first, value]
    return found


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


def allowed_hosts(port: int) -> frozenset[bytes]:
    """The Host values a gateway on ``port`` answers to."""
    names = (b"127.0.0.1", b"localhost", b"[::1]")
    hosts = {name + b":" + str(port).encode("ascii") for name in names}
    if port == 80:
        # A client omits the default port from Host.
        hosts.update(names)
    return frozenset(hosts)


_KEY_MISSING = Refusal(
    401,
    "invalid_api_key",
    "copilot-host gateway: send the gateway's key as `Authorization: Bearer KEY` or "
    "`x-api-key: KEY` (copilot-host serve shows it, and keeps it in its key file)",
    ((b"www-authenticate", b'Bearer realm="copilot-host"'),),
)
_KEY_WRONG = Refusal(
    401,
    "invalid_api_key",
    "copilot-host gateway: that is not this gateway's key (each run of copilot-host serve "
    "makes a new one; read it from the key file or the listening line)",
    ((b"www-authenticate", b'Bearer realm="copilot-host"'),),
)


def _bearer(value: bytes) -> bytes | None:
    scheme, _, credential = value.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    return credential.strip()


def check_access(
    headers: RequestHeaders, hosts: frozenset[bytes] | None, key: bytes
) -> Refusal | None:
    """None when the request may be served; else the first refusal, in the fixed order
    Host, Origin, key. ``hosts`` None means the server did not say which address it
    serves: nothing is served then."""
    duplicated = headers.duplicated
    if b"host" in duplicated:
        return Refusal(421, "invalid_host", "copilot-host gateway: more than one Host header")
    host = headers.values.get(b"host")
    if hosts is None or host is None or host.lower() not in hosts:
        return Refusal(
            421,
            "invalid_host",
            "copilot-host gateway: this gateway answers only requests addressed to "
            "127.0.0.1, localhost or [::1] on the port it serves (use the base URL it "
            "printed)",
        )
    if headers.values.get(b"origin") is not None:
        return _origin_refusal()
    if b"authorization" in duplicated or b"x-api-key" in duplicated:
        return Refusal(
            401,
            "invalid_api_key",
            "copilot-host gateway: send the key once, in one header",
            _KEY_MISSING.headers,
        )
    presented = []
    authorization = headers.values.get(b"authorization")
    if authorization is not None:
        bearer = _bearer(authorization)
        if bearer is None:
            return _KEY_WRONG
        presented.append(bearer)
    api_key = headers.values.get(b"x-api-key")
    if api_key is not None:
        presented.append(api_key.strip())
    if not presented:
        return _KEY_MISSING
    # Each presented key is compared in full (no early exit between them either), so the
    # time taken says nothing about how much of a guess was right.
    matches = [hmac.compare_digest(candidate, key) for candidate in presented]
    if not all(matches):
        return _KEY_WRONG
    return None


def _origin_refusal() -> Refusal:
    return Refusal(
        403,
        "origin_not_allowed",
        "copilot-host gateway: requests from web pages (any Origin header) are refused; "
        "call the gateway from a program",
    )
