"""Request bodies shaped like each API's, with any JSON value in any field: the strategies
of the change fuzz targets (tests/gateway/test_change_fuzz.py), and the encoder they and
the answers' strategies (tests/gateway/_answer_strategies.py) share.

Structure first: a body is drawn as an agent would send it (Messages with its system,
messages, tools, server tools, tool_choice, thinking and context_management; Responses with
its input items, additional_tools, namespaced and custom calls, custom, namespace and
web_search tools; Chat with its caps; Embeddings with its inputs, dimensions and
encoding), so that every change of the table finds the shape it
acts on; then up to three of its fields, at any depth, are replaced by any JSON value (lone
surrogates, containers where names go, numbers where lists go, nesting past the limit) or
removed. A field nested deeper than Python's encoder goes is a :class:`Deep` placeholder
that :func:`encode` spells out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from copilot_host.gateway._changes import SERVED_BETAS
from copilot_host.gateway._changes._hosted import HOSTED_TOOLS
from tests._json_strategies import json_scalars, json_values

__all__ = [
    "BILLING",
    "Deep",
    "Ref",
    "Request",
    "any_json",
    "betas",
    "chat_requests",
    "embeddings_requests",
    "encode",
    "hostile_text",
    "lone_surrogates",
    "messages_requests",
    "mutated",
    "names",
    "requests",
    "responses_requests",
]

BILLING = "x-anthropic-billing-header: cc_version=2.1.332.abc; cc_entrypoint=sdk-cli;"


@dataclass(frozen=True)
class Deep:
    """An array (or object) nested ``levels`` deep, spelled out by :func:`encode`."""

    levels: int
    dict_: bool = False

    def text(self) -> str:
        if self.dict_:
            return '{"a": ' * self.levels + "null" + "}" * self.levels
        return "[" * self.levels + "]" * self.levels


@dataclass(frozen=True)
class Request:
    """A request as the fuzz target sends it: the body, and its anthropic-beta header."""

    body: Any
    beta: str | None = None
    # Whether the body is sent \u-escaped, or as UTF-8 where it can be.
    ascii_only: bool = True

    def headers(self) -> dict[str, str]:
        found = {"Content-Type": "application/json", "anthropic-version": "2023-06-01"}
        if self.beta is not None:
            found["anthropic-beta"] = self.beta
        return found


@dataclass(frozen=True)
class Ref:
    """The name of the request's ``index``-th tool as it went upstream (modulo their
    number): what a scripted upstream answer calls, resolved by :func:`encode`."""

    index: int


def encode(value: Any, *, ascii_only: bool = True, refs: Sequence[str] = ()) -> bytes:
    """``value`` as JSON text: each :class:`Deep` spelled out, each :class:`Ref` the name
    it refers to among ``refs`` (a lone surrogate escaped wherever it is)."""
    found: list[bytes] = []

    def placeholder(item: object) -> str:
        if isinstance(item, Deep):
            found.append(item.text().encode())
        elif isinstance(item, Ref):
            name = refs[item.index % len(refs)] if refs else ""
            found.append(json.dumps(name).encode())
        else:
            raise TypeError(type(item).__name__)
        return f"\x00hole{len(found) - 1}\x00"

    try:
        body = json.dumps(value, default=placeholder, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:
        found.clear()
        body = json.dumps(value, default=placeholder).encode("ascii")
    for index, text in enumerate(found):
        body = body.replace(f'"\\u0000hole{index}\\u0000"'.encode(), text)
    return body


# -- leaves ------------------------------------------------------------------------------

lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
hostile_text = st.text(
    alphabet=st.characters(codec="utf-8") | lone_surrogates | st.sampled_from('"\\\n\x00'),
    max_size=12,
)
deep_values = st.builds(
    Deep,
    st.sampled_from([64, 250, 255, 256, 257, 300, 1000, 1100]) | st.integers(1, 1100),
    st.booleans(),
)
# Any JSON value, and the kinds the review found crashing: lone surrogates, containers
# where a name goes, numbers and booleans where a list goes, nesting past the limit (rarer:
# past the limit the whole body is refused before any change sees it).
_values = json_values(json_scalars(text=16) | hostile_text, depth=2)
any_json = st.one_of(
    _values,
    _values,
    _values,
    _values,
    st.sampled_from([[], {}, [[]], {"": {}}, 0, 1, -1, True, False, None, "", 1e400]),
    # Integers no float holds, and past 64 bits (which orjson does not read).
    st.sampled_from([10**400, -(10**400), 2**63, 2**64, -(2**63) - 1]),
    deep_values,
)

# Names drawn from a few, so collisions (a member named as a top-level tool, two members of
# one name) and odd names (too long, outside [A-Za-z0-9_-], a lone surrogate) are common.
names = (
    st.sampled_from(
        [
            "exec_command",
            "apply_patch",
            "spawn_agent",
            "shell",
            "web_search",
            "mcp__fs__read",
            "a b",
            "x" * 70,
            "\ud800",
            "f\udc00x",
            "",
        ]
    )
    | hostile_text
)
namespaces = st.sampled_from(["multi_agent_v1", "mcp__fs", "exec_command", "\udfff", ""])
words = st.text(max_size=20) | hostile_text
_schema: dict[str, Any] = {"type": "object", "properties": {"input": {"type": "string"}}}
schemas: st.SearchStrategy[dict[str, Any]] = st.sampled_from([_schema, {}])
# Output caps around the models' limits (16,384, 64,000, 128,000), and past what a float
# or 64 bits hold.
tokens = st.sampled_from(
    [1, 1000, 1023, 1024, 16384, 16385, 32000, 64000, 64001, 128000, 128001, 2**64, 10**400]
)


# -- Messages ----------------------------------------------------------------------------

SERVER_TOOLS = ["web_search_20250305", "web_search_20260209", "web_fetch_20250910"]
SERVER_TOOLS += ["code_execution_20250825"]
CONTEXT_BETA = "context-management-2025-06-27"
BETAS = [*SERVED_BETAS, "claude-code-20250219", "thinking-display-updates-2026-08-18"]
BETAS += ["per-turn-control-2026-07-01", " ", "x"]

_cache_control = st.fixed_dictionaries(
    {"type": st.just("ephemeral")},
    optional={"ttl": st.sampled_from(["5m", "1h"]), "scope": st.sampled_from(["global", "org"])},
)
_text_block = st.fixed_dictionaries(
    {"type": st.just("text"), "text": words}, optional={"cache_control": _cache_control}
)
_billing_block = st.builds(
    lambda rest: {"type": "text", "text": BILLING + rest}, st.sampled_from(["", "\nmore"])
)
_reference = st.fixed_dictionaries({"type": st.just("tool_reference"), "tool_name": names})
_image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
_blocks = st.one_of(
    _text_block,
    st.fixed_dictionaries(
        {"type": st.just("tool_use"), "id": words, "name": names, "input": st.just({})}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": words,
            "content": words | st.lists(_text_block | _reference, max_size=2),
        }
    ),
    st.just(_image),
)
_anthropic_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system"]),
        "content": words | st.lists(_blocks, max_size=3),
    }
)
_server_names = st.sampled_from(["web_search", "web_fetch", "code_execution"])
_client_tool = st.fixed_dictionaries(
    {"name": names, "description": words, "input_schema": schemas},
    optional={"defer_loading": st.booleans(), "cache_control": _cache_control},
)
_search_tool = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["tool_search_tool_regex_20251119", "tool_search_tool_bm25"]),
        "name": st.sampled_from(["tool_search_tool_regex", "tool_search"]) | names,
    }
)
_server_tool = st.fixed_dictionaries(
    {"type": st.sampled_from(SERVER_TOOLS), "name": _server_names | names},
    optional={"max_uses": st.integers(0, 5)},
)
_thinking = st.fixed_dictionaries(
    {"type": st.sampled_from(["enabled", "adaptive"]), "budget_tokens": tokens},
    optional={"display": st.sampled_from(["summarized", "omitted"])},
)
_system = (
    words
    | st.builds(lambda rest: BILLING + rest, st.sampled_from(["", "\nYou are Claude."]))
    | st.lists(_text_block | _billing_block, max_size=3)
)
_messages_model = st.sampled_from(
    ["claude-opus-5", "claude-opus-4-6", "github-copilot/claude-sonnet-4.6", "sonnet"]
)
_messages_fields = {
    "model": _messages_model,
    "max_tokens": tokens,
    "messages": st.lists(_anthropic_message, max_size=5),
}
_messages_optional = {
    "system": _system,
    "tools": st.lists(
        st.one_of(_client_tool, _client_tool, _server_tool, _search_tool), max_size=4
    ),
    "tool_choice": st.fixed_dictionaries(
        {"type": st.sampled_from(["auto", "any", "tool", "none"])},
        optional={"name": _server_names | names},
    ),
    "thinking": _thinking,
    "context_management": st.just({"edits": [{"type": "clear_tool_uses_20250919"}]}),
    "output_config": st.fixed_dictionaries(
        {"effort": st.sampled_from(["max", "xhigh", "high", "low"]) | any_json}
    ),
    "cache_control": _cache_control,
    # Anthropic's MCP connector: answered by the gateway (nothing else acts on the body).
    "mcp_servers": st.just([{"type": "url", "url": "https://mcp.example/sse", "name": "x"}]),
    "stream": st.booleans(),
    "metadata": st.fixed_dictionaries({"user_id": words}),
}
_any_messages = st.fixed_dictionaries(_messages_fields, optional=_messages_optional)


@st.composite
def _aimed_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A body that every Messages entry acts on, those that act only when several fields
    agree included: a model alias (model); a string system starting with the billing
    header (billing-header, system); a system message among the turns (system-message);
    thinking.display and context_management (beta-fields, betas: sent with the latter's
    served beta); max_tokens over the model's limit and a thinking budget not below it
    (max_tokens, thinking-budget); a server tool beside the client's own, named by
    tool_choice (server-tools, tool_choice); a tool search tool, a deferred tool and a
    tool_reference (tool-search); a cache_control with a scope (cache-control); an effort
    above high (effort)."""
    body: dict[str, Any] = draw(_any_messages)
    body["model"] = draw(
        st.sampled_from(["claude-opus-4-6", "sonnet", "github-copilot/claude-opus-5"])
    )
    body["system"] = BILLING + "\nYou are Claude." + draw(words)
    turns = draw(st.lists(_anthropic_message, max_size=3))
    system = {"role": "system", "content": draw(words | st.lists(_text_block, max_size=2))}
    body["messages"] = draw(st.permutations([system, *turns]))
    budget = draw(st.sampled_from([64000, 10**5]))
    body["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    body["context_management"] = {"edits": []}
    body["max_tokens"] = draw(st.sampled_from([64001, 128000]))
    server = draw(_server_names)
    kind = draw(st.sampled_from(SERVER_TOOLS))
    client = draw(st.lists(_client_tool, min_size=1))
    search = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    deferred = {"name": "later", "input_schema": {}, "defer_loading": True}
    body["tools"] = [{"type": kind, "name": server}, search, deferred, *client]
    body["tool_choice"] = {"type": "tool", "name": server}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [draw(_reference)]}
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "scope": "g"}}
    body["messages"] = [*body["messages"], {"role": "user", "content": [result, marked]}]
    body["output_config"] = {"effort": draw(st.sampled_from(["max", "xhigh"]))}
    body.pop("mcp_servers", None)
    return body


_joined = st.lists(st.sampled_from([*BETAS, CONTEXT_BETA]), min_size=1, max_size=3).map(",".join)
betas = st.one_of(st.none(), _joined, _joined)
# Betas the service serves (the one context_management needs among them) and one it does
# not: an aimed request's.
_aimed_betas = st.permutations([CONTEXT_BETA, "claude-code-20250219"]).map(",".join)


@st.composite
def requests(
    draw: st.DrawFn, bodies: st.SearchStrategy[Any], aimed: st.SearchStrategy[Any]
) -> Request:
    """A request of any of ``bodies``, or half the time one of ``aimed`` (which every
    entry of its API acts on) with betas to filter; then up to three fields replaced."""
    if draw(st.booleans()):
        return Request(draw(mutated(aimed)), draw(_aimed_betas), draw(st.booleans()))
    return Request(draw(mutated(bodies)), draw(betas), draw(st.booleans()))


messages_requests = requests(_any_messages, _aimed_messages())

# -- Responses ---------------------------------------------------------------------------

_function = st.fixed_dictionaries(
    {"type": st.just("function"), "name": names, "parameters": schemas},
    optional={"description": words, "strict": st.booleans()},
)
_grammar = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["grammar", "text"]),
        "syntax": st.sampled_from(["lark", "regex"]),
        "definition": words,
    }
)
_custom = st.fixed_dictionaries(
    {"type": st.just("custom"), "name": names},
    optional={"description": words, "format": _grammar},
)
_namespace = st.fixed_dictionaries(
    {
        "type": st.just("namespace"),
        "name": namespaces,
        "tools": st.lists(_function | _custom, max_size=3),
    },
    optional={"description": words},
)
_web_search = st.fixed_dictionaries(
    {"type": st.sampled_from(["web_search", "web_search_preview", "web_search_2025_08_26"])},
    optional={"external_web_access": st.booleans()},
)
_hosted = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(HOSTED_TOOLS))},
    optional={"name": names},
)
_responses_tool = st.one_of(_function, _custom, _namespace, _web_search, _hosted)
# Sampling settings a GPT-5 model refuses but for 1 (the Copilot CLI sends temperature 0).
_sampling = st.sampled_from([0, 0.7, 1, 1.0, 2]) | any_json
_call_fields = {"call_id": words, "name": names}
_additional = st.fixed_dictionaries(
    {"type": st.just("additional_tools"), "tools": st.lists(_responses_tool, max_size=3)}
)
_items = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("message"),
            "role": st.sampled_from(["user", "assistant", "developer"]),
            "content": words
            | st.lists(
                st.fixed_dictionaries({"type": st.just("input_text"), "text": words}), max_size=2
            ),
        }
    ),
    _additional,
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "arguments": words, **_call_fields},
        optional={"namespace": namespaces},
    ),
    st.fixed_dictionaries(
        {"type": st.just("custom_tool_call"), "input": words, **_call_fields},
        optional={"namespace": namespaces},
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["custom_tool_call_output", "function_call_output"]),
            "call_id": words,
            "output": words,
        }
    ),
)
_responses_choice = st.sampled_from(["auto", "required", "none"]) | st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "custom", "web_search"])},
    optional={"name": names, "namespace": namespaces},
)
_responses_fields = {
    "model": st.sampled_from(["gpt-5.5", "github-copilot/gpt-5.5", "gpt-5.4-mini"]),
    "input": words | st.lists(_items, max_size=5),
}
_any_responses = st.fixed_dictionaries(
    _responses_fields,
    optional={
        "tools": st.lists(_responses_tool, max_size=5),
        "tool_choice": _responses_choice,
        "max_output_tokens": tokens,
        "instructions": words,
        "stream": st.booleans(),
        "reasoning": st.fixed_dictionaries(
            {"effort": st.sampled_from(["low", "high"])}, optional={"context": any_json}
        ),
        "temperature": _sampling,
        "top_p": _sampling,
    },
)


@st.composite
def _aimed_responses(draw: st.DrawFn) -> dict[str, Any]:
    """A body that every Responses entry acts on: a model alias; every tool shape Codex
    sends (namespace, custom, web_search, a hosted tool, an additional_tools item) and a
    tool_choice naming the web_search tool that goes; max_output_tokens over the model's
    limit; reasoning.context; a temperature a GPT-5 model refuses."""
    body: dict[str, Any] = draw(_any_responses)
    body["model"] = draw(st.sampled_from(["github-copilot/gpt-5.5", "github-copilot/gpt-5.4-mini"]))
    member = draw(_function | _custom)
    tools = [{**draw(_namespace), "tools": [member]}, draw(_custom), draw(_web_search)]
    tools.append(draw(_hosted))
    body["tools"] = draw(st.permutations([*tools, *draw(st.lists(_responses_tool, max_size=2))]))
    items = body["input"] if isinstance(body["input"], list) else []
    body["input"] = [draw(_additional), *items]
    body["tool_choice"] = {"type": "web_search"}
    body["max_output_tokens"] = draw(st.sampled_from([128001, 10**6]))
    body["reasoning"] = {"effort": "high", "context": draw(any_json)}
    body["temperature"] = draw(st.sampled_from([0, 0.2]))
    return body


responses_requests = requests(_any_responses, _aimed_responses())

# -- Chat Completions --------------------------------------------------------------------

_chat_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool"]),
        "content": words
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": words}), max_size=2),
    }
)
_chat_tool = st.fixed_dictionaries(
    {
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": names, "parameters": schemas}, optional={"description": words}
        ),
    }
)
_over = st.sampled_from([16385, 10**6])
_chat_fields = {
    "model": st.sampled_from(["gpt-4.1", "github-copilot/gpt-4.1", "gpt-4o", "gpt-5-mini"]),
    "messages": st.lists(_chat_message, min_size=1, max_size=4),
}
_chat_optional = {
    "tools": st.lists(_chat_tool, max_size=3),
    "tool_choice": st.sampled_from(["auto", "none", "required"]),
    "stream": st.booleans(),
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
    "temperature": _sampling,
    "top_p": _sampling,
}
_any_chat = st.fixed_dictionaries(
    _chat_fields, optional={**_chat_optional, "max_tokens": tokens, "max_completion_tokens": tokens}
)
# A model alias and both caps over its limit; or a GPT-5 model with what the Copilot CLI
# sends it (temperature 0, max_tokens).
_aimed_chat = st.fixed_dictionaries(
    {
        **_chat_fields,
        "model": st.just("github-copilot/gpt-4.1"),
        "max_tokens": _over,
        "max_completion_tokens": _over,
    },
    optional=_chat_optional,
) | st.fixed_dictionaries(
    {
        **_chat_fields,
        "model": st.just("gpt-5-mini"),
        "temperature": st.just(0),
        "max_tokens": st.sampled_from([1000, 64001]),
    }
)
chat_requests = requests(_any_chat, _aimed_chat)

# -- Embeddings --------------------------------------------------------------------------

# text-embedding-3-small takes dimensions and 512 inputs; ada-002 takes no dimensions.
_embeddings_models = ["text-embedding-3-small", "text-embedding-ada-002"]
_embeddings_models.append("github-copilot/text-embedding-3-small")
_token_ids = st.integers(0, 100_000)
_inputs = st.one_of(
    words,
    st.lists(words, min_size=1, max_size=4),
    st.lists(_token_ids, min_size=1, max_size=4),
    st.lists(st.lists(_token_ids, max_size=3), min_size=1, max_size=3),
    # More inputs than a model takes (answered by the gateway: nothing goes upstream).
    st.sampled_from([513, 600]).map(lambda count: ["x"] * count),
)
_embeddings_optional = {
    "dimensions": st.sampled_from([256, 1536, 0, -1]) | st.none(),
    "encoding_format": st.sampled_from(["float", "base64"]),
    "user": words,
}
_any_embeddings = st.fixed_dictionaries(
    {"model": st.sampled_from(_embeddings_models), "input": _inputs},
    optional=_embeddings_optional,
)
# A model alias, one text (sent as a list of one), floats asked for as base64; or
# dimensions for the model that takes none (answered by the gateway).
_aimed_embeddings = st.fixed_dictionaries(
    {
        "model": st.just("github-copilot/text-embedding-3-small"),
        "input": words,
        "encoding_format": st.just("base64"),
    },
    optional={"user": words},
) | st.fixed_dictionaries(
    {
        "model": st.just("text-embedding-ada-002"),
        "input": st.lists(words, min_size=1, max_size=2),
        "dimensions": st.sampled_from([256, 1536]),
    }
)
embeddings_requests = requests(_any_embeddings, _aimed_embeddings)

# -- any field replaced ------------------------------------------------------------------

_GONE = object()
Path = tuple[str | int, ...]


def paths(value: Any) -> Iterator[Path]:
    """Every place in ``value`` below its root (a loop, not recursion)."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, found = stack.pop()
        if isinstance(found, dict):
            children: list[tuple[str | int, Any]] = list(found.items())
        elif isinstance(found, list):
            children = list(enumerate(found))
        else:
            continue
        for key, child in children:
            yield (*path, key)
            stack.append(((*path, key), child))


def replaced(value: Any, path: Path, new: Any) -> Any:
    """``value`` with the field at ``path`` set to ``new`` (removed for ``_GONE``), copying
    only the containers on the way: the drawn bodies may share constants."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        if rest:
            out[head] = replaced(value[head], rest, new)
        elif new is _GONE:
            out.pop(head, None)
        else:
            out[head] = new
        return out
    assert isinstance(value, list)
    items = list(value)
    assert isinstance(head, int)
    if rest:
        items[head] = replaced(value[head], rest, new)
    elif new is _GONE:
        del items[head]
    else:
        items[head] = new
    return items


@st.composite
def mutated(draw: st.DrawFn, bodies: st.SearchStrategy[Any], most: int = 3) -> Any:
    """A body of ``bodies`` with up to ``most`` fields replaced by any JSON value or
    removed (none, often: most bodies should reach the change that acts on them)."""
    body = draw(bodies)
    for _ in range(draw(st.integers(0, most))):
        places = list(paths(body))
        if not places:
            break
        place = draw(st.sampled_from(places))
        new = draw(any_json | st.just(_GONE))
        body = replaced(body, place, new)
    return body
