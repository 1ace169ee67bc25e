"""Upstream answers for the answer-side fuzz target: what the Copilot API could send back,
whole or streamed, with hostile tool calls in it.

A Responses answer calls the request's tools by the names they went upstream with
(:class:`~tests.gateway._wire_strategies.Ref`, resolved by the scripted upstream from the
body it received), so the answer changes (custom tools, namespaces) map it; its calls'
arguments hold lone surrogates, broken escapes, nesting past the limit, or anything else,
and a stream splits them into deltas at any point (inside an escape or a surrogate pair
too). Then, as for requests, any field may be replaced by any JSON value. A 429 carries the
service's rate-limit refusal (or something like it) with hostile ``Retry-After`` and
window headers, and a 403 or 400 its refusals by policy, for every API.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from copilot_host.gateway._changes._rate_limit import RATE_LIMIT_CODES
from tests.gateway._wire_strategies import (
    Deep,
    Ref,
    any_json,
    encode,
    hostile_text,
    lone_surrogates,
    mutated,
    names,
)

__all__ = ["Answer", "answers"]


@dataclass(frozen=True)
class Answer:
    """One scripted upstream answer: its status and headers, and its document (whole) or
    its events (a stream: each a data document, or raw bytes for a data line that is not
    JSON), sent in pieces cut at ``cuts`` (byte offsets) with ``ending`` ending each line."""

    api: str
    status: int
    stream: bool
    document: Any = None
    events: tuple[Any, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    cuts: tuple[int, ...] = ()
    ending: bytes = b"\n"

    def body(self, refs: list[str]) -> bytes:
        if isinstance(self.document, bytes):
            return self.document  # not JSON: the service's plain-text refusal, or anything
        if not self.stream:
            return encode(self.document, refs=refs)
        out = []
        for data in self.events:
            payload = data if isinstance(data, bytes) else encode(data, refs=refs)
            kind = data.get("type") if isinstance(data, dict) else None
            head = (
                b"event: " + kind.encode("utf-8", "replace") + self.ending
                if isinstance(kind, str) and self.api != "chat"
                else b""
            )
            out.append(head + b"data: " + payload + self.ending + self.ending)
        return b"".join(out)

    def chunks(self, refs: list[str]) -> list[bytes]:
        whole = self.body(refs)
        points = sorted({cut % (len(whole) + 1) for cut in self.cuts} | {0, len(whole)})
        return [whole[a:b] for a, b in itertools.pairwise(points) if b > a]


# What a model's arguments for a custom tool could be: its one argument as JSON writes it
# (a lone surrogate escaped), one with broken escapes, nesting past the limit, any JSON, or
# any text at all.
_input_text = hostile_text | st.text(
    alphabet=st.sampled_from(["\\", '"', "u", "d", "8", "0", "�", "�", "x", "é"]),
    max_size=16,
)
arguments = st.one_of(
    st.builds(lambda text: json.dumps({"input": text}), _input_text | lone_surrogates),
    st.builds(lambda raw: '{"input": "' + raw + '"}', _input_text),
    st.builds(lambda deep: '{"input": ' + deep.text() + "}", st.builds(Deep, st.integers(1, 1100))),
    st.builds(lambda value: encode(value).decode("ascii", "replace"), any_json),
    hostile_text,
)
# The answer target's requests offer six tools; a model calls a few of them.
OFFERED = 6


@st.composite
def _calls(draw: st.DrawFn) -> list[tuple[dict[str, Any], str]]:
    """Output items with each call's arguments: calls of two to four of the tools the
    request offered (each a different one, as they went upstream), or now and then of a
    name of any kind, and sometimes a message."""
    called = draw(st.permutations(range(OFFERED)))[: draw(st.sampled_from([2, 3, 4]))]
    items: list[tuple[dict[str, Any], str]] = []
    for index, tool in enumerate(called):
        if draw(st.integers(0, 5)) == 0:
            text = {"type": "output_text", "text": draw(hostile_text), "annotations": []}
            message = {"type": "message", "id": f"msg_{index}", "role": "assistant"}
            items.append(({**message, "status": "completed", "content": [text]}, ""))
            continue
        given = draw(arguments)
        call = {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": f"call_{index}",
            "name": draw(st.just(Ref(tool)) | st.just(Ref(tool)) | names),
            "arguments": given,
            "status": "completed",
        }
        items.append((call, given))
    return items


def _response(output: list[Any], status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-5.5",
        "output": output,
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        "copilot_usage": {"total_nano_aiu": 1000},
    }


@st.composite
def _stream(draw: st.DrawFn) -> list[Any]:
    """A Responses event sequence: each call added, its arguments in deltas cut anywhere,
    done, and the response completed."""
    items = draw(_calls())
    events: list[Any] = [{"type": "response.created", "response": _response([], "in_progress")}]
    for index, (item, given) in enumerate(items):
        at = {"output_index": index}
        events.append(
            {"type": "response.output_item.added", **at, "item": {**item, "arguments": ""}}
        )
        if item["type"] == "function_call":
            cuts = sorted(set(draw(st.lists(st.integers(0, max(len(given), 1)), max_size=6))))
            points = [0, *cuts, len(given)]
            for start, end in itertools.pairwise(points):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        **at,
                        "item_id": item["id"],
                        "delta": given[start:end],
                    }
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **at,
                    "item_id": item["id"],
                    "arguments": given,
                }
            )
        events.append({"type": "response.output_item.done", **at, "item": item})
    events.append({"type": "response.completed", "response": _response([i for i, _ in items])})
    out = [draw(mutated(st.just(event), most=1)) for event in events]
    if draw(st.integers(0, 9)) == 0:
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from([b"[DONE]", b"{", b""])))
    return out


_retry_after = st.sampled_from(
    [
        "7",
        " 12 ",
        "0",
        "9999999999",
        "99999999999",
        "-1",
        "1.5",
        "abc",
        "\u0661\u0662",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "Mon, 99 Foo 2026",
    ]
)
_reset = st.sampled_from(
    [
        "ent=50&rem=0&rst=2030-01-01T00:00:00Z",
        "rst=2020-01-01T00:00:00",
        "rst=" + "9" * 80,
        "rst=not-a-date",
        "rst=2030-01-01T00:00:00%2B05:00",
        "",
        "rem=0&rst=\u00e9",
    ]
)


@st.composite
def _refusal(draw: st.DrawFn) -> tuple[Any, tuple[tuple[str, str], ...]]:
    # Mostly the service's codes (the refusal the gateway reshapes), else anything.
    codes = st.sampled_from([*RATE_LIMIT_CODES, "rate_limited"])
    code = st.one_of(codes, codes, codes, any_json)
    document = draw(
        mutated(
            st.fixed_dictionaries(
                {"error": st.fixed_dictionaries({"message": hostile_text, "code": code})}
            ),
            most=1,
        )
    )
    headers: list[tuple[str, str]] = [("Content-Type", "application/json")]
    if draw(st.booleans()):
        headers.append(("Retry-After", draw(_retry_after)))
    window = draw(st.sampled_from(["weekly", "session"]))
    if draw(st.booleans()):
        headers.append((f"x-usage-ratelimit-{window}", draw(_reset)))
    return document, tuple(headers)


_POLICY = "unauthorized: not authorized to use this Copilot feature"
_INTEGRATOR = (
    'The requested model is not available for integrator "vscode-chat". '
    "Available models: [gpt-4.1 claude-sonnet-4.6 \u00e9 a/b]"
)


@st.composite
def _policy(draw: st.DrawFn) -> tuple[int, Any, tuple[tuple[str, str], ...]]:
    """The service's refusals by policy (or something like them): 403 in plain text, 400
    model_not_available_for_integrator, each with hostile text around it."""
    if draw(st.booleans()):
        text = draw(st.sampled_from([_POLICY, "forbidden", ""]))
        around = draw(st.sampled_from([b"", b"\xff\xfe", b"\n" * 3]))
        raw = around + text.encode() + draw(hostile_text).encode("utf-8", "surrogatepass")
        return 403, raw, (("Content-Type", "text/plain; charset=utf-8"),)
    message = st.sampled_from([_INTEGRATOR, 'not available for integrator \\"x']) | hostile_text
    codes = st.sampled_from(["model_not_available_for_integrator", "model_not_supported"])
    fields = {"message": message, "code": codes | any_json}
    document = draw(
        mutated(st.fixed_dictionaries({"error": st.fixed_dictionaries(fields)}), most=1)
    )
    return 400, document, (("Content-Type", "application/json"),)


_nano = st.sampled_from([1000, 0, -1, 1e21, 10**400, 2**64, float("nan"), "1"]) | any_json


@st.composite
def answers(draw: st.DrawFn, api: str) -> Answer:
    """An upstream answer to a request of ``api`` (see the module docstring)."""
    cuts = tuple(draw(st.lists(st.integers(0, 10**6), max_size=5)))
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    if draw(st.integers(0, 5)) == 0 or (api != "responses" and draw(st.booleans())):
        if draw(st.booleans()):
            status, found, headers = draw(_policy())
            return Answer(api, status, False, found, headers=headers, cuts=cuts)
        status = draw(st.sampled_from([429, 429, 429, 400, 500, 529]))
        document, headers = draw(_refusal())
        return Answer(api, status, False, document, headers=headers, cuts=cuts)
    if api != "responses":
        # No answer change maps these: what the cost reader and the masking read.
        cost = {"copilot_usage": {"total_nano_aiu": draw(_nano)}}
        if draw(st.booleans()):
            events = draw(st.lists(mutated(st.just({"type": "x", **cost}), most=2), max_size=4))
            kind = (("Content-Type", "text/event-stream"),)
            return Answer(api, 200, True, events=tuple(events), headers=kind, cuts=cuts)
        document = draw(mutated(st.just({"id": "x", "usage": cost})))
        return Answer(api, 200, False, document, headers=(("Content-Type", "application/json"),))
    if draw(st.booleans()):
        events = draw(_stream())
        kind = (("Content-Type", "text/event-stream"),)
        return Answer(api, 200, True, events=tuple(events), headers=kind, cuts=cuts, ending=ending)
    output = [item for item, _ in draw(_calls())]
    document = draw(mutated(st.just(_response(output))))
    kind = (("Content-Type", "application/json"),)
    return Answer(api, 200, False, document, headers=kind, cuts=cuts)
