"""One exchange as it goes through the gateway's stages: the :class:`Flow`.

A flow is made when a request arrives and carries, stage by stage, what is known of it:
where it came from and how it is answered (ASGI ``receive``/``send``), the API it speaks
(:class:`~copilot_host.gateway._protocols.Api`) and the shape its errors take, the model
name it asked for and the route that serves it, the agent that sent it, the changes
applied, and the :class:`Outcome` the access line and the spend read. Each stage
(:mod:`._stages`) reads and fills it; the answer goes out through :meth:`Flow.answer` or
:meth:`Flow.refuse`, or through the relay.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import copilot_host as ch

from .._protocols import Api, ErrorShape
from ._access import Refusal, RequestHeaders

__all__ = ["CLOSE", "JSON", "Flow", "Message", "Outcome", "Receive", "Send"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = b"application/json"
CLOSE = (b"connection", b"close")
_log = logging.getLogger("copilot_host.gateway")


@dataclass(slots=True)
class Outcome:
    """What the access log and the spend say about one request's answer."""

    status: int = 0
    sent: int = 0
    upstream_id: str = ""
    # Set just before the last body message: from then on the server reports the request
    # as finished, which is not the client hanging up.
    done: bool = False
    # Called once, then: the access line is written before the client can see the end.
    on_done: Callable[[], None] | None = None
    # AI credits the answer reported (copilot_usage), None when it reported none; or, with
    # ``estimated``, what the gateway priced it at from its usage (embeddings).
    credits: float | None = None
    estimated: bool = False
    # The quota headers the answer carried, as relayed (names in lower case).
    quota: tuple[tuple[str, str], ...] = ()
    # The tokens the answer reported: the whole prompt, the answer, the prompt's part read
    # from the cache (None: not reported).
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    def add_cost(self, credits: float | None, *, estimated: bool = False) -> None:
        if credits is not None:
            self.credits = credits if self.credits is None else self.credits + credits
            self.estimated = self.estimated or estimated

    def set_tokens(self, tokens: tuple[int | None, int | None, int | None]) -> None:
        """What an answer (or a stream event, whose counts are running totals: the last
        one reported wins) says of its tokens."""
        given, answered, cached = tokens
        if given is not None:
            self.input_tokens = given
        if answered is not None:
            self.output_tokens = answered
        if cached is not None:
            self.cached_tokens = cached

    def finish(self) -> None:
        self.done = True
        callback, self.on_done = self.on_done, None
        if callback is not None:
            callback()


class Flow:
    """One exchange (see the module docstring)."""

    __slots__ = (
        "agent",
        "api",
        "asked",
        "body_read",
        "close",
        "errors",
        "headers",
        "method",
        "model",
        "outcome",
        "path",
        "receive",
        "recorded",
        "rewrote",
        "route",
        "send",
        "started",
        "task",
        "transport",
        "upstream",
        "via",
    )

    def __init__(
        self,
        receive: Receive,
        send: Send,
        *,
        headers: RequestHeaders,
        path: str,
        method: str,
        errors: ErrorShape,
        started: float,
        transport: str = "http",
    ) -> None:
        self.receive = receive
        self.send = send
        self.headers = headers
        self.path = path
        self.method = method
        self.errors = errors
        self.started = started
        self.transport = transport
        self.api: Api | None = None
        self.route: ch.ModelRoute | None = None
        # The name the request asked for, when it named one, and the model that served
        # it, both made fit to show (the access line shows both when they differ).
        self.asked = ""
        self.model = "-"
        # The route between them when Copilot Auto served the request (``auto``), else "".
        self.via = ""
        # Who sent it (a closed vocabulary: ._agents), for the ledger.
        self.agent = "other"
        self.outcome = Outcome()
        # Whether the request body has been read to its end (see refuse).
        self.body_read = False
        # Whether the answer ends the connection whatever it is (a request that carried
        # Transfer-Encoding).
        self.close = False
        # The changes applied, for the access line.
        self.rewrote: list[str] = []
        # Its ledger row, while it is recorded (._account.Recorded).
        self.recorded: Any = None
        # The task serving the request.
        self.task: asyncio.Task[Any]
        # Where the relay stage sends it, when not over HTTP (a socket's own upstream:
        # ._relay.Upstream).
        self.upstream: Any = None

    async def answer(
        self,
        status: int,
        body: bytes,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        content_type: bytes = JSON,
    ) -> None:
        outcome = self.outcome
        outcome.status = status
        outcome.sent = len(body)
        if self.close and CLOSE not in headers:
            headers = (*headers, CLOSE)
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode("ascii")),
                    *headers,
                ],
            }
        )
        outcome.finish()
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    async def refuse(self, refusal: Refusal) -> None:
        _log.debug("refused (%d %s)", refusal.status, refusal.code)
        body = self.errors.body(refusal.status, refusal.code, refusal.message)
        headers = refusal.headers
        if not self.body_read:
            # Refused before its body was read (a wrong key, a bad Host, a path not
            # served, a body too large): the connection ends with the answer, so the
            # server stops reading what the client still uploads instead of reading it
            # to the end.
            headers = (*headers, CLOSE)
        await self.answer(refusal.status, body, headers)
