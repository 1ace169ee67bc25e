"""The body rules route.auth applies: image input by structure, and who started the turn
(docs/WIRE.md "X-Initiator" and "Copilot-Vision-Request")."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from copilot_host import ApiProtocol, CopilotAuth, SessionResolver
from copilot_host._api import protocol_of_path
from copilot_host._sessions._inspect import inspect_body, request_facts
from tests._json_strategies import json_values
from tests.sessions._hosts import ENDPOINT, ORIGIN, CountingHost

CHAT, RESPONSES, MESSAGES = (
    ApiProtocol.OPENAI_CHAT,
    ApiProtocol.OPENAI_RESPONSES,
    ApiProtocol.ANTHROPIC_MESSAGES,
)
IMAGE_URL = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
INPUT_IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
ANTHROPIC_IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}


def facts(protocol: ApiProtocol, body: object) -> tuple[bool, str]:
    return inspect_body(protocol, json.dumps(body).encode())


# -- X-Initiator -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "initiator"),
    [
        ([{"role": "user", "content": "hi"}], "user"),
        ([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}], "user"),
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "partial"}], "agent"),
        (
            [
                {"role": "user", "content": "run it"},
                {"role": "assistant", "tool_calls": [{"id": "c1"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
            ],
            "agent",
        ),
        # System and developer messages are skipped when finding the last item.
        ([{"role": "tool", "content": "42"}, {"role": "developer", "content": "d"}], "agent"),
        ([{"role": "user", "content": "hi"}, {"role": "system", "content": "s"}], "user"),
        ([], "user"),
        ([{"role": "mystery", "content": "x"}], "user"),
    ],
)
def test_chat_initiator_is_the_last_messages_role(messages: list[object], initiator: str) -> None:
    assert facts(CHAT, {"model": "m", "messages": messages}) == (False, initiator)


@pytest.mark.parametrize(
    ("given", "initiator"),
    [
        ("a plain string", "user"),
        ([{"role": "user", "content": "hi"}], "user"),
        ([{"type": "message", "role": "user", "content": [{"type": "input_text"}]}], "user"),
        ([{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "c"}], "agent"),
        ([{"type": "function_call_output", "call_id": "c", "output": "42"}], "agent"),
        ([{"role": "assistant", "content": "partial"}], "agent"),
        ([{"type": "reasoning", "summary": []}], "agent"),
        ([{"role": "user", "content": "hi"}, {"role": "developer", "content": "d"}], "user"),
        ([], "user"),
    ],
)
def test_responses_initiator_is_the_last_input_item(given: object, initiator: str) -> None:
    assert facts(RESPONSES, {"model": "m", "input": given}) == (False, initiator)


@pytest.mark.parametrize(
    ("messages", "initiator"),
    [
        ([{"role": "user", "content": "hi"}], "user"),
        ([{"role": "user", "content": [{"type": "text", "text": "hi"}, ANTHROPIC_IMAGE]}], "user"),
        ([{"role": "assistant", "content": "prefill"}], "agent"),
        (
            [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
            ],
            "agent",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t"},
                        {"type": "text", "text": "and also"},
                    ],
                },
            ],
            "agent",
        ),
    ],
)
def test_anthropic_initiator_is_the_last_message(messages: list[object], initiator: str) -> None:
    assert facts(MESSAGES, {"model": "m", "messages": messages})[1] == initiator


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'"a string"', b"{", b" \n "])
@pytest.mark.parametrize("protocol", list(ApiProtocol))
def test_a_body_that_is_not_a_json_object_is_a_persons_turn(
    body: bytes, protocol: ApiProtocol
) -> None:
    assert inspect_body(protocol, body) == (False, "user")


# -- image input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        (CHAT, {"messages": [{"role": "user", "content": [{"type": "text"}, IMAGE_URL]}]}),
        # An image earlier in the conversation still needs the header.
        (
            CHAT,
            {
                "messages": [
                    {"role": "user", "content": [IMAGE_URL]},
                    {"role": "assistant", "content": "a cat"},
                    {"role": "user", "content": "and now?"},
                ]
            },
        ),
        # An image a tool returned.
        (CHAT, {"messages": [{"role": "tool", "tool_call_id": "c", "content": [IMAGE_URL]}]}),
        (RESPONSES, {"input": [{"role": "user", "content": [INPUT_IMAGE]}]}),
        (
            RESPONSES,
            {"input": [{"type": "function_call_output", "call_id": "c", "output": [INPUT_IMAGE]}]},
        ),
        (MESSAGES, {"messages": [{"role": "user", "content": [ANTHROPIC_IMAGE]}]}),
        (
            MESSAGES,
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "content": [ANTHROPIC_IMAGE]}],
                    }
                ]
            },
        ),
    ],
)
def test_image_input_is_found_by_structure(protocol: ApiProtocol, body: object) -> None:
    assert facts(protocol, body)[0] is True


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        (CHAT, {"messages": [{"role": "user", "content": 'please explain "image_url" parts'}]}),
        (
            CHAT,
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "image_url"}]}]},
        ),
        (RESPONSES, {"input": "draw an input_image for me"}),
        (RESPONSES, {"input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
        (MESSAGES, {"messages": [{"role": "user", "content": "what is an image block?"}]}),
        # The right type name under the wrong protocol is not an image of this protocol.
        (MESSAGES, {"messages": [{"role": "user", "content": [IMAGE_URL]}]}),
    ],
)
def test_a_mere_mention_of_images_is_not_image_input(protocol: ApiProtocol, body: object) -> None:
    assert facts(protocol, body)[0] is False


def test_an_escaped_type_name_is_still_an_image() -> None:
    body = b'{"messages": [{"role": "user", "content": [{"type": "\\u0069mage_url"}]}]}'
    assert inspect_body(CHAT, body) == (True, "user")


def test_paths_name_their_protocol_exactly() -> None:
    assert protocol_of_path("/chat/completions") is CHAT
    assert protocol_of_path("/responses") is RESPONSES
    assert protocol_of_path("/v1/messages") is MESSAGES
    assert protocol_of_path("/models") is None
    assert protocol_of_path("/v1/chat/completions") is None


# Bodies shaped like the real ones (messages -> content -> parts -> image_url -> url is
# five levels) with the keys the inspector looks for, so its walks go deep.
_json = json_values(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    keys=st.sampled_from(["role", "type", "content", "messages", "input", "output", "x"]),
    depth=5,
    width=4,
)


@given(st.sampled_from(list(ApiProtocol)), _json)
def test_any_json_body_gives_a_verdict_and_never_raises(
    protocol: ApiProtocol, value: object
) -> None:
    vision, initiator = inspect_body(protocol, json.dumps(value).encode())
    assert isinstance(vision, bool)
    assert initiator in ("user", "agent")


@pytest.mark.parametrize(
    "body",
    [
        b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
        b'{"messages": [{"role": "user", "content": [{"type": "\\u0069mage_url"}]}]}',
        b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}',
        b'{"messages": [{"role": "tool", "content": "no picture"}]}',
    ],
)
@pytest.mark.parametrize("protocol", [CHAT, MESSAGES])
def test_facts_given_the_bytes_are_the_facts_of_the_walk(
    protocol: ApiProtocol, body: bytes
) -> None:
    # The gateway passes the bytes it parsed, so the image walk can be skipped when no
    # image type name (nor an escape that could spell one) is in them: same verdict.
    value = json.loads(body)
    assert request_facts(protocol, value, body=body) == request_facts(protocol, value)


@given(st.sampled_from(list(ApiProtocol)), _json)
def test_facts_given_the_bytes_agree_on_any_body(protocol: ApiProtocol, value: object) -> None:
    body = json.dumps(value).encode()
    assert request_facts(protocol, value, body=body) == request_facts(protocol, value)


# -- what route.auth sends ---------------------------------------------------------------------


def _answering_200(seen: list[httpx2.Request]) -> Callable[[httpx2.Request], httpx2.Response]:
    """A MockTransport handler that records each request and answers 200."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200)

    return handle


def _sent(path: str, body: object, headers: dict[str, str] | None = None) -> httpx2.Headers:
    host = CountingHost()
    auth = CopilotAuth(SessionResolver(host, clock=host.clock), ENDPOINT, host.request_headers())
    seen: list[httpx2.Request] = []
    transport = httpx2.MockTransport(_answering_200(seen))
    with httpx2.Client(auth=auth, transport=transport) as client:
        client.post(ORIGIN + path, json=body, headers=headers)
    return seen[0].headers


def test_route_auth_sets_both_headers_from_the_body() -> None:
    sent = _sent("/chat/completions", {"messages": [{"role": "user", "content": [IMAGE_URL]}]})
    assert sent["copilot-vision-request"] == "true"
    assert sent["x-initiator"] == "user"
    sent = _sent("/responses", {"input": [{"type": "function_call_output", "output": "1"}]})
    assert "copilot-vision-request" not in sent
    assert sent["x-initiator"] == "agent"


def test_an_applications_own_initiator_is_kept_and_its_vision_header_is_ours() -> None:
    body = {"messages": [{"role": "user", "content": "no image here"}]}
    sent = _sent("/v1/messages", body, {"X-Initiator": "agent", "Copilot-Vision-Request": "true"})
    assert sent.get_list("x-initiator") == ["agent"]
    assert "copilot-vision-request" not in sent


def test_requests_that_are_not_turns_get_neither_header() -> None:
    host = CountingHost()
    auth = CopilotAuth(SessionResolver(host, clock=host.clock), ENDPOINT, host.request_headers())
    seen: list[httpx2.Request] = []
    transport = httpx2.MockTransport(_answering_200(seen))
    with httpx2.Client(auth=auth, transport=transport) as client:
        client.get(ORIGIN + "/models", headers={"Copilot-Vision-Request": "true"})
    assert "x-initiator" not in seen[0].headers
    assert "copilot-vision-request" not in seen[0].headers


@pytest.mark.parametrize("role", [[], {}, ["system"], None, 5])
@pytest.mark.parametrize("protocol", list(ApiProtocol))
def test_a_role_of_any_json_type_gives_a_verdict(role: object, protocol: ApiProtocol) -> None:
    key = "input" if protocol is RESPONSES else "messages"
    assert facts(protocol, {key: [{"role": role, "content": "x"}]})[1] in ("user", "agent")


def test_facts_are_reused_but_the_models_of_many_bodies_do_not_grow_memory() -> None:
    from copilot_host._sessions import _inspect

    _inspect._MADE.clear()  # other tests' bodies may have filled it
    made = [
        request_facts(ApiProtocol.OPENAI_CHAT, {"model": f"m{n}", "messages": []})
        for n in range(3 * _inspect._MADE_MAX)
    ]
    assert [f.model for f in made] == [f"m{n}" for n in range(3 * _inspect._MADE_MAX)]
    assert len(_inspect._MADE) <= _inspect._MADE_MAX
    again = request_facts(ApiProtocol.OPENAI_CHAT, {"model": "m0", "messages": []})
    assert again is made[0]


@pytest.mark.parametrize(
    "path", ["/chat/completions", "/chat/completions?x=1", "/chat/%63ompletions"]
)
def test_an_inference_path_however_spelled_is_inspected(path: str) -> None:
    host = CountingHost()
    auth = CopilotAuth(SessionResolver(host, clock=host.clock), ENDPOINT, host.request_headers())
    seen: list[httpx2.Request] = []
    transport = httpx2.MockTransport(_answering_200(seen))
    body = {"model": "m", "messages": [{"role": "tool", "content": "done"}]}
    with httpx2.Client(auth=auth, transport=transport) as client:
        client.post(ORIGIN + path, json=body)
    assert seen[0].headers["x-initiator"] == "agent"
