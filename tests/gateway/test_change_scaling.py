"""Every change is linear in the body: a body eight times as large takes at most twelve
times as long, for every side of every entry of the table.

Each case builds a body that makes its entry do its work (``done`` checks it did) at a
size ``n`` and at ``8 * n``, and times the entry's hook on it, called directly on a fresh
:class:`RequestEdit` after the hooks it depends on (``max_tokens`` before
``thinking-budget``, ``namespaces`` before ``custom-tools``), or the answer mapper on an
answer. The time is CPU time (``time.process_time``), the least of several runs with the
garbage collector off (a collection's cost follows everything alive, not the body) and no
tracer (coverage's cost per line is not the change's), each run repeating the work until
the smaller size takes at least ``FLOOR`` seconds, so that no timer's grain decides; a
control that rebuilds the same two bodies, timed in the same turns, takes out what the machine
itself adds to the larger one (:func:`_ratio`). A quadratic walk takes 64 times as long.

The sizes keep both bodies on the same side of the processor's caches and of the
allocator's switch to fresh pages for large blocks (128 KiB): past those, each entry of a
hash table or each byte copied costs more, by a step that is the memory's and not the
walk's (1,024 namespaces cost about 1.25 times as much per namespace as 128 do), and a
bound of 1.5 per unit is too close to such a step to tell it from the walk.

The review's two cases are here by name: N1 (12,000 assistant turns, then 12,000 system
messages: the fold is one pass) and N6 (a custom tool's input streamed in many deltas:
each piece is decoded once).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from copilot_host.gateway._changes import TABLE, AnswerPass, RequestEdit
from copilot_host.gateway._changes._tool_answers import CustomAnswers, NamespaceAnswers
from copilot_host.gateway._changes._tools import FlatTool
from copilot_host.gateway._protocols import CHAT, EMBEDDINGS, MESSAGES, RESPONSES, Api
from tests.core._routes import make_route

# Bigger is slower, never more linear: time may grow by this much for 8x the body.
GROWTH = 8
BOUND = 12.0
# Seconds the smaller body's run takes at least (the hook repeated as often as needed).
FLOOR = 0.01
# Runs of each size, in turns; the least time of each counts. More turns while the ratio
# is over the bound, until PATIENCE seconds of CPU time have gone on them: on a loaded
# machine (the suite's other worker beside agents and a browser) a linear walk read 12.3x
# after ten turns (timed under coverage's tracer then), while a quadratic one reads 56x or
# more however long it is timed.
RUNS = 3
PATIENCE = 6.0
# The least share of a case's ratio the control may leave (see _ratio).
_MOST_DISCOUNT = 0.5
_BY_NAME = {change.name: change for change in TABLE}
CONTEXT_BETA = b"context-management-2025-06-27"


def route(model: str, limit: int) -> Any:
    found = make_route(f"github-copilot/{model}")
    return dataclasses.replace(found, spec=dataclasses.replace(found.spec, max_output_tokens=limit))


ROUTES = {"messages": route("claude-opus-5", 64000), "responses": route("gpt-5.5", 128000)}
ROUTES["chat"] = route("gpt-4.1", 16384)
# An embeddings model that takes 4 inputs a request and no dimensions.
_ada = route("text-embedding-ada-002", 0)
ROUTES["embeddings"] = dataclasses.replace(
    _ada, spec=dataclasses.replace(_ada.spec, max_inputs=4, dimensions=False)
)


@dataclass(frozen=True)
class Case:
    """One side of one entry at work: ``build(n)`` makes what it works on, ``work(made)``
    does the work once (on a fresh edit), and ``done(made, result)`` says it did it."""

    build: Callable[[int], Any]
    work: Callable[[Any], Any]
    n: int
    done: Callable[[Any, Any], bool]


def applied(name: str) -> Callable[[Any, RequestEdit], bool]:
    return lambda _made, edit: name in edit.applied


def changed(made: Any, result: Any) -> bool:
    """An answer mapped: not the document (or the blocks) it was given."""
    return bool(result != (made[1] if isinstance(made, tuple) else made))


def edit_of(api: Api, value: dict[str, Any], betas: tuple[bytes, ...] = ()) -> RequestEdit:
    return RequestEdit(api, value, ROUTES[api.name], betas)


def request(name: str, api: Api, *before: str) -> Callable[[dict[str, Any]], object]:
    """The entry ``name``'s request hook on a fresh edit of ``value``, after ``before``'s."""

    def work(value: dict[str, Any]) -> object:
        edit = edit_of(api, value)
        for earlier in before:
            _BY_NAME[earlier].request(edit)
        _BY_NAME[name].request(edit)
        return edit

    return work


def bulky(n: int, **fields: Any) -> dict[str, Any]:
    """A body of ``fields`` beside ``n`` turns: what a change that reads a field or two
    (and copies the top level before it edits) must not walk."""
    turns = [{"role": "user", "content": f"ask {index}"} for index in range(n)]
    return {"model": "m", "messages": turns, **fields}


# -- the bodies ----------------------------------------------------------------------------

_USER = {"role": "user", "content": "hi"}
_BILLING = {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332"}


def _n1(n: int) -> dict[str, Any]:
    """N1: ``n`` assistant turns, then ``n`` system messages (no user turn before them:
    every one of them goes to a user turn the fold adds at the end)."""
    turns = [{"role": "assistant", "content": f"turn {index}"} for index in range(n)]
    system = [{"role": "system", "content": f"note {index}"} for index in range(n)]
    return {"model": "claude-opus-5", "max_tokens": 10, "messages": [*turns, *system]}


def _alternating(n: int) -> dict[str, Any]:
    """User turns each followed by system messages, and the fold's other branch."""
    messages: list[Any] = []
    for index in range(n):
        messages += [
            {"role": "user", "content": [{"type": "text", "text": f"ask {index}"}]},
            {"role": "system", "content": [{"type": "text", "text": f"note {index}"}]},
            {"role": "assistant", "content": "ok"},
        ]
    return {"model": "claude-opus-5", "messages": messages}


def _namespaces(n: int) -> dict[str, Any]:
    """``n`` namespaces whose members collide with each other and with a top-level tool,
    some with names that must be hashed, and earlier turns' namespaced calls."""
    tools: list[Any] = [{"type": "function", "name": "exec_command", "parameters": {}}]
    calls: list[Any] = []
    for index in range(n):
        members = [
            {"type": "function", "name": "exec_command", "parameters": {}},
            {"type": "function", "name": f"tool {index}", "parameters": {}},
            {"type": "custom", "name": f"patch_{index}"},
        ]
        tools.append({"type": "namespace", "name": f"ns_{index}", "tools": members})
        calls.append({"type": "function_call", "namespace": f"ns_{index}", "name": "exec_command"})
    choice = {"type": "function", "namespace": "ns_0", "name": "exec_command"}
    return {"model": "gpt-5.5", "tools": tools, "input": calls, "tool_choice": choice}


def _custom(n: int) -> dict[str, Any]:
    tools = [
        {"type": "custom", "name": name, "format": {"type": "grammar", "definition": "s"}}
        for index in range(n)
        for name in (f"custom_{index}", f"odd name {index}")
    ]
    items = [
        item
        for index in range(n)
        for item in (
            {"type": "custom_tool_call", "name": f"custom_{index}", "input": "x" * 20},
            {"type": "custom_tool_call_output", "call_id": str(index), "output": "ok"},
        )
    ]
    choice = {"type": "custom", "name": "custom_0"}
    return {"model": "gpt-5.5", "tools": tools, "input": items, "tool_choice": choice}


def _answer_items(n: int, name: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": f"call_{index}",
            "name": name,
            "arguments": json.dumps({"input": f"line {index}\n\ud800"}),
        }
        for index in range(n)
    ]


def _stream(n: int) -> list[bytes]:
    """N6: one custom call whose input comes in ``n`` deltas (each a few characters, cut
    inside escapes and surrogate pairs), in blocks of events as the relay hands them on."""
    text = json.dumps({"input": 'a\\b "q" \U0001f600 \ud800 ' * (n // 4 + 1)})
    pieces = [text[at : at + 5] for at in range(0, len(text), 5)][:n]
    added = {"type": "response.output_item.added", "item": {**_answer_items(1, "patch")[0]}}
    events = [added] + [
        {"type": "response.function_call_arguments.delta", "item_id": "fc_0", "delta": piece}
        for piece in pieces
    ]
    framed = [b"data: " + json.dumps(event).encode() + b"\n\n" for event in events]
    return [b"".join(framed[at : at + 64]) for at in range(0, len(framed), 64)]


def _count_tokens(n: int) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": f"ask {index} \u65e5\u672c \U0001f600"} for index in range(n)
    ]
    return {"model": "claude-opus-5", "system": "s", "messages": messages}


def _local(value: dict[str, Any]) -> object:
    return _BY_NAME["count-tokens"].local(edit_of(MESSAGES, value))


def _tool_choice(value: dict[str, Any]) -> object:
    edit = edit_of(RESPONSES, value)
    edit.tools_changed = True
    edit.removed.update(("web_search", "web_search_preview"))
    _BY_NAME["tool_choice"].request(edit)
    return edit


def _betas_request(values: tuple[bytes, ...]) -> object:
    edit = RequestEdit(MESSAGES, {}, ROUTES["messages"], values)
    _BY_NAME["betas"].request(edit)
    return edit


def _betas_headers(headers: list[tuple[bytes, bytes]]) -> object:
    edit = RequestEdit(MESSAGES, {}, ROUTES["messages"])
    return _BY_NAME["betas"].headers(edit, headers)


def _beta_values(n: int) -> tuple[bytes, ...]:
    return tuple(
        b"claude-code-%d, context-management-2025-06-27 ,x-%d" % (index, index)
        for index in range(n)
    )


def _rate_limit(n: int) -> bytes:
    document = {
        "error": {"code": "user_weekly_rate_limited", "message": "slow down " * n},
        "details": [{"at": index} for index in range(n)],
    }
    return json.dumps(document).encode()


def _policy(n: int) -> bytes:
    """The service's refusal of a model to the login's app, listing ``n`` models."""
    listed = " ".join(f"model-{index}" for index in range(n))
    message = (
        f'The model is not available for integrator "vscode-chat". Available models: [{listed}]'
    )
    return json.dumps(
        {"error": {"message": message, "code": "model_not_available_for_integrator"}}
    ).encode()


def _policy_reshape(body: bytes) -> object:
    return _BY_NAME["policy-refusal"].reshape(MESSAGES, 400, body, {})


def _auto_only(body: bytes) -> object:
    """The auto-only reshape of ``body`` for a model the account lists outside the picker."""
    found = ROUTES["chat"]
    edit = RequestEdit(
        CHAT,
        {},
        dataclasses.replace(found, spec=dataclasses.replace(found.spec, picker_enabled=False)),
    )
    return _BY_NAME["auto-only"].reshape(CHAT, 400, body, {}, edit)


def _unsupported(n: int) -> bytes:
    details = [{"at": index} for index in range(n)]
    error = {"message": "The requested model is not supported.", "code": "model_not_supported"}
    return json.dumps({"error": error, "details": details}).encode()


def _search(n: int) -> dict[str, Any]:
    """Tool search without its beta: search tools, deferred tools and references, n each."""
    tools: list[Any] = []
    messages: list[Any] = []
    for index in range(n):
        tools += [
            {"type": "tool_search_tool_regex_20251119", "name": f"search_{index}"},
            {"name": f"t{index}", "input_schema": {}, "defer_loading": True},
        ]
        reference = {"type": "tool_reference", "tool_name": f"t{index}"}
        result = {"type": "tool_result", "tool_use_id": str(index), "content": [reference]}
        messages.append({"role": "user", "content": [result]})
    return {"tools": tools, "messages": messages}


def _cached(n: int) -> dict[str, Any]:
    """Every place a cache_control may be, n times, each with a scope and a ttl."""
    mark = {"type": "ephemeral", "ttl": "1h", "scope": "global"}
    block = {"type": "text", "text": "x", "cache_control": mark}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [block]}
    return {
        "cache_control": mark,
        "system": [block] * n,
        "tools": [{"name": "t", "input_schema": {}, "cache_control": mark}] * n,
        "messages": [{"role": "user", "content": [block, result]}] * n,
    }


def _reshape(body: bytes) -> object:
    headers = {"x-usage-ratelimit-weekly": "ent=50&rem=0&rst=2030-01-01T00:00:00Z"}
    return _BY_NAME["rate-limit"].reshape(MESSAGES, 429, body, headers)


def _splice(name: str, api: Api) -> Callable[[tuple[dict[str, Any], bytes]], Any]:
    """An always-on splice at work: its request hook, and its splice on the bytes."""

    def work(made: tuple[dict[str, Any], bytes]) -> object:
        value, body = made
        edit = edit_of(api, value)
        change = _BY_NAME[name]
        change.request(edit)
        return change.splice(edit, body)  # type: ignore[attr-defined]

    return work


def _spliced(n: int, **fields: Any) -> tuple[dict[str, Any], bytes]:
    """A body that asks for a model by an alias (and whose other fields are ``n`` long),
    and its bytes."""
    value = {
        "model": "claude-opus-4-6",
        "messages": [{"role": "user", "content": f"ask {index}"} for index in range(n)],
        **fields,
    }
    return value, json.dumps(value).encode()


def _namespace_answers(n: int) -> tuple[NamespaceAnswers, dict[str, Any]]:
    mapper = NamespaceAnswers({"ns__run": FlatTool("run", "ns", custom=False)})
    return mapper, {"output": _answer_items(n, "ns__run")}


def _custom_answers(n: int) -> tuple[CustomAnswers, dict[str, Any]]:
    return CustomAnswers(frozenset({"patch"})), {"output": _answer_items(n, "patch")}


def _vectors(n: int) -> list[dict[str, Any]]:
    return [{"object": "embedding", "index": i, "embedding": [0.5, -1.25] * 8} for i in range(n)]


def _embeddings_answer(name: str) -> Callable[[dict[str, Any]], Any]:
    """The entry ``name``'s answer mapper (for a request asking base64) on ``answer``."""

    def work(answer: dict[str, Any]) -> Any:
        edit = edit_of(EMBEDDINGS, {"model": "m", "input": ["x"], "encoding_format": "base64"})
        _BY_NAME["encoding-format"].request(edit)
        mapper = _BY_NAME[name].answer(edit)
        assert mapper is not None
        return mapper.document(answer)

    return work


def _events(blocks: list[bytes]) -> object:
    answers = AnswerPass([CustomAnswers(frozenset({"patch"}))])
    return [answers.events(block) for block in blocks]


CASES: dict[str, Case] = {
    "betas (request)": Case(_beta_values, _betas_request, 64, lambda _made, edit: bool(edit.betas)),
    "betas (headers)": Case(
        lambda n: [(b"anthropic-beta", value) for value in _beta_values(n)],
        _betas_headers,
        64,
        lambda _made, headers: headers == [(b"anthropic-beta", CONTEXT_BETA)],
    ),
    "billing-header (request)": Case(
        lambda n: {"system": [_BILLING, *([{"type": "text", "text": "s"}] * n)]},
        request("billing-header", MESSAGES),
        256,
        applied("billing-header"),
    ),
    "beta-fields (request)": Case(
        lambda n: bulky(n, thinking={"type": "enabled", "display": "x"}, context_management={}),
        request("beta-fields", MESSAGES, "betas"),
        2000,
        applied("beta-fields"),
    ),
    # N1 at 8n: 12,000 assistant turns, then 12,000 system messages.
    "system-message (request)": Case(
        _n1, request("system-message", MESSAGES), 1500, applied("system-message")
    ),
    "system-message (request, alternating)": Case(
        _alternating, request("system-message", MESSAGES), 32, applied("system-message")
    ),
    "max_tokens (request)": Case(
        lambda n: bulky(n, max_tokens=10**6),
        request("max_tokens", MESSAGES),
        2000,
        applied("max_tokens"),
    ),
    "max_completion_tokens (request)": Case(
        lambda n: bulky(n, max_completion_tokens=10**6),
        request("max_completion_tokens", CHAT),
        2000,
        applied("max_completion_tokens"),
    ),
    "max_output_tokens (request)": Case(
        lambda n: bulky(n, max_output_tokens=10**6),
        request("max_output_tokens", RESPONSES),
        2000,
        applied("max_output_tokens"),
    ),
    "thinking-budget (request)": Case(
        lambda n: bulky(n, max_tokens=10**6, thinking={"budget_tokens": 10**6}),
        request("thinking-budget", MESSAGES, "max_tokens"),
        2000,
        applied("thinking-budget"),
    ),
    "server-tools (request)": Case(
        lambda n: {
            "tools": [{"type": "web_search_20250305", "name": "web_search"}, {"name": "read"}] * n,
            "tool_choice": {"type": "tool", "name": "web_search"},
        },
        request("server-tools", MESSAGES),
        128,
        applied("server-tools"),
    ),
    "server-tools (request, answered)": Case(
        lambda n: {"tools": [{"type": "web_fetch_20250910", "name": f"f{i}"} for i in range(n)]},
        request("server-tools", MESSAGES),
        128,
        lambda _made, edit: edit.local is not None,
    ),
    "additional-tools (request)": Case(
        lambda n: {
            "tools": [{"type": "function", "name": "f"}],
            "input": [
                {"type": "additional_tools", "tools": [{"type": "function", "name": "g"}] * 3},
                _USER,
            ]
            * n,
        },
        request("additional-tools", RESPONSES),
        128,
        applied("additional-tools"),
    ),
    "namespaces (request)": Case(
        _namespaces, request("namespaces", RESPONSES), 16, applied("namespaces")
    ),
    "web-search (request)": Case(
        lambda n: {"tools": [{"type": "web_search"}, {"type": "function", "name": "f"}] * n},
        request("web-search", RESPONSES),
        128,
        applied("web-search"),
    ),
    "custom-tools (request)": Case(
        _custom, request("custom-tools", RESPONSES), 16, applied("custom-tools")
    ),
    "custom-tools (request, namespaced)": Case(
        _namespaces,
        request("custom-tools", RESPONSES, "namespaces"),
        16,
        applied("custom-tools"),
    ),
    "tool_choice (request)": Case(
        lambda n: bulky(n, tools=[], tool_choice={"type": "web_search"}),
        _tool_choice,
        2000,
        applied("tool_choice"),
    ),
    "warm-up (request)": Case(
        lambda n: bulky(n, generate=False),
        request("warm-up", RESPONSES),
        2000,
        lambda _made, edit: edit.local is not None,
    ),
    "embeddings-tokens (request)": Case(
        lambda n: {"input": list(range(n))},
        request("embeddings-tokens", EMBEDDINGS),
        2000,
        applied("embeddings-tokens"),
    ),
    "embeddings-inputs (request)": Case(
        lambda n: {"input": ["text"] * n},
        request("embeddings-inputs", EMBEDDINGS),
        2000,
        applied("embeddings-inputs"),
    ),
    "embeddings-dimensions (request)": Case(
        lambda n: {"input": ["text"] * n, "dimensions": 256},
        request("embeddings-dimensions", EMBEDDINGS),
        2000,
        applied("embeddings-dimensions"),
    ),
    "embeddings-input (request)": Case(
        lambda n: {"input": "text " * n},
        request("embeddings-input", EMBEDDINGS),
        2000,
        applied("embeddings-input"),
    ),
    "encoding-format (request)": Case(
        lambda n: {"input": ["text"] * n, "encoding_format": "base64"},
        request("encoding-format", EMBEDDINGS),
        2000,
        applied("encoding-format"),
    ),
    "encoding-format (answer)": Case(
        lambda n: {"data": _vectors(n)}, _embeddings_answer("encoding-format"), 64, changed
    ),
    "embeddings-envelope (answer)": Case(
        lambda n: {"data": _vectors(n)}, _embeddings_answer("embeddings-envelope"), 64, changed
    ),
    "mcp-servers (request)": Case(
        lambda n: bulky(n, mcp_servers=[{"type": "url", "url": "https://x", "name": "x"}]),
        request("mcp-servers", MESSAGES),
        2000,
        lambda _made, edit: edit.local is not None,
    ),
    "tool-search (request)": Case(
        _search, request("tool-search", MESSAGES), 64, applied("tool-search")
    ),
    "cache-control (request)": Case(
        _cached, request("cache-control", MESSAGES), 64, applied("cache-control")
    ),
    "effort (request)": Case(
        lambda n: bulky(n, output_config={"effort": "max"}),
        request("effort", MESSAGES),
        2000,
        applied("effort"),
    ),
    "sampling (request)": Case(
        lambda n: bulky(n, temperature=0, top_p=0.5),
        request("sampling", RESPONSES),
        2000,
        applied("sampling"),
    ),
    "hosted-tools (request)": Case(
        lambda n: {"tools": [{"type": "image_generation"}, {"type": "function", "name": "f"}] * n},
        request("hosted-tools", RESPONSES),
        128,
        applied("hosted-tools"),
    ),
    "reasoning-context (request)": Case(
        lambda n: bulky(n, reasoning={"effort": "high", "context": "x" * n}),
        request("reasoning-context", RESPONSES),
        2000,
        applied("reasoning-context"),
    ),
    # Read whole (its code): both sizes past MAX_DEPTH openers.
    "auto-only (reshape)": Case(
        _unsupported, _auto_only, 300, lambda _made, reshaped: reshaped is not None
    ),
    "count-tokens (local)": Case(
        _count_tokens, _local, 64, lambda _made, answer: answer is not None
    ),
    # Both sizes past MAX_DEPTH openers (n + 2): both are walked for their depth.
    "rate-limit (reshape)": Case(
        _rate_limit, _reshape, 300, lambda _made, reshaped: reshaped is not None
    ),
    # Read to a bounded prefix: the same time whatever the answer's length.
    "policy-refusal (reshape)": Case(
        _policy, _policy_reshape, 2000, lambda _made, reshaped: reshaped is not None
    ),
    "model (request)": Case(
        _spliced,
        _splice("model", MESSAGES),
        256,
        lambda made, body: b'"claude-opus-5"' in body and body != made[1],
    ),
    "system (request)": Case(
        lambda n: _spliced(n, system='you are \u00e9 "quoted" ' * n),
        _splice("system", MESSAGES),
        256,
        lambda _made, body: b'"system": [{"type": "text", "text": ' in body,
    ),
    "namespaces (answer)": Case(
        _namespace_answers, lambda made: made[0].document(made[1]), 64, changed
    ),
    "custom-tools (answer)": Case(
        _custom_answers, lambda made: made[0].document(made[1]), 64, changed
    ),
    # N6: a custom tool's input in 8n deltas takes at most 12x the time of n.
    "custom-tools (answer, streamed)": Case(_stream, _events, 256, changed),
}


@contextmanager
def _work_alone() -> Iterator[None]:
    """The garbage collector off, and no line tracer (coverage, as CI runs the suite): a
    tracer's cost per line is its own, and it read 9-10x on linear changes that read about
    8x untraced, which left a loaded machine's noise too little room under the bound."""
    enabled = gc.isenabled()
    tracer = sys.gettrace()
    gc.disable()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(tracer)
        if enabled:
            gc.enable()


def _seconds(work: Callable[[Any], object], made: Any, loops: int, runs: int) -> float:
    """The least CPU time of ``runs`` runs of ``loops`` calls of ``work(made)``."""
    best = math.inf
    for _ in range(runs):
        with _work_alone():
            started = time.process_time()
            for _ in range(loops):
                work(made)
            best = min(best, time.process_time() - started)
    return best


def test_every_side_of_every_entry_has_a_case() -> None:
    every = {f"{change.name} ({side})" for change in TABLE for side in change.sides}
    # A case's name is its entry's side, and after a comma which of its kinds of work.
    named = {name.split(", ")[0].removesuffix(")") + ")" for name in CASES}
    assert named == every


def _loops(work: Callable[[Any], object], made: Any) -> int:
    """How many calls of ``work(made)`` take at least ``FLOOR`` seconds."""
    loops = 1
    while _seconds(work, made, loops, 1) < FLOOR:
        loops *= 2
    return loops


def _rebuild(made: Any) -> Any:
    """The control: every container in ``made`` made anew, a walk linear by construction
    over the same objects the case works on, that allocates as a change copying what it
    edits does. (A control that only visited read 7.9x while a copying change read 12.6x
    beside a callgrind run: what the machine added to the larger body was in making
    objects, which a visit does not do.)"""
    if isinstance(made, dict):
        return {key: _rebuild(value) for key, value in made.items()}
    if isinstance(made, list | tuple):
        return [_rebuild(value) for value in made]
    return made


def _ratio(case: Case, patience: float = PATIENCE, runs: int = RUNS) -> tuple[float, str]:
    """How many times as long ``case``'s work takes on the larger body, as if the machine
    cost the same per object at both sizes, and the figures.

    Each turn also times the control (:func:`_rebuild`) on the same two bodies. When the
    control itself takes more than ``GROWTH`` times as long on the larger one, the case's
    ratio is scaled down by that excess: what makes the larger body dearer per object on
    this machine at this moment (its caches, shared with the suite's other worker; the
    memory behind them) weighs on both alike, while a walk that is not linear stays over
    the bound. Never scaled up: a body the control cannot see into (an answer object)
    reads about 1x there and leaves the case's ratio as measured. At most halved, so a
    control that one turn inflated cannot bring a quadratic walk (56x and more) under
    the bound. Unscaled, a linear
    change read 12.5x once in CI (8.4x idle), its larger body's least time 1.65 times its
    idle one after 18 turns."""
    small, large = case.build(case.n), case.build(case.n * GROWTH)
    assert case.done(small, case.work(small))
    assert case.done(large, case.work(large))
    loops = _loops(case.work, small)
    visits = _loops(_rebuild, small)
    # The two sizes in turn, so that what else the machine does weighs on both alike; more
    # turns while the ratio is over the bound (a quiet moment lowers the least times; a
    # walk that is not linear stays over it however often it is timed).
    small_time = large_time = small_control = large_control = math.inf
    started = time.process_time()
    turns = 0
    while True:
        small_time = min(small_time, _seconds(case.work, small, loops, 1))
        large_time = min(large_time, _seconds(case.work, large, loops, 1))
        small_control = min(small_control, _seconds(_rebuild, small, visits, 1))
        large_control = min(large_control, _seconds(_rebuild, large, visits, 1))
        turns += 1
        control = large_control / small_control
        ratio = large_time / small_time * max(_MOST_DISCOUNT, min(1.0, GROWTH / control))
        if turns >= runs and (ratio <= BOUND or time.process_time() - started > patience):
            break
    return ratio, (
        f"{small_time * 1000:.1f} ms for n={case.n}, {large_time * 1000:.1f} ms for "
        f"{GROWTH}n ({loops} loops, least of {turns} turns): "
        f"{large_time / small_time:.1f}x, the control {control:.1f}x: {ratio:.1f}x"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_eight_times_the_body_takes_at_most_twelve_times_as_long(name: str) -> None:
    ratio, figures = _ratio(CASES[name])
    assert ratio <= BOUND, f"{name}: {figures}"


def test_a_quadratic_walk_is_over_the_bound() -> None:
    """The measure tells N1's kind of walk from a linear one: a scan of the items before
    each item (0.4.0's fold scanned backwards once per system message) reads over the
    bound, in one turn."""

    def fold(items: list[int]) -> int:
        seen: list[int] = []
        for item in items:
            if item not in seen:
                seen.append(item)
        return len(seen)

    case = Case(lambda n: list(range(n)), fold, 256, lambda made, found: found == len(made))
    ratio, figures = _ratio(case, patience=0, runs=1)
    # About 56x on an idle machine; 34x was seen in one turn beside the rest of the suite.
    assert ratio > BOUND, figures
