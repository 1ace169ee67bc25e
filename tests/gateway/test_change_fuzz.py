"""Malformed input never crashes a change: every entry of the table, fuzzed through the app.

Bodies shaped like each API's requests, with any JSON value in any field
(tests/gateway/_wire_strategies.py), go over a real socket to a gateway on each server
stack (``fast``: httptools, aiohttp and orjson; ``pure``: h11, httpx2's own transport and
``json``) in front of the loopback emulator with every check lenient, so that what the
gateway sends is answered, not refused; once with every change on, once with the
switchable ones off. Upstream answers with hostile tool calls, costs and refusals
(tests/gateway/_answer_strategies.py) come back from a scripted upstream through the
answer changes. Each example asserts that the gateway itself never answers 5xx and never
cuts an answer short; each target, that its examples reached every entry it aims at (the
``event()`` counts show with ``--hypothesis-show-statistics``);
:func:`test_every_side_of_every_entry_is_aimed_at`, that the targets together aim at every
side of every entry of the table.

Each target carries as ``@example``s the bodies of the outside review's four causes of a
500 (hardening N3: a server tool's or tool_choice's name that is a list or an object; a
namespace's or additional_tools item's ``tools`` that is a number or a boolean; a lone
surrogate in a tool name or in the model's custom-tool input; nesting of about 1,000
levels), and those of what the targets found since.

Each example is one request through a real gateway (a few milliseconds), so a target runs
a twentieth of the profile's budget (:data:`FUZZ`): 100 examples on CI and in a plain run.
"""

from __future__ import annotations

import functools
import http.client
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import httpx2
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from copilot_host import _accel
from copilot_host.gateway._changes import COUNT_TOKENS, TABLE, Change, Side
from copilot_host.gateway._server import ServerStack
from copilot_host.gateway._server._stack import PURE_PYTHON
from copilot_host.testing import GitHubEmulator, RecordedRequest, Scenario
from tests._extras import require
from tests._wsclient import TERMINAL, SocketClient
from tests.gateway._answer_strategies import Answer, answers
from tests.gateway._support import Gateway, running_gateway
from tests.gateway._wire_strategies import (
    Deep,
    Ref,
    Request,
    chat_requests,
    embeddings_requests,
    encode,
    messages_requests,
    responses_requests,
)

_F = TypeVar("_F", bound=Callable[..., None])

# A twentieth of the profile's examples a target, and at least 100 (a plain run and CI:
# 100; HYPOTHESIS_PROFILE=long: 1,000).
FUZZ = settings(
    max_examples=max(100, settings().max_examples // 20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
STACKS = {"fast": ServerStack(http="httptools", transport="aiohttp"), "pure": PURE_PYTHON}
PATHS = {"messages": "/v1/messages", "responses": "/v1/responses", "chat": "/v1/chat/completions"}
PATHS["embeddings"] = "/v1/embeddings"


def label(name: str, side: str) -> str:
    return f"{name} ({side})"


def labels(side: str, *names: str) -> set[str]:
    return {label(name, side) for name in names}


def over_http(change: Change) -> bool:
    """Whether ``change`` acts on requests over HTTP (warm-up is the socket's alone)."""
    return "http" in change.transports


# What each target aims at: the entries (and sides) its bodies make act.
AIMS = {
    "messages": {
        *(
            label(change.name, Side.REQUEST)
            for change in TABLE
            if "messages" in change.apis and Side.REQUEST in change.sides and over_http(change)
        ),
        label("betas", Side.HEADERS),
    },
    "count_tokens": {label("count-tokens", Side.LOCAL)},
    "responses": {
        *(
            label(change.name, Side.REQUEST)
            for change in TABLE
            if "responses" in change.apis
            and Side.REQUEST in change.sides
            and change.name != "betas"
            and over_http(change)
        ),
        label("betas", Side.HEADERS),
    },
    "chat": {*labels(Side.REQUEST, "max_tokens", "max_completion_tokens", "model", "sampling")}
    | {label("betas", Side.HEADERS)},
    # With every switchable change off, the always-on ones splice the bytes as sent.
    "bare": {*labels(Side.REQUEST, "model", "system"), label("betas", Side.HEADERS)},
    "embeddings": {
        *labels(Side.REQUEST, "embeddings-tokens", "embeddings-inputs", "embeddings-dimensions"),
        *labels(Side.REQUEST, "embeddings-input", "encoding-format", "model"),
        *labels(Side.ANSWER, "encoding-format", "embeddings-envelope"),
        label("betas", Side.HEADERS),
    },
    # Responses over the WebSocket: Codex's warm-up, answered by the gateway.
    "socket": {*labels(Side.REQUEST, "warm-up", "model")},
    "answers": {*labels(Side.ANSWER, "custom-tools", "namespaces")}
    | {*labels(Side.RESHAPE, "rate-limit", "policy-refusal", "auto-only")},
}

REACHED: Counter[str] = Counter()


def reach(found: set[str]) -> None:
    for name in sorted(found):
        event(name)
    REACHED.update(found)


def reaching(aim: str) -> Callable[[_F], _F]:
    """The fuzz target, then a check that its examples reached everything it aims at."""

    def wrap(test: _F) -> _F:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> None:
            REACHED.clear()
            test(*args, **kwargs)
            missing = AIMS[aim] - set(REACHED)
            assert not missing, f"never reached: {sorted(missing)}; reached {dict(REACHED)}"

        return run  # type: ignore[return-value]

    return wrap


def test_every_side_of_every_entry_is_aimed_at() -> None:
    every = {label(change.name, side) for change in TABLE for side in change.sides}
    aimed = set().union(*AIMS.values())
    assert aimed == every


# -- the gateways --------------------------------------------------------------------------


@contextmanager
def on_stack(name: str) -> Iterator[ServerStack]:
    """The server stack ``name``; on the pure one, request bodies parsed by ``json`` too
    (the process imported orjson when it chose its parser)."""
    with pytest.MonkeyPatch.context() as patch:
        if name == "pure":
            patch.setattr(_accel, "orjson", None)
        else:
            for module in ("httptools", "aiohttp", "orjson"):
                require(module)
        yield STACKS[name]


@pytest.fixture(scope="module", params=sorted(STACKS))
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextmanager
def serving(
    stack: str, factory: pytest.TempPathFactory, scenario: Scenario | None = None, **options: Any
) -> Iterator[Gateway]:
    """A gateway on ``stack`` over an emulator of ``scenario``, made with ``options``."""
    home = factory.mktemp("fuzz") / "home"
    with (
        on_stack(stack) as chosen,
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, home, stack=chosen, **options) as gateway,
    ):
        yield gateway


@pytest.fixture(scope="module")
def lenient(stack: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway on ``stack`` over the emulator with every check lenient."""
    with serving(stack, tmp_path_factory, Scenario(lenient=True)) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def bare(stack: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """``lenient`` with every switchable change off (``COPILOT_HOST_REWRITES=-…``)."""
    with serving(stack, tmp_path_factory, Scenario(lenient=True), rewrites=frozenset()) as gateway:
        yield gateway


def send(gateway: Gateway, path: str, request: Request) -> tuple[int, bytes, str]:
    """One request on a fresh connection: the status, the whole answer (an answer cut
    short raises http.client.IncompleteRead), and its access line."""
    gateway.emulator.clear_requests()
    gateway.access.lines.clear()
    gateway.seen.clear()
    status, _headers, data = gateway.raw(
        "POST",
        path,
        body=encode(request.body, ascii_only=request.ascii_only),
        headers=request.headers(),
    )
    (line,) = gateway.access.lines
    assert status < 500, f"{status} {data[:400]!r}"
    return status, data, line


def rewrote(line: str) -> set[str]:
    for part in line.split():
        if part.startswith("rewrote="):
            return {label(name, Side.REQUEST) for name in part[8:].split(",")}
    return set()


def upstream(gateway: Gateway) -> tuple[RecordedRequest, dict[str, Any]] | None:
    """The model request the emulator received, and its body, if one went upstream."""
    found = [record for record in gateway.emulator.requests if record.model is not None]
    if not found:
        return None
    (record,) = found
    document = json.loads(record.body)
    return record, document if isinstance(document, dict) else {}


def always_on(gateway: Gateway, request: Request, *, switchable: bool = True) -> set[str]:
    """The always-on entries (not named in rewrote=) seen acting in what went upstream
    (``switchable``: with the switchable ones on, beta-fields among them)."""
    sent = upstream(gateway)
    body = request.body
    if sent is None or not isinstance(body, dict):
        return set()
    record, document = sent
    found = set()
    if body.get("model") != record.model:
        found.add(label("model", Side.REQUEST))
    if isinstance(body.get("system"), str) and isinstance(document.get("system"), list):
        found.add(label("system", Side.REQUEST))
    if request.beta is not None and record.headers.get("anthropic-beta") != request.beta:
        found.add(label("betas", Side.HEADERS))
    if (
        switchable
        and "context-management-2025-06-27" in (request.beta or "")
        and "context_management" in body
        and "context_management" in document
    ):
        # Kept because the betas entry found its beta among those served.
        found.add(label("betas", Side.REQUEST))
    return found


# -- the review's bodies (hardening N3) ---------------------------------------------------

_USER = [{"role": "user", "content": "hi"}]
_MESSAGES = {"model": "claude-opus-5", "max_tokens": 64, "messages": _USER}
_WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}
_TOOL = {"name": "read", "description": "read a file", "input_schema": {"type": "object"}}
_RESPONSES: dict[str, Any] = {"model": "gpt-5.5", "input": "hi"}
_SURROGATE = "\ud800"


REVIEW_MESSAGES = [
    # A server tool's name that is a list or an object (unhashable).
    {**_MESSAGES, "tools": [{**_WEB_SEARCH, "name": ["web_search"]}, _TOOL]},
    {**_MESSAGES, "tools": [{**_WEB_SEARCH, "name": {"n": 1}}, _TOOL]},
    {**_MESSAGES, "tools": [{**_WEB_SEARCH, "name": ["web_search"]}]},
    # tool_choice.name a list or an object, after a server tool went.
    {**_MESSAGES, "tools": [_WEB_SEARCH, _TOOL], "tool_choice": {"type": "tool", "name": ["x"]}},
    {**_MESSAGES, "tools": [_WEB_SEARCH, _TOOL], "tool_choice": {"type": "tool", "name": {}}},
    # Nesting of about 1,000 levels in a body the changes rewrite.
    {**_MESSAGES, "system": "s", "messages": Deep(1000)},
    {**_MESSAGES, "tools": [_WEB_SEARCH, {**_TOOL, "input_schema": Deep(1000, dict_=True)}]},
]
REVIEW_COUNT_TOKENS = [
    {**_MESSAGES, "messages": Deep(1000)},
    {**_MESSAGES, "system": [{"type": "text", "text": Deep(1000, dict_=True)}]},
    {**_MESSAGES, "tools": [{**_TOOL, "input_schema": Deep(990)}]},
]
REVIEW_RESPONSES = [
    # A namespace tool's tools, or an additional_tools item's, that is a number or boolean.
    {**_RESPONSES, "tools": [{"type": "namespace", "name": "ns", "tools": 3}]},
    {**_RESPONSES, "tools": [{"type": "namespace", "name": "ns", "tools": True}]},
    {**_RESPONSES, "input": [{"type": "additional_tools", "tools": 7}]},
    {**_RESPONSES, "input": [{"type": "additional_tools", "tools": False}]},
    # A lone surrogate in a tool name, answered whole and streamed.
    {**_RESPONSES, "tools": [{"type": "custom", "name": _SURROGATE}]},
    {**_RESPONSES, "stream": True, "tools": [{"type": "custom", "name": "apply" + _SURROGATE}]},
    {
        **_RESPONSES,
        "stream": True,
        "tools": [
            {"type": "namespace", "name": _SURROGATE, "tools": [{"type": "function", "name": "f"}]}
        ],
    },
    # tool_choice naming a tool with a list or an object.
    {
        **_RESPONSES,
        "tools": [{"type": "web_search"}, {"type": "custom", "name": "x"}],
        "tool_choice": {"type": "custom", "name": ["x"]},
    },
    {**_RESPONSES, "input": [{"type": "additional_tools", "tools": [Deep(1000)]}]},
]


# -- request targets -----------------------------------------------------------------------


def target(aim: str, bodies: list[dict[str, Any]], requests: Any) -> Callable[[_F], _F]:
    """A fuzz target aiming at ``aim``: ``request`` drawn from ``requests``, and ``bodies``
    sent first, as examples."""

    def wrap(test: _F) -> _F:
        for body in reversed(bodies):
            test = example(request=Request(body))(test)
        return reaching(aim)(cast(_F, FUZZ(given(request=requests)(test))))

    return wrap


def changed(gateway: Gateway, api: str, request: Request) -> None:
    """``request`` to ``api``'s path, and the entries seen acting on it reached."""
    send(gateway, PATHS[api], request)
    reach(rewrote(gateway.access.lines[0]) | always_on(gateway, request))


@target("messages", REVIEW_MESSAGES, messages_requests)
def test_messages_bodies_never_crash_a_change(lenient: Gateway, request: Request) -> None:
    changed(lenient, "messages", request)


@target("count_tokens", REVIEW_COUNT_TOKENS, messages_requests)
def test_count_tokens_bodies_never_crash_the_estimate(lenient: Gateway, request: Request) -> None:
    status, data, _line = send(lenient, COUNT_TOKENS, request)
    assert not lenient.emulator.requests
    if status == 200:
        count = json.loads(data)["input_tokens"]
        assert isinstance(count, int)
        assert count >= 1
        reach({label("count-tokens", Side.LOCAL)})


@target("responses", REVIEW_RESPONSES, responses_requests)
def test_responses_bodies_never_crash_a_change(lenient: Gateway, request: Request) -> None:
    changed(lenient, "responses", request)


@target("chat", [], chat_requests)
def test_chat_bodies_never_crash_a_change(lenient: Gateway, request: Request) -> None:
    changed(lenient, "chat", request)


@pytest.mark.parametrize("path", [*PATHS.values(), COUNT_TOKENS])
def test_nesting_past_256_levels_is_a_400_in_the_apis_shape_on_both_stacks(
    lenient: Gateway, path: str
) -> None:
    """One limit, checked once after parsing, the same whichever parser read the body: 256
    levels are read (the top-level object is the first), 257 and the review's 1,000 are
    400 in the client's API's error shape."""
    model = "claude-opus-5" if path.startswith("/v1/messages") else "gpt-5.5"
    if path == PATHS["chat"]:
        model = "gpt-4.1"
    for levels, refused in ((255, False), (256, True), (1000, True)):
        body = encode({"model": model, "max_tokens": 8, "messages": Deep(levels)})
        status, _headers, data = lenient.raw(
            "POST", path, body=body, headers={"Content-Type": "application/json"}
        )
        deep = b"more than 256 levels deep" in data
        assert (status == 400 and deep) is refused, (levels, status, data[:200])
        if refused:
            document = json.loads(data)
            error = document["error"]
            if path.startswith("/v1/messages"):
                assert (document["type"], error["type"]) == ("error", "invalid_request_error")
            else:
                assert (error["type"], error["code"]) == (
                    "invalid_request_error",
                    "invalid_request",
                )


# The gateway's own refusals, and a lone surrogate in a text to embed.
REVIEW_EMBEDDINGS: list[dict[str, Any]] = [
    {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 256},
    {"model": "text-embedding-3-small", "input": [[1, 2], [3]]},
    {"model": "text-embedding-3-small", "input": ["x"] * 600},
    {"model": "text-embedding-3-small", "input": _SURROGATE, "encoding_format": "base64"},
]


@target("embeddings", REVIEW_EMBEDDINGS, embeddings_requests)
def test_embeddings_bodies_never_crash_a_change(lenient: Gateway, request: Request) -> None:
    status, data, _line = send(lenient, PATHS["embeddings"], request)
    found = rewrote(lenient.access.lines[0]) | always_on(lenient, request)
    answer = json.loads(data) if status == 200 else None
    if isinstance(answer, dict) and isinstance(answer.get("data"), list):
        # The emulator answers as the service does: floats, without object and model.
        if answer.get("object") == "list" and "model" in answer:
            found.add(label("embeddings-envelope", Side.ANSWER))
        vectors = [item.get("embedding") for item in answer["data"] if isinstance(item, dict)]
        if vectors and all(isinstance(vector, str) for vector in vectors):
            found.add(label("encoding-format", Side.ANSWER))
    reach(found)


def socket_request(draw: st.DrawFn) -> Request:
    """A Responses request as a socket sends it (no headers of its own), now and then
    Codex's warm-up."""
    body = draw(responses_requests).body
    return Request({**body, "generate": False} if draw(st.booleans()) else body)


@target("socket", [{**_RESPONSES, "generate": False}], st.composite(socket_request)())
def test_socket_requests_never_crash_a_change(lenient: Gateway, request: Request) -> None:
    """Over Codex's WebSocket: every request ends in its last frame (an error frame for a
    refusal, never one of the gateway's own 5xx), and the socket serves on."""
    lenient.emulator.clear_requests()
    lenient.access.lines.clear()
    with SocketClient(lenient.port, lenient.key, timeout=30).open() as client:
        client.send_text(encode({"type": "response.create", **request.body}).decode("ascii"))
        frames = client.answer(timeout=30)
        last = frames[-1]
        assert last["type"] in TERMINAL
        if last["type"] == "error":
            assert isinstance(last.get("status"), int) and last["status"] < 500, last
        # The socket serves on: a warm-up after whatever this was.
        warm = client.request({**_RESPONSES, "generate": False}, timeout=30)
        assert [frame["type"] for frame in warm] == ["response.created", "response.completed"]
    (line, _warm) = lenient.access.lines
    found = rewrote(line) | always_on(lenient, request)
    kinds = [frame.get("type") for frame in frames]
    if request.body.get("generate") is False and kinds == [
        "response.created",
        "response.completed",
    ]:
        found.add(label("warm-up", Side.REQUEST))
    reach(found)


@st.composite
def _any_api(draw: st.DrawFn) -> tuple[str, Request]:
    api = draw(st.sampled_from(sorted(PATHS)))
    chosen = {"messages": messages_requests, "responses": responses_requests}
    return api, draw(chosen.get(api, chat_requests))


@reaching("bare")
@FUZZ
@given(case=_any_api())
# Caps no float holds, which no change lowers here, reach the cost estimate.
@example(case=("chat", Request({"model": "gpt-4.1", "messages": _USER, "max_tokens": 10**400})))
@example(case=("responses", Request({**_RESPONSES, "max_output_tokens": 10**400})))
@example(case=("messages", Request({**_MESSAGES, "max_tokens": 10**400})))
# A model alias and a string system, spliced into the bytes as sent.
@example(case=("messages", Request({**_MESSAGES, "model": "claude-opus-4-6", "system": "s"})))
def test_any_body_with_the_switchable_changes_off(bare: Gateway, case: tuple[str, Request]) -> None:
    api, request = case
    send(bare, PATHS[api], request)
    assert "rewrote=" not in bare.access.lines[0]
    reach(always_on(bare, request, switchable=False))


# -- the answer side -----------------------------------------------------------------------


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class ScriptedUpstream(httpx2.AsyncBaseTransport):
    """The Copilot API answering each model request with the test's :class:`Answer`, its
    calls naming the tools the request went upstream with (the host's own requests go to
    the emulator as usual)."""

    def __init__(self) -> None:
        self.answer: Answer | None = None
        self.sent: bytes = b""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        answer = self.answer
        assert answer is not None
        body = await request.aread()
        tools = json.loads(body).get("tools")
        refs = [
            tool["name"]
            for tool in (tools if isinstance(tools, list) else [])
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)
        ]
        chunks = answer.chunks(refs)
        self.sent = b"".join(chunks)
        # Header values as a parser of the wire gives them: bytes, without the whitespace
        # around them (httpx2 would encode text as ASCII; h11 refuses to send a value
        # that starts or ends with a space, which no parser hands on).
        headers = [(name.encode(), value.strip().encode()) for name, value in answer.headers]
        return httpx2.Response(answer.status, headers=headers, stream=_Chunks(chunks))


@pytest.fixture(scope="module")
def scripted(
    stack: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Gateway, ScriptedUpstream]]:
    """A gateway on ``stack`` whose model requests the scripted upstream answers."""
    upstream = ScriptedUpstream()
    with serving(stack, tmp_path_factory, transport=upstream) as gateway:
        yield gateway, upstream


# The tools the answer target's Responses requests offer: custom ones (one named with a
# lone surrogate), a function, and namespaces whose members collide and are odd.
OFFERED = [
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "definition": "s"}},
    {"type": "custom", "name": _SURROGATE},
    {"type": "function", "name": "exec_command", "parameters": {}},
    {
        "type": "namespace",
        "name": "multi_agent_v1",
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {}},
            {"type": "custom", "name": "apply_patch"},
        ],
    },
    {"type": "namespace", "name": "\udfff", "tools": [{"type": "function", "name": "f\udc00x"}]},
]
_ANSWER_BODIES = {
    "responses": {**_RESPONSES, "tools": OFFERED},
    "messages": _MESSAGES,
    "chat": {"model": "gpt-4.1", "messages": _USER},
}


def _events_of(data: bytes) -> list[bytes]:
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    return [line for line in lines if line.startswith(b"data:")]


def _answered(api: str, answer: Answer, status: int, data: bytes, sent: bytes) -> set[str]:
    """What the answer changes did, checked as far as the client can tell."""
    assert status == answer.status, f"{status} for an upstream {answer.status}: {data[:300]!r}"
    if answer.status in (400, 403, 429) and data != sent:
        json.loads(data)  # a reshaped refusal is a JSON error document
    if answer.stream:
        # Every event went on (rewritten or as it came), none was lost or cut.
        assert len(_events_of(data)) == len(_events_of(sent))
    else:
        try:
            json.loads(sent)
        except ValueError:
            pass
        else:
            json.loads(data)  # a mapped answer is JSON still, a lone surrogate escaped
    found = set()
    how = "stream" if answer.stream else "whole"
    if b"custom_tool_call" in data and b"custom_tool_call" not in sent:
        found.add(label("custom-tools", Side.ANSWER))
        event(f"custom-tools ({Side.ANSWER}, {how})")
    if b'"namespace"' in data and b'"namespace"' not in sent:
        found.add(label("namespaces", Side.ANSWER))
        event(f"namespaces ({Side.ANSWER}, {how})")
    if status == 429 and data != sent:
        found.add(label("rate-limit", Side.RESHAPE))
        event(f"rate-limit ({Side.RESHAPE}, {api})")
    if status == 400 and b"only Auto model selection" in data:
        found.add(label("auto-only", Side.RESHAPE))
        event(f"auto-only ({Side.RESHAPE}, {api})")
    elif status in (400, 403) and data != sent:
        found.add(label("policy-refusal", Side.RESHAPE))
        event(f"policy-refusal ({Side.RESHAPE}, {api})")
    return found


_LONE_INPUT = json.dumps({"input": "patch " + _SURROGATE})
_REVIEW_CALL = {
    "type": "function_call",
    "id": "fc_0",
    "call_id": "call_0",
    "arguments": _LONE_INPUT,
    "status": "completed",
}
_JSON = (("Content-Type", "application/json"),)
_EVENTS = (("Content-Type", "text/event-stream"),)
# OFFERED as it goes upstream, by index: apply_patch, the custom tool named with a lone
# surrogate (hashed), exec_command, multi_agent_v1__exec_command,
# multi_agent_v1__apply_patch, and the member "f\udc00x" of namespace "\udfff" (hashed).
_SURROGATE_CUSTOM, _SURROGATE_MEMBER = Ref(1), Ref(5)


def _review_stream(name: str | Ref, arguments: str) -> Answer:
    item = {**_REVIEW_CALL, "name": name, "arguments": arguments}
    at = {"output_index": 0, "item_id": "fc_0"}
    events = (
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", **at, "delta": arguments[:14]},
        {"type": "response.function_call_arguments.delta", **at, "delta": arguments[14:]},
        {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    return Answer("responses", 200, True, events=events, headers=_EVENTS)


def _review_whole(name: str | Ref, arguments: str) -> Answer:
    document = {"id": "resp_1", "output": [{**_REVIEW_CALL, "name": name, "arguments": arguments}]}
    return Answer("responses", 200, False, document, headers=_JSON)


# What the targets found: an event and an item whose type is a list (the answer changes
# looked it up in a set), and a cost no float holds (the cost reader converted it).
_ODD_TYPE = {"type": [], "item": {"type": {}, "name": "x"}, "response": {"output": [{"type": []}]}}
_HUGE_COST = {"id": "x", "usage": {"copilot_usage": {"total_nano_aiu": 10**400}}}
# The service's refusal by policy, in its plain text.
_POLICY_REFUSED = Answer(
    "chat",
    403,
    False,
    b"unauthorized: not authorized to use this Copilot feature",
    headers=(("Content-Type", "text/plain; charset=utf-8"),),
)
# The service's refusal of a named model on a plan that can use only Auto (gpt-4.1 is
# listed outside the picker, as such a plan lists every model).
_AUTO_ONLY = Answer(
    "chat",
    400,
    False,
    {"error": {"message": "The requested model is not supported.", "code": "model_not_supported"}},
    headers=_JSON,
)
# The service's rate-limit refusal with a reset past any window, reshaped for Messages.
_RATE_LIMITED = Answer(
    "messages",
    429,
    False,
    {"error": {"message": "slow down", "code": "user_weekly_rate_limited"}},
    headers=(*_JSON, ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT")),
)


@st.composite
def _answers(draw: st.DrawFn) -> tuple[str, bool, Answer]:
    # Mostly Responses, whose answers the answer changes map; all three for the refusal.
    api = draw(st.sampled_from(["responses"] * 4 + ["messages", "chat"]))
    answer = draw(answers(api))
    return api, answer.stream, answer


@reaching("answers")
@FUZZ
@given(case=_answers())
# The review's answers: a lone surrogate in the model's custom-tool input, and in the names
# of the tools called (re-encoded by the answer changes), whole and streamed.
@example(case=("responses", False, _review_whole("apply_patch", _LONE_INPUT)))
@example(case=("responses", True, _review_stream("apply_patch", _LONE_INPUT)))
@example(case=("responses", False, _review_whole(_SURROGATE_CUSTOM, _LONE_INPUT)))
@example(case=("responses", True, _review_stream(_SURROGATE_MEMBER, "{}")))
@example(case=("responses", True, _review_stream("apply_patch", '{"input": "\\ud83d\\ude00"}')))
@example(
    case=("responses", True, Answer("responses", 200, True, events=(_ODD_TYPE,), headers=_EVENTS))
)
@example(case=("responses", False, Answer("responses", 200, False, _ODD_TYPE, headers=_JSON)))
@example(case=("chat", False, Answer("chat", 200, False, _HUGE_COST, headers=_JSON)))
@example(case=("messages", False, _RATE_LIMITED))
@example(case=("chat", False, _POLICY_REFUSED))
@example(case=("chat", False, _AUTO_ONLY))
@example(
    case=("messages", True, Answer("messages", 200, True, events=(_HUGE_COST,), headers=_EVENTS))
)
def test_hostile_answers_never_crash_an_answer_change(
    scripted: tuple[Gateway, ScriptedUpstream], case: tuple[str, bool, Answer]
) -> None:
    gateway, upstream = scripted
    api, stream, answer = case
    upstream.answer = answer
    body = {**_ANSWER_BODIES[api], "stream": stream}
    gateway.access.lines.clear()
    gateway.seen.clear()
    status, _headers, data = gateway.raw(
        "POST", PATHS[api], body=encode(body), headers={"Content-Type": "application/json"}
    )
    reach(_answered(api, answer, status, data, upstream.sent))


def test_a_cut_answer_would_be_seen(scripted: tuple[Gateway, ScriptedUpstream]) -> None:
    """The oracle of the answer target: a stream the gateway cuts is an error at the
    client (http.client's IncompleteRead), not a shorter answer."""
    gateway, upstream = scripted
    upstream.answer = Answer("responses", 200, True, events=({"type": "x"},), headers=_EVENTS)

    class Broken(_Chunks):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b"data: {}\n\n"
            raise httpx2.ReadError("cut")

    original = upstream.handle_async_request

    async def cut(request: httpx2.Request) -> httpx2.Response:
        await original(request)
        return httpx2.Response(
            200, headers=[("Content-Type", "text/event-stream")], stream=Broken([])
        )

    upstream.handle_async_request = cut  # type: ignore[method-assign]
    try:
        with pytest.raises(http.client.IncompleteRead):
            gateway.raw(
                "POST",
                PATHS["responses"],
                body=encode({**_ANSWER_BODIES["responses"], "stream": True}),
                headers={"Content-Type": "application/json"},
            )
    finally:
        del upstream.handle_async_request
