"""Stage: intake. A request's body read whole, in time, and parsed once.

The body must arrive within :func:`body_deadline` of the head (408 past it) and be at most
:data:`MAX_BODY_BYTES` (413); then it must be a JSON object (UTF-8, no byte-order mark,
nested at most :data:`copilot_host.gateway._json.MAX_DEPTH` levels) that names a
``model`` (400 otherwise). What ``route.auth`` would read from it again (image input,
initiator) is read from that one parse (:meth:`Api.facts`) and handed to it. A large body
is parsed in a worker thread, so the event loop keeps answering other requests while it is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import copilot_host as ch

from .._json import MAX_DEPTH, NotJson, loads
from .._protocols import Api
from ._access import Refusal, RequestHeaders
from ._flow import Receive

__all__ = [
    "BODY_SECONDS",
    "BODY_SECONDS_PER_MIB",
    "MAX_BODY_BYTES",
    "OFF_LOOP_ABOVE",
    "Parsed",
    "body_deadline",
    "parse_request",
    "read_body",
    "read_request",
]

# The largest request body accepted; past it the answer is 413. Large enough for a long
# conversation with several images inlined as base64.
MAX_BODY_BYTES = 32 * 1024 * 1024
# A request body must have arrived within BODY_SECONDS of the head, plus
# BODY_SECONDS_PER_MIB for each MiB of the larger of its declared and received sizes
# (some 8.7 KiB/s: far below any real client, far above one byte every few seconds);
# past it the answer is 408 and the connection is closed. Without it a key holder could
# hold a connection (and a descriptor) for ever by dripping a body.
BODY_SECONDS = 60.0
BODY_SECONDS_PER_MIB = 120.0
# A body larger than this is parsed, and changed, in a worker thread (a 32 MiB body takes
# a few hundred milliseconds to parse; a small one less than the thread hop costs).
OFF_LOOP_ABOVE = 1024 * 1024


def body_deadline(declared: int, received: int) -> float:
    """Seconds a request body has, from its head, to arrive whole: see
    :data:`BODY_SECONDS`."""
    return BODY_SECONDS + BODY_SECONDS_PER_MIB * max(declared, received) / (1024 * 1024)


@dataclass(slots=True)
class Parsed:
    """A request body as the gateway read it: the document, its model, its facts."""

    value: dict[str, Any]
    name: str
    facts: ch.RequestFacts


def parse_request(body: bytes, api: Api) -> Parsed | Refusal:
    """Read ``body`` once: a Refusal (400) unless it is a JSON object that names a model."""
    try:
        value = loads(body)
    except NotJson as exc:
        if exc.reason == "nested too deep":
            return Refusal(
                400,
                "invalid_request",
                f"copilot-host gateway: the body nests arrays and objects more than "
                f"{MAX_DEPTH} levels deep",
            )
        return Refusal(
            400,
            "invalid_json",
            "copilot-host gateway: the body is not JSON (UTF-8, without a byte-order mark)",
        )
    if not isinstance(value, dict):
        return Refusal(400, "invalid_json", "copilot-host gateway: the body is not a JSON object")
    name = value.get("model")
    if not isinstance(name, str) or not name:
        return Refusal(
            400,
            "missing_model",
            'copilot-host gateway: the body names no "model" (GET /v1/models lists them)',
        )
    return Parsed(value, name, api.facts(value, body))


async def read_request(body: bytes, api: Api) -> Parsed | Refusal:
    """:func:`parse_request`, in a worker thread when the body is large."""
    if len(body) > OFF_LOOP_ABOVE:
        return await asyncio.to_thread(parse_request, body, api)
    return parse_request(body, api)


def _too_large() -> Refusal:
    return Refusal(
        413,
        "request_too_large",
        f"copilot-host gateway: the request body is over {MAX_BODY_BYTES // (1024 * 1024)} MiB",
    )


async def read_body(
    receive: Receive, headers: RequestHeaders, task: asyncio.Task[Any]
) -> bytes | Refusal | None:
    """The whole request body; a Refusal when it is too large, its length malformed or it
    does not arrive in time (:func:`body_deadline`); None when the client hung up."""
    declared = headers.values.get(b"content-length")
    expected = 0
    if declared is not None:
        if not declared.strip().isdigit():
            return Refusal(400, "invalid_request", "copilot-host gateway: bad Content-Length")
        expected = int(declared)
        if expected > MAX_BODY_BYTES:
            return _too_large()
    # Chunks joined once at the end: one copy of a large body, not a growing buffer's.
    chunks: list[bytes] = []
    size = 0
    loop = task.get_loop()
    began = loop.time()
    # The deadline as one timer that cancels this task, and a flag that says it did
    # (asyncio.timeout's bookkeeping, which cost more than the rest of a read).
    late = False

    def expire() -> None:
        nonlocal late
        late = True
        task.cancel()

    cancelling = task.cancelling()
    timer = loop.call_at(began + body_deadline(expected, 0), expire)
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return _too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if size > expected:
                timer.cancel()
                timer = loop.call_at(began + body_deadline(expected, size), expire)
    except asyncio.CancelledError:
        # Cancelled by the deadline alone (not also from outside): the 408.
        if not late or task.uncancel() > cancelling:
            raise
        seconds = body_deadline(expected, size)
        return Refusal(
            408,
            "request_timeout",
            f"copilot-host gateway: the request body did not arrive within {seconds:.0f} s",
        )
    finally:
        timer.cancel()
