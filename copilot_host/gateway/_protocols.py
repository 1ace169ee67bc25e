"""One descriptor per wire protocol the gateway serves: everything that differs by protocol.

The gateway serves OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and OpenAI
Embeddings. What differs between them is found here and nowhere else (a test scans the
gateway's syntax trees for any other reference to an :class:`copilot_host.ApiProtocol`
member or an error shape): the gateway's path and the upstream protocol, the error document,
the model list document, the request facts ``route.auth`` reads, the fields that cap an
answer's length, the fields a token estimate counts and where the last user text is, how a
stream names its events, the shape of an answer the gateway writes itself, and whether an
answer's usage is priced by the gateway. Each stage of a request asks the flow's
:class:`Api` rather than testing which one it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import copilot_host as ch
from copilot_host._internal import last_user_text, request_facts

from . import _sse
from ._documents import (
    Framer,
    Tokens,
    anthropic_entry,
    anthropic_list,
    chat_text,
    messages_text,
    messages_tokens,
    openai_chat_tokens,
    openai_entry,
    openai_list,
    responses_text,
    responses_tokens,
)
from ._json import dumps

__all__ = [
    "ANTHROPIC_ERRORS",
    "APIS",
    "BY_ENDPOINT",
    "CHAT",
    "EMBEDDINGS",
    "MESSAGES",
    "OPENAI_ERRORS",
    "RESPONSES",
    "Api",
    "ErrorShape",
    "api_of_path",
    "api_of_protocol",
    "converses",
    "endpoints_of",
    "errors_of",
    "models_api",
]


@dataclass(frozen=True, slots=True)
class ErrorShape:
    """How an API's clients read an error: OpenAI's ``{"error": {"message", "type", "code",
    "param"}}`` or Anthropic's ``{"type": "error", "error": {"type", "message"}}``, whose
    ``error.type`` is fixed by the status."""

    name: str
    types: Mapping[int, str]
    server_type: str
    client_type: str
    builder: Callable[[str, str, str], dict[str, Any]]

    def type_of(self, status: int) -> str:
        found = self.types.get(status)
        if found is not None:
            return found
        return self.server_type if status >= 500 else self.client_type

    def document(self, status: int, code: str, message: str) -> dict[str, Any]:
        """The error document (masked of every secret the library knows)."""
        return self.builder(self.type_of(status), code, ch.mask_secrets(message))

    def body(self, status: int, code: str, message: str) -> bytes:
        return dumps(self.document(status, code, message))


OPENAI_ERRORS = ErrorShape(
    "openai",
    # OpenAI answers a bad key with invalid_request_error and code invalid_api_key.
    MappingProxyType({401: "invalid_request_error", 429: "rate_limit_error"}),
    "server_error",
    "invalid_request_error",
    lambda kind, code, message: {
        "error": {"message": message, "type": kind, "code": code, "param": None}
    },
)
# The Anthropic API's error type for each status it documents.
ANTHROPIC_ERRORS = ErrorShape(
    "anthropic",
    MappingProxyType(
        {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }
    ),
    "api_error",
    "invalid_request_error",
    lambda kind, _code, message: {"type": "error", "error": {"type": kind, "message": message}},
)


@dataclass(frozen=True, eq=False)
class Api:
    """One wire protocol as the gateway serves it (see the module docstring)."""

    # The short name the ledger and the docs use: "chat", "responses", "messages".
    name: str
    protocol: ch.ApiProtocol
    # The gateway's path for it (the upstream path is ``protocol.path``).
    path: str
    errors: ErrorShape
    # Body fields that cap the answer's length, in the order the estimate reads them.
    output_caps: tuple[str, ...]
    # Body fields a token estimate counts (the prompt, the instructions, the tools).
    counted: tuple[str, ...]
    # Whether stream events carry an ``event:`` line (Chat Completions' do not).
    names_events: bool
    # Whether this API's clients are shown only the models that speak it (an Anthropic
    # client can call /v1/messages only; an OpenAI client calls any of the others).
    own_models_only: bool
    # How an answer the gateway writes itself carries a text (None: this API's answers
    # carry no text, as embeddings' do not).
    _text: Callable[[Framer, str, str, str, bool], bytes] | None = field(repr=False)
    # This API's clients' model list: its entry for one route (given the gateway paths it
    # is served on), and the document around the entries.
    _entry: Callable[[ch.ModelRoute, list[str]], dict[str, Any]] = field(repr=False)
    _listing: Callable[[list[dict[str, Any]]], dict[str, Any]] = field(repr=False)
    # The tokens an answer (or one of its stream events) reports.
    _tokens: Callable[[object], Tokens | None] = field(repr=False)
    # Whether an answer that reports no cost of its own (no ``copilot_usage``) is priced
    # from its ``usage`` and the model's token prices, as an estimate.
    prices_usage: bool = False
    # Other gateway paths it is served on too (a client whose base URL lacks the /v1).
    aliases: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        """Every gateway path it is served on, its own first."""
        return (self.path, *self.aliases)

    def __repr__(self) -> str:
        return f"<Api {self.name}>"

    @property
    def chat(self) -> bool:
        """Whether a request is a turn of a conversation: its answer is generated tokens
        (counted as output) and coding agents are offered its models. Embeddings are not."""
        return self.protocol.chat

    def speaks(self, spec: ch.ModelSpec | ch.ModelRoute) -> bool:
        """Whether a model (its spec or its route) lists this protocol's endpoint."""
        protocols = spec.spec.protocols if isinstance(spec, ch.ModelRoute) else spec.protocols
        return self.protocol in protocols

    def facts(self, value: object, body: bytes) -> ch.RequestFacts:
        """What ``route.auth`` would read from the body (image input, initiator)."""
        return request_facts(self.protocol, value, body=body)

    def event(self, data: dict[str, Any] | bytes, kind: str | None = None) -> bytes:
        """One stream event in this protocol's framing."""
        if self.names_events and kind is None and isinstance(data, dict):
            found = data.get("type")
            kind = found if isinstance(found, str) else None
        return _sse.encode(data, kind=kind if self.names_events else None)

    def text_answer(self, model: str, text: str, *, ident: str, stream: bool) -> bytes:
        """A whole answer (or, ``stream``, its event sequence) whose one text part is
        ``text``, as this API's clients read a model's answer: for what the gateway
        answers itself."""
        if self._text is None:
            raise TypeError(f"the {self.name} API's answers carry no text")
        return self._text(self.event, model, text, ident, stream)

    def last_user_text(self, value: dict[str, Any]) -> str | None:
        """The text of the last user message of a request body, None when it has none."""
        return last_user_text(self.protocol, value)

    def tokens(self, value: object) -> Tokens | None:
        """(input, output, cached) tokens a whole answer or a stream event's data reports
        (each None when not reported; None when it reports no usage at all). Stream events
        report running totals: the last one counts."""
        return self._tokens(value)

    def model_entry(self, route: ch.ModelRoute) -> dict[str, Any]:
        """One model as ``GET /v1/models/{name}`` shows it to this API's clients."""
        return self._entry(route, endpoints_of(route))

    def model_list(self, routes: Iterable[ch.ModelRoute]) -> bytes:
        """``GET /v1/models`` for this API's clients (masked of known secrets), sorted by
        id (see ``own_models_only``)."""
        shown = [
            self.model_entry(route)
            for route in sorted(routes, key=lambda route: route.model_id)
            if not self.own_models_only or self.speaks(route)
        ]
        return ch.mask_secrets(dumps(self._listing(shown)))


def endpoints_of(route: ch.ModelRoute) -> list[str]:
    """The gateway paths a route may be called on, in order of preference."""
    return [api.path for api in APIS if api.speaks(route)]


def converses(spec: ch.ModelSpec) -> bool:
    """Whether a model speaks a chat API (coding agents are offered no other)."""
    return any(api.chat and api.speaks(spec) for api in APIS)


CHAT = Api(
    "chat",
    ch.ApiProtocol.OPENAI_CHAT,
    "/v1/chat/completions",
    OPENAI_ERRORS,
    ("max_tokens", "max_completion_tokens"),
    ("messages", "tools"),
    False,
    False,
    chat_text,
    openai_entry,
    openai_list,
    openai_chat_tokens,
)
RESPONSES = Api(
    "responses",
    ch.ApiProtocol.OPENAI_RESPONSES,
    "/v1/responses",
    OPENAI_ERRORS,
    ("max_output_tokens",),
    ("instructions", "input", "tools"),
    True,
    False,
    responses_text,
    openai_entry,
    openai_list,
    responses_tokens,
    # Codex joins its provider's base URL and /responses: both spellings or neither (its
    # WebSocket is taken on the same two paths).
    aliases=("/responses",),
)
MESSAGES = Api(
    "messages",
    ch.ApiProtocol.ANTHROPIC_MESSAGES,
    "/v1/messages",
    ANTHROPIC_ERRORS,
    ("max_tokens",),
    ("system", "messages", "tools"),
    True,
    True,
    messages_text,
    anthropic_entry,
    anthropic_list,
    messages_tokens,
)

# OpenAI's embeddings (POST /v1/embeddings) to Copilot's /embeddings: no stream, no output
# cap, errors in OpenAI's shape; its answers report no cost (docs/WIRE.md, "Embeddings"),
# so their usage is priced from the inventory.
EMBEDDINGS = Api(
    "embeddings",
    ch.ApiProtocol.OPENAI_EMBEDDINGS,
    "/v1/embeddings",
    OPENAI_ERRORS,
    (),
    ("input",),
    False,
    False,
    None,
    openai_entry,
    openai_list,
    openai_chat_tokens,
    prices_usage=True,
)

# In the order of ApiProtocol: the chat APIs in their order of preference (a model listing
# several is routed to the first), then embeddings.
APIS: tuple[Api, ...] = tuple(
    sorted(
        (CHAT, RESPONSES, MESSAGES, EMBEDDINGS),
        key=lambda api: list(ch.ApiProtocol).index(api.protocol),
    )
)
# The order the gateway's messages and docs list the endpoints in.
BY_ENDPOINT: tuple[Api, ...] = (CHAT, RESPONSES, MESSAGES, EMBEDDINGS)
_BY_PATH = MappingProxyType({path: api for api in APIS for path in api.paths})
_BY_PROTOCOL = MappingProxyType({api.protocol: api for api in APIS})


def api_of_path(path: str) -> Api | None:
    """The protocol a gateway path serves, None for any other path."""
    return _BY_PATH.get(path)


def api_of_protocol(protocol: ch.ApiProtocol) -> Api:
    return _BY_PROTOCOL[protocol]


def errors_of(api: Api | None, *, models: bool, anthropic_version: bytes | None) -> ErrorShape:
    """The shape a path's errors take: its API's (``api``), on the model list paths
    (``models``) the shape of the client asking (:func:`models_api`), OpenAI's elsewhere."""
    if api is not None:
        return api.errors
    if models:
        return models_api(anthropic_version).errors
    return OPENAI_ERRORS


def models_api(anthropic_version: bytes | None) -> Api:
    """Whose documents ``GET /v1/models`` answers in: Anthropic's when the request carries
    ``anthropic-version`` (what Anthropic clients send), OpenAI's otherwise."""
    return MESSAGES if anthropic_version is not None else CHAT
