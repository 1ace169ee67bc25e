"""One model request upstream, through ``route.auth``, and its answer back to the client.

The request goes to the route's origin and its API's upstream path, nowhere else (``route.auth``
refuses any other origin, and redirects are not followed). It carries the body as the
client sent it and, of the client's headers, only those in
:data:`FORWARDED_REQUEST_HEADERS`: never the client's key, which ``route.auth`` replaces
with the session bearer anyway.

The answer keeps its status and content type. A JSON answer is read whole (bounded),
masked of every secret value the library knows (:func:`copilot_host.mask_secrets`) and
sent with its length. A Server-Sent Events answer is relayed as it arrives: each chunk is
sent as soon as it completes one or more events, masked event by event (a secret cannot
hide across the cut, since events end at a blank line and no secret holds a line break);
at most one unfinished event is held back, and at most :data:`MAX_ANSWER_BYTES` of it: an
event longer than that cuts the answer. Of the response headers only
:data:`RELAYED_RESPONSE_HEADERS` (and rate-limit headers) are relayed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2

import copilot_host as ch

from .. import _sse
from .._changes import AnswerPass, ApiChanges, RequestEdit
from ._access import FORWARDED_REQUEST_HEADERS, RequestHeaders
from ._flow import Outcome, Send
from ._hooks import AnswerObserver, HeaderFilter
from ._spend import QUOTA_HEADER_PREFIXES

__all__ = [
    "MAX_ANSWER_BYTES",
    "RELAYED_RESPONSE_HEADERS",
    "UPSTREAM_LIMITS",
    "UPSTREAM_TIMEOUT",
    "AnswerTooLarge",
    "Relayed",
    "Upstream",
    "relay",
    "relay_answer",
    "session_refused",
]

_log = logging.getLogger("copilot_host.gateway")

# Inference has no total deadline (a long answer streams for minutes); a read waiting
# this long for the next byte means the connection is dead. The pool wait is unbounded:
# a request queued behind others waits for them, and its client can hang up.
UPSTREAM_TIMEOUT = httpx2.Timeout(connect=10.0, read=600.0, write=60.0, pool=None)
# Many streams may be open at once; each holds one upstream connection for its length.
# Idle connections are kept on every transport: a new one costs a TCP and TLS handshake
# (about 6x a kept-alive request's CPU on loopback, bench/upstream_reuse.py, and two or
# three round trips to the service). On httpx2's own transport an answer that carried
# bytes past its declared length would hand them to the next request on its connection
# (an httpcore2 defect: docs/upstream/httpcore2-leftover-bytes.md says why that is not
# worth a new connection per request); aiohttp discards them.
UPSTREAM_LIMITS = httpx2.Limits(max_connections=512, max_keepalive_connections=64)

HeaderList = list[tuple[bytes, bytes]]

# Content-Type is forwarded apart: always, and always as JSON's.
_FORWARDED_UNTYPED = tuple(
    name.encode("ascii") for name in FORWARDED_REQUEST_HEADERS if name != "content-type"
)
# The one forwarded header that may rightly come more than once (a list of features); of
# any other, the first value goes, as the checks read it.
_REPEATABLE = frozenset({b"anthropic-beta"})

# Response headers relayed to the client, besides rate-limit headers (any name starting
# with one of _RATE_LIMIT_PREFIXES): what a client needs to read the answer, quote it to
# GitHub Support, and back off.
RELAYED_RESPONSE_HEADERS = frozenset(
    {"content-type", "x-request-id", "x-github-request-id", "retry-after"}
)
_RATE_LIMIT_PREFIXES = (
    "x-ratelimit-",
    "ratelimit",
    "anthropic-ratelimit-",
    # The account's quota, as the service reports it on each answer (gateway/_spend.py).
    *QUOTA_HEADER_PREFIXES,
)

_RELAYED = frozenset(name.encode("ascii") for name in RELAYED_RESPONSE_HEADERS)
_RATE_LIMIT_STARTS = tuple(prefix.encode("ascii") for prefix in _RATE_LIMIT_PREFIXES)
_QUOTA_STARTS = tuple(prefix.encode("ascii") for prefix in QUOTA_HEADER_PREFIXES)

# A JSON answer larger than this is refused (502 response_too_large), and a streamed
# event longer than this cuts the stream: model answers are far smaller, and the gateway
# holds a JSON answer (or an event) whole to mask it.
MAX_ANSWER_BYTES = 32 * 1024 * 1024


class AnswerTooLarge(Exception):
    """The upstream JSON answer, or one streamed event, was larger than MAX_ANSWER_BYTES."""


@functools.lru_cache(maxsize=64)
def _target(origin: str, path: str) -> tuple[httpx2.URL, bytes]:
    """The URL a route's requests go to and its Host header, made once: httpx2 parses a
    URL given as text on every request, and a route sends every request to the same one
    or three. (An IPv6 zone means something only on this side: it is not sent.)"""
    url = httpx2.URL(origin + path)
    host, bracket, port = url.netloc.partition(b"]")
    return url, (host.partition(b"%")[0] + bracket + port if bracket else url.netloc)


def _upstream_headers(headers: RequestHeaders) -> HeaderList:
    out: HeaderList = []
    values = headers.values
    for name in _FORWARDED_UNTYPED:
        value = values.get(name)
        if value is None:
            continue  # the usual case: most are not sent
        if name in _REPEATABLE:
            out += [(name, one) for one in headers.all(name)]
        else:
            out.append((name, value))
    kind = values.get(b"content-type") or b""
    if kind.split(b";", 1)[0].strip().lower() != b"application/json":
        kind = b"application/json"
    out.append((b"content-type", kind))
    return out


def _request(
    client: httpx2.AsyncClient, origin: str, path: str, body: bytes, forwarded: HeaderList
) -> httpx2.Request:
    """What ``client.build_request`` makes of these, made directly. Its merge of the
    client's headers copies them twice, and the request copies them twice more to add
    Host and Content-Length: most of the Python httpx2 spends on a relayed request's
    headers, for a list known here whole. The headers are the ones it would send, in its
    order: Host, the client's (each giving way to a forwarded one of its name), the
    forwarded ones, Content-Length."""
    url, host = _target(origin, path)
    if client.cookies:
        # A cookie the client kept from an earlier answer: build_request places its
        # header, so the request is made its way.
        return client.build_request("POST", url, content=body, headers=forwarded)
    names = {name.lower() for name, _ in forwarded}
    # As the request would: Host and the length only where no header (a hook's) gave them.
    headers = [] if b"host" in names else [(b"Host", host)]
    headers += [entry for entry in client.headers.raw if entry[0].lower() not in names]
    headers += forwarded
    if b"content-length" not in names and b"transfer-encoding" not in names:
        headers.append((b"Content-Length", str(len(body)).encode("ascii")))
    request = httpx2.Request(
        "POST",
        url,
        headers=headers,
        stream=httpx2.ByteStream(body),
        extensions={"timeout": client.timeout.as_dict()},
    )
    request.read()  # the body is whole already: sent with its length, not in chunks
    return request


def _relayed(response: httpx2.Response) -> list[tuple[bytes, bytes]]:
    """The answer's headers relayed to the client, names lower-case, in their order."""
    kept = [
        (lower, value)
        for name, value in response.headers.raw
        if (lower := name.lower()) in _RELAYED or lower.startswith(_RATE_LIMIT_STARTS)
    ]
    # One look for a secret in all the values kept (one is as likely as never), and a
    # value masked only when the look found one.
    values = b"\n".join([value for _, value in kept])
    if ch.mask_secrets(values) != values:
        kept = [(name, ch.mask_secrets(value)) for name, value in kept]
    return kept


def _value(kept: list[tuple[bytes, bytes]], name: bytes) -> str:
    """A relayed header's value as ``response.headers.get`` gives it (every value of the
    name, joined), read from the relayed headers: the answer's headers are searched once,
    not once per name read."""
    return b", ".join([value for key, value in kept if key == name]).decode("latin-1")


def session_refused(response: httpx2.Response) -> ch.SessionError:
    """The error for an upstream 401 that ``route.auth`` did not (or could not) retry."""
    return ch.SessionError(
        "the Copilot API refused this login's session; retry in a moment (if it "
        "persists, run `copilot-host status`)",
        code="session_refused",
        retryable=True,
        request_id=response.headers.get("x-github-request-id"),
    )


def _is_event_stream(kind: str) -> bool:
    return kind.split(";", 1)[0].strip().lower() == "text/event-stream"


@dataclass(slots=True)
class Relayed:
    """What the relay stage hands an upstream with the request's body: the request's edit
    and changes, the client's headers, where the answer goes (``send``) and what is noted
    of it (``outcome``), the auth for this request (``route.auth`` bound to its facts),
    the hooks, the headers added to the answer, its answer changes (``answers``: what they
    do to the answer, whole or event by event, before masking), and the facts read from
    the body (for an upstream that needs them apart from ``auth``)."""

    edit: RequestEdit
    changes: ApiChanges
    headers: RequestHeaders
    send: Send
    outcome: Outcome
    auth: httpx2.Auth | None = None
    header_filter: HeaderFilter | None = None
    observer: AnswerObserver | None = None
    extra_headers: tuple[tuple[bytes, bytes], ...] = ()
    answers: AnswerPass | None = None
    facts: ch.RequestFacts | None = None


class Upstream(Protocol):
    """Where the relay stage sends a request and how its answer comes back: :func:`relay`
    (HTTP), or a socket's own (:mod:`._copilot_socket`, Copilot's WebSocket), which answers
    through :func:`relay_answer`."""

    async def __call__(self, client: httpx2.AsyncClient, body: bytes, call: Relayed) -> None: ...


async def relay(client: httpx2.AsyncClient, body: bytes, call: Relayed) -> None:
    """Send the request upstream and relay its answer (see the module docstring).

    Raises before the answer starts (a failed session exchange, the network,
    :class:`AnswerTooLarge`): the caller then answers with an error of its own. A failure
    after the answer started propagates too; the server then cuts the connection, so the
    client sees an answer that did not end rather than a shorter one that did.
    ``call.changes`` gives the headers that go upstream and may reshape an answer read
    whole (the rate-limit refusal).
    """
    edit, changes = call.edit, call.changes
    route = edit.route
    forwarded = changes.headers(edit, _upstream_headers(call.headers))
    if call.header_filter is not None:
        forwarded = call.header_filter(route, forwarded)
    request = _request(client, route.origin, changes.api.protocol.path, body, forwarded)
    response = await client.send(request, auth=call.auth or route.auth, stream=True)
    if response.status_code < 200:
        await response.aclose()
        # Whatever the transport let through (an upstream 101 switches to a protocol
        # nobody here speaks), an answer below 200 is never a final one: relayed, the
        # client would read a 101 with a body.
        raise httpx2.RemoteProtocolError(
            f"the Copilot API answered with status {response.status_code}, not a final answer",
            request=request,
        )
    if response.status_code == 401:
        await response.aclose()
        # route.auth retried once with a new session (or a session this young was not
        # worth replacing): the refusal is of the session, not of the client's key.
        # Relayed as a 401 it would read as a wrong gateway key, which SDKs do not
        # retry; a 503 with Retry-After tells them to try again shortly.
        raise session_refused(response)
    await relay_answer(response, call)


async def relay_answer(response: httpx2.Response, call: Relayed) -> None:
    """An upstream answer to the client (see the module docstring), closed at the end."""
    outcome, observer, send, answers = call.outcome, call.observer, call.send, call.answers
    try:
        relayed = _relayed(response)
        outcome.upstream_id = _value(relayed, b"x-github-request-id")
        outcome.quota = tuple(
            [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in relayed
                if name.startswith(_QUOTA_STARTS)
            ]
        )
        if observer is not None:
            observer.start(response.status_code, response.headers)
        start: MutableMapping[str, Any] = {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": [*relayed, *call.extra_headers],
        }
        if _is_event_stream(_value(relayed, b"content-type")):
            await _relay_events(response, start, send, outcome, observer, answers=answers)
        else:
            await _relay_whole(
                response,
                start,
                send,
                outcome,
                observer,
                answers=answers,
                changes=call.changes,
                edit=call.edit,
            )
    finally:
        await response.aclose()


async def _relay_whole(
    response: httpx2.Response,
    start: MutableMapping[str, Any],
    send: Send,
    outcome: Outcome,
    observer: AnswerObserver | None,
    *,
    answers: AnswerPass | None,
    changes: ApiChanges,
    edit: RequestEdit,
) -> None:
    """A JSON answer: held whole (to mask it), then sent with its length."""
    whole = bytearray()
    async for chunk in response.aiter_bytes():
        whole += chunk
        if len(whole) > MAX_ANSWER_BYTES:
            raise AnswerTooLarge
    answer = ch.mask_secrets(answers.whole(bytes(whole)) if answers else bytes(whole))
    if response.status_code >= 400:
        refused = changes.reshape(response.status_code, answer, response.headers, edit)
        if refused is not None:
            # An upstream answer a change replaced (the rate-limit refusal: its module
            # says why).
            _log.warning("%s", refused.line)
            answer = refused.body
            kept = [(k, v) for k, v in start["headers"] if k.lower() != b"retry-after"]
            kept = [(k, v) for k, v in kept if k.lower() != b"content-type"]
            kept.append((b"content-type", b"application/json"))
            if refused.retry_after is not None:
                kept.append((b"retry-after", str(refused.retry_after).encode("ascii")))
            start["headers"] = kept
    if observer is not None:
        observer.whole(answer)
        observer.end()
    start["headers"].append((b"content-length", str(len(answer)).encode("ascii")))
    outcome.status = response.status_code
    await send(start)
    outcome.sent = len(answer)
    outcome.finish()
    await send({"type": "http.response.body", "body": answer, "more_body": False})


async def _relay_events(
    response: httpx2.Response,
    start: MutableMapping[str, Any],
    send: Send,
    outcome: Outcome,
    observer: AnswerObserver | None,
    *,
    answers: AnswerPass | None,
) -> None:
    """An event stream: each complete event is masked and sent as it arrives."""
    outcome.status = response.status_code
    await send(start)
    # One growing buffer, searched only where new bytes could complete an event: an
    # event arriving in many pieces costs time in proportion to its length.
    held = bytearray()
    async for chunk in response.aiter_bytes():
        fresh = max(len(held) - 1, 0)  # a line-ending pair may straddle the cut
        held += chunk
        cut = _sse.cut(held, fresh)
        if cut:
            complete = bytes(held[:cut])
            ready = ch.mask_secrets(answers.events(complete) if answers else complete)
            del held[:cut]
            outcome.sent += len(ready)
            await send({"type": "http.response.body", "body": ready, "more_body": True})
            if observer is not None:
                observer.events(ready)
        if len(held) > MAX_ANSWER_BYTES:
            # An event that never ends would be held without bound: the answer is cut
            # (the client sees it break off; the log says why).
            raise AnswerTooLarge
    tail = ch.mask_secrets(answers.events(bytes(held)) if answers and held else bytes(held))
    if observer is not None:
        if tail:
            observer.events(tail)
        observer.end()
    outcome.sent += len(tail)
    outcome.finish()
    await send({"type": "http.response.body", "body": tail, "more_body": False})
