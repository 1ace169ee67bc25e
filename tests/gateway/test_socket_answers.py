"""What an upstream answer becomes on a client's socket (``_app/_frames.py``), and the socket's
conversation at its bounds (``_app/_chain.py``), against a real gateway and the emulator
answering exactly as each test says: a refusal's Retry-After, a refusal that is no JSON, a
whole JSON answer, events without an ``event:`` line, events the gateway cannot read, a
stream's own error, the other ends of an answer, and a conversation that the answer or its
size leaves nothing to chain on.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from wsproto.events import TextMessage

from copilot_host.gateway._app import _socket as socket_session
from copilot_host.gateway._app._chain import Conversation
from copilot_host.testing import Faults, GitHubEmulator, RawAnswer, Scenario
from tests._wsclient import TERMINAL, SocketClient
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks
from tests.gateway.test_socket import DEVELOPER, MODEL, USER, _open, _seen, _upstream

LATER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and?"}]}
ITEM = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "a b"}],
}
EVENT_STREAM = (("Content-Type", "text/event-stream"),)


def _response(ident: str | None, status: str = "completed", output: Any = ()) -> dict[str, Any]:
    found: dict[str, Any] = {"object": "response", "status": status, "output": list(output)}
    return found if ident is None else {"id": ident, **found}


def _events(*events: dict[str, Any] | str, named: bool = True) -> RawAnswer:
    """An event stream: each dict one event (with its ``event:`` line when ``named``),
    each string written as it is."""
    parts = []
    for event in events:
        if isinstance(event, str):
            parts.append(event)
        else:
            line = f"event: {event['type']}\n" if named else ""
            parts.append(f"{line}data: {json.dumps(event)}\n\n")
    return RawAnswer(200, "".join(parts).encode(), EVENT_STREAM)


@contextmanager
def _answering(answer: RawAnswer, tmp_path: Path) -> Iterator[Gateway]:
    """A gateway whose upstream answers every Responses request with ``answer``."""
    scenario = Scenario(faults=Faults(answers={"responses": answer}))
    with GitHubEmulator(scenario) as emulator, running_gateway(emulator, tmp_path / "home") as gw:
        yield gw
        assert_no_leaks(gw)


def _ask(gateway: Gateway, client: SocketClient, **fields: Any) -> list[dict[str, Any]]:
    return _seen(gateway, client.request({"model": MODEL, **fields}))


def _chain_refused(gateway: Gateway, client: SocketClient, previous: str) -> str:
    """The message of the refusal of a request chained on ``previous``."""
    (frame,) = _ask(gateway, client, previous_response_id=previous, input=[LATER])
    assert (frame["type"], frame["status"]) == ("error", 400), frame
    assert frame["error"]["code"] == "previous_response_not_found"
    message: str = frame["error"]["message"]
    return message


def _warm_up(gateway: Gateway, client: SocketClient) -> str:
    """Codex's warm-up (answered by the gateway, never upstream): its response's id."""
    frames = _ask(gateway, client, input=[DEVELOPER], generate=False)
    ident: str = frames[-1]["response"]["id"]
    return ident


def test_an_upstream_refusal_keeps_its_retry_after_in_the_error_frame(tmp_path: Path) -> None:
    """Codex backs off by the error frame's ``headers`` (docs/WIRE.md); the error's null
    fields are left out, as OpenAI's socket frames leave them."""
    error = {"message": "too many requests", "type": "requests", "code": "rate_limited"}
    body = json.dumps({"error": {**error, "param": None}}).encode()
    answer = RawAnswer(429, body, (("Content-Type", "application/json"), ("Retry-After", "7")))
    with _answering(answer, tmp_path) as gateway, _open(gateway) as client:
        (frame,) = _ask(gateway, client, input=[USER])
    assert frame["type"] == "error" and frame["status"] == 429, frame
    assert frame["headers"] == {"retry-after": "7"}
    assert "param" not in frame["error"]


@pytest.mark.parametrize(
    "answer",
    [
        RawAnswer(400, b"<html>Bad Request</html>", (("Content-Type", "text/html"),)),
        # A refusal typed as an event stream (relayed event by event): read whole all the same.
        RawAnswer(400, b'event: error\ndata: {"code": "bad"}\n\ndata: [DONE]\n\n', EVENT_STREAM),
    ],
    ids=["html", "event-stream"],
)
def test_a_refusal_that_is_no_json_is_a_server_error_frame(
    tmp_path: Path, answer: RawAnswer
) -> None:
    with _answering(answer, tmp_path) as gateway, _open(gateway) as client:
        (frame,) = _ask(gateway, client, input=[USER])
        assert frame["type"] == "error" and frame["status"] == 400, frame
        assert frame["error"]["type"] == "server_error"
        assert frame["error"]["code"] == "upstream_error"
        # The socket serves on.
        assert _ask(gateway, client, input=[USER])[0]["status"] == 400


def test_a_whole_json_answer_is_one_completed_frame_and_chains(tmp_path: Path) -> None:
    """An upstream that answers a streamed request with a JSON document: the client reads
    it as ``response.completed``, and the next request chains on its output."""
    document = _response("resp_whole", output=[ITEM])
    answer = RawAnswer(200, json.dumps(document).encode())
    with _answering(answer, tmp_path) as gateway, _open(gateway) as client:
        assert _ask(gateway, client, input=[USER]) == [
            {"type": "response.completed", "response": document}
        ]
        _ask(gateway, client, previous_response_id="resp_whole", input=[LATER])
    assert [body["input"] for body in _upstream(gateway)] == [[USER], [USER, ITEM, LATER]]


def test_events_are_read_by_their_data_and_the_unreadable_passed_on(tmp_path: Path) -> None:
    """Events without an ``event:`` line are known by their data's ``type``; a comment, an
    event without data and ``[DONE]`` are no frames; an output item the gateway cannot read
    goes to the client as it came, and the conversation keeps the ones it can."""
    created = {"type": "response.created", "response": _response("resp_d", "in_progress")}
    done = {"type": "response.output_item.done", "output_index": 1, "item": ITEM}
    completed = {"type": "response.completed", "response": _response("resp_d", output=[ITEM])}
    answer = _events(
        ": a comment\n\n",
        created,
        "event: response.output_item.done\ndata: {not json\n\n",
        {"type": "response.output_item.done", "output_index": 0, "item": "not an item"},
        done,
        "event: keep-alive\n\n",
        completed,
        "data: [DONE]\n\n",
        named=False,
    )
    with _answering(answer, tmp_path) as gateway, _open(gateway) as client:
        texts = _texts(gateway, client, input=[USER])
        assert texts[1] == "{not json"
        kinds = [json.loads(text)["type"] for text in (texts[0], *texts[2:])]
        assert kinds == ["response.created", *["response.output_item.done"] * 2, completed["type"]]
        _texts(gateway, client, previous_response_id="resp_d", input=[LATER])
    assert _upstream(gateway)[1]["input"] == [USER, ITEM, LATER]


def _texts(gateway: Gateway, client: SocketClient, **fields: Any) -> list[str]:
    """The text frames of the answer to a request of ``fields``, as they came (the last one
    ends it)."""
    client.send_json({"type": "response.create", "model": MODEL, **fields})
    texts: list[str] = []
    while True:
        event = client._next()
        assert isinstance(event, TextMessage) and event.message_finished, event
        texts.append(event.data)
        gateway.seen.append(("frame", event.data))
        try:
            kind = json.loads(event.data).get("type")
        except ValueError:
            continue
        if kind in TERMINAL:
            return texts


CREATED = {"type": "response.created", "response": _response("resp_e", "in_progress")}


@pytest.mark.parametrize(
    ("end", "last"),
    [
        # A stream's own error event (no status): the wrapped frame Codex acts on.
        (
            {"type": "error", "code": "server_overloaded", "message": "busy", "sequence_number": 1},
            {
                "type": "error",
                "status": 502,
                "error": {"code": "server_overloaded", "message": "busy", "type": "server_error"},
            },
        ),
        # One that carries its status already is passed on as it is.
        (
            {"type": "error", "status": 429, "error": {"code": "rate_limited", "message": "m"}},
            None,
        ),
        ({"type": "response.failed", "response": _response("resp_e", "failed")}, None),
        ({"type": "response.incomplete", "response": _response("resp_e", "incomplete")}, None),
    ],
    ids=["error", "error-with-status", "failed", "incomplete"],
)
def test_an_answer_that_ends_otherwise_leaves_nothing_to_chain_on(
    tmp_path: Path, end: dict[str, Any], last: dict[str, Any] | None
) -> None:
    with _answering(_events(CREATED, end), tmp_path) as gateway, _open(gateway) as client:
        frames = _ask(gateway, client, input=[USER])
        assert frames == [CREATED, end if last is None else last]
        assert "not the last response" in _chain_refused(gateway, client, "resp_e")
    assert len(_upstream(gateway)) == 1


def test_a_completed_response_without_an_id_forgets_the_conversation(tmp_path: Path) -> None:
    completed = {"type": "response.completed", "response": _response(None)}
    with _answering(_events(completed), tmp_path) as gateway, _open(gateway) as client:
        warm = _warm_up(gateway, client)
        assert _ask(gateway, client, previous_response_id=warm, input=[USER]) == [completed]
        # Chained on nothing the client could name, the conversation is gone.
        assert "not the last response" in _chain_refused(gateway, client, warm)


@pytest.fixture
def small_chain(monkeypatch: pytest.MonkeyPatch) -> int:
    """Each socket's conversation held to 4000 bytes (the body cap stands for it)."""
    limit = 4000
    monkeypatch.setattr(socket_session, "Conversation", functools.partial(Conversation, limit))
    return limit


def test_a_conversation_past_its_bound_is_refused_and_forgotten(
    gateway: Gateway, small_chain: int
) -> None:
    """Codex then sends the whole conversation on a new socket (measured)."""
    big = {"type": "message", "role": "user", "content": "x" * small_chain}
    with _open(gateway) as client:
        warm = _warm_up(gateway, client)
        (frame,) = _ask(gateway, client, previous_response_id=warm, input=[big])
        assert frame["error"]["code"] == "previous_response_not_found"
        assert "past the gateway's size limit" in frame["error"]["message"]
        assert "not the last response" in _chain_refused(gateway, client, warm)
    assert _upstream(gateway) == []


def test_an_answer_that_takes_the_conversation_past_its_bound_forgets_it(
    tmp_path: Path, small_chain: int
) -> None:
    long = {**ITEM, "content": [{"type": "output_text", "text": "y" * small_chain}]}
    done = {"type": "response.output_item.done", "output_index": 0, "item": long}
    completed = {"type": "response.completed", "response": _response("resp_l", output=[long])}
    with _answering(_events(done, completed), tmp_path) as gateway, _open(gateway) as client:
        warm = _warm_up(gateway, client)
        frames = _ask(gateway, client, previous_response_id=warm, input=[USER])
        assert frames[-1] == completed
        for previous in (warm, "resp_l"):
            assert "not the last response" in _chain_refused(gateway, client, previous)
    assert [body["input"] for body in _upstream(gateway)] == [[DEVELOPER, USER]]
