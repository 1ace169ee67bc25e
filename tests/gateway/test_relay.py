"""What comes back: upstream answers keep their status, content type and request ids; only
allowlisted headers pass either way; known secrets are masked, whole bodies and stream
events alike; streams are relayed as they arrive; a client that hangs up cancels the
upstream request at once; the network failing is 502 and the login failing 503."""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import copilot_host as ch
from copilot_host.testing import Faults, GitHubEmulator, Inventory, RawAnswer, Replies, Scenario
from tests._clock import FakeClock
from tests.gateway._support import Gateway, running_gateway
from tests.gateway.conftest import assert_no_leaks

# Each test on both upstream transports: aiohttp's and httpx2's own.
pytestmark = pytest.mark.usefixtures("upstream_path")

CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
STREAM = {**CHAT, "stream": True}


@pytest.fixture
def canary() -> ch.Secret:
    """A secret the library knows (as it knows its tokens): relayed text must mask it.
    The test holds it: the registry keeps a secret only while someone does."""
    secret = ch.Secret("canary-" + secrets.token_hex(16))
    ch.register_secret(secret)
    return secret


# -- status, content type, headers -------------------------------------------------------------


@pytest.mark.parametrize(
    "emulator",
    [Scenario(inventory=Inventory(min_editor_version={"gpt-4.1": "99.0"}))],
    indirect=True,
)
def test_an_upstream_refusal_keeps_its_status_type_and_request_ids(gateway: Gateway) -> None:
    status, headers, body = gateway.post("/v1/chat/completions", CHAT)
    (record,) = gateway.emulator.requests_to("chat")
    assert (status, record.status) == (400, 400)
    # The Copilot API's own plain-text refusal, as it sent it.
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body["error"]["code"] == "model_not_supported_in_version"
    assert headers["x-github-request-id"] == record.request_id
    assert headers["x-request-id"]
    assert "x-content-type-options" not in headers


def test_only_allowlisted_response_headers_are_relayed(tmp_path: Path) -> None:
    limited = RawAnswer(
        429,
        b'{"error": {"message": "slow down", "code": "rate_limited"}}',
        headers=(
            ("Content-Type", "application/json"),
            ("Retry-After", "7"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1700000000"),
            ("Set-Cookie", "session=abc"),
            ("Server", "copilot-proxy"),
            ("Access-Control-Allow-Origin", "*"),
            ("Location", "https://evil.example/"),
        ),
    )
    with (
        GitHubEmulator(Scenario(faults=Faults(answers={"chat": limited}))) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 429
        assert body == {"error": {"message": "slow down", "code": "rate_limited"}}
        assert headers["retry-after"] == "7"
        assert headers["x-ratelimit-remaining"] == "0"
        assert headers["x-ratelimit-reset"] == "1700000000"
        for dropped in ("set-cookie", "server", "access-control-allow-origin", "location"):
            assert dropped not in headers
        assert headers["content-length"] == str(len(limited.body))
        assert_no_leaks(gateway)


def test_a_repeated_single_valued_header_goes_upstream_once_as_first_sent(
    gateway: Gateway,
) -> None:
    """X-Initiator decides billing: of two, the first goes (the one the checks read), not
    both for the service to pick from."""
    body = {
        "model": "claude-opus-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "x"}],
    }
    status, _headers, _data = gateway.raw(
        "POST",
        "/v1/messages",
        body=json.dumps(body).encode(),
        headers=[
            ("Content-Type", "application/json"),
            ("X-Initiator", "agent"),
            ("X-Initiator", "user"),
        ],
    )
    assert status == 200
    (record,) = gateway.emulator.requests_to("messages")
    assert record.headers["x-initiator"] == "agent"
    assert record.initiator == "agent"


def test_only_allowlisted_request_headers_are_forwarded(gateway: Gateway) -> None:
    from copilot_host.gateway._app import FORWARDED_REQUEST_HEADERS

    assert set(FORWARDED_REQUEST_HEADERS) == {
        "content-type",
        "accept",
        "anthropic-version",
        "anthropic-beta",
        "x-initiator",
    }
    status, _headers, _body = gateway.post(
        "/v1/messages",
        {"model": "claude-opus-5", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]},
        headers={
            "x-api-key": gateway.key,
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "context-management-2025-06-27",
            "X-Initiator": "agent",
            "Accept": "application/json",
            "Cookie": "session=abc",
            "User-Agent": "my-agent/1.0",
            "X-Stainless-Lang": "js",
            "X-Forwarded-For": "10.0.0.1",
            "Proxy-Authorization": "Basic c2VjcmV0",
            "Copilot-Vision-Request": "true",
            "Editor-Version": "vim/9.1",
        },
        key=False,  # the key as Anthropic clients send it, above
    )
    assert status == 200
    (record,) = gateway.emulator.requests_to("messages")
    sent = record.headers
    assert sent["anthropic-version"] == "2023-06-01"
    assert sent["anthropic-beta"] == "context-management-2025-06-27"  # a served beta
    assert sent["x-initiator"] == "agent"  # the client's own word is kept
    assert sent["accept"] == "application/json"
    assert sent["content-type"] == "application/json"
    for dropped in ("cookie", "x-stainless-lang", "x-forwarded-for", "proxy-authorization"):
        assert dropped not in sent
    assert "x-api-key" not in sent
    assert sent["authorization"].startswith("Bearer tid=")
    # route.auth owns these: the editor identity is the host's, vision is read from the body.
    assert sent["user-agent"] != "my-agent/1.0"
    assert sent["editor-version"] != "vim/9.1"
    assert "copilot-vision-request" not in sent
    assert gateway.key not in repr(dict(sent))


def test_the_body_goes_upstream_as_json_whatever_type_the_client_named(gateway: Gateway) -> None:
    """curl -d names a form type; the body was checked to be JSON, and is sent as such."""
    for named, sent in (
        ("application/x-www-form-urlencoded", "application/json"),
        ("text/plain", "application/json"),
        ("application/json; charset=utf-8", "application/json; charset=utf-8"),
    ):
        status, _headers, _body = gateway.post(
            "/v1/chat/completions", CHAT, headers={"Content-Type": named}
        )
        assert status == 200
        assert gateway.emulator.requests_to("chat")[-1].headers["content-type"] == sent


# -- masking -----------------------------------------------------------------------------------


def test_a_known_secret_in_an_answer_is_masked_whole_and_streamed(
    tmp_path: Path, canary: ch.Secret
) -> None:
    value = canary.reveal()
    whole = RawAnswer(
        200,
        json.dumps({"note": f"token {value} here", "n": 1}).encode(),
        headers=(("Content-Type", "application/json"),),
    )
    events = (
        b'event: a\ndata: {"x": "' + value.encode() + b'"}\n\n'
        b"data: plain\n\n"
        b"data: " + value.encode() + b"\r\n\r\n"
    )
    streamed = RawAnswer(200, events, headers=(("Content-Type", "text/event-stream"),))
    scenario = Scenario(faults=Faults(answers={"chat": whole, "responses": streamed}))
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 200
        assert body == {"note": "token [REDACTED] here", "n": 1}
        assert int(headers["content-length"]) == len(json.dumps(body))
        status, headers, data = gateway.raw(
            "POST",
            "/v1/responses",
            body=json.dumps({"model": "gpt-5.5", "input": "x", "stream": True}).encode(),
        )
        assert status == 200
        assert headers["content-type"] == "text/event-stream"
        assert data == events.replace(value.encode(), b"[REDACTED]")
        assert_no_leaks(gateway)


def test_a_known_secret_spelled_with_json_escapes_is_masked_whole_and_streamed(
    tmp_path: Path, canary: ch.Secret
) -> None:
    """A hostile upstream cannot slip a token past the mask by writing some of its
    characters as JSON \\uXXXX escapes (the reader's JSON parser would join them back)."""
    value = canary.reveal()
    spelled = "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(value))
    whole = RawAnswer(
        200,
        b'{"note": "token ' + spelled.encode() + b' here"}',
        headers=(("Content-Type", "application/json"),),
    )
    events = b'data: {"x": "' + spelled.encode() + b'"}\n\ndata: [DONE]\n\n'
    streamed = RawAnswer(200, events, headers=(("Content-Type", "text/event-stream"),))
    scenario = Scenario(faults=Faults(answers={"chat": whole, "responses": streamed}))
    with (
        GitHubEmulator(scenario) as emulator,
        running_gateway(emulator, tmp_path / "home") as gateway,
    ):
        status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert (status, body) == (200, {"note": "token [REDACTED] here"})
        status, _headers, data = gateway.raw(
            "POST",
            "/v1/responses",
            body=json.dumps({"model": "gpt-5.5", "input": "x", "stream": True}).encode(),
        )
        assert status == 200
        assert data == b'data: {"x": "[REDACTED]"}\n\ndata: [DONE]\n\n'
        assert_no_leaks(gateway)


class _Scripted(httpx2.AsyncBaseTransport):
    """An upstream whose model answer is an event stream in the chunks a test chooses; before
    each chunk after the first it waits for the test's go-ahead. The host's own requests
    (exchange, discovery) go to the emulator as usual."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.go = [threading.Event() for _ in chunks]
        self.closed = threading.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        async def body() -> AsyncIterator[bytes]:
            try:
                for index, chunk in enumerate(self.chunks):
                    if index:
                        # On the loop's executor: the gateway's loop keeps running.
                        assert await asyncio.to_thread(self.go[index].wait, 10), "no go-ahead"
                    yield chunk
            finally:
                self.closed.set()

        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stream(body())
        )


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, source: AsyncIterator[bytes]) -> None:
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._source:
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()  # type: ignore[attr-defined]


def test_events_are_relayed_as_they_complete_and_masked_across_chunk_cuts(
    emulator: GitHubEmulator, tmp_path: Path, canary: ch.Secret
) -> None:
    value = canary.reveal().encode()
    half = len(value) // 2
    chunks = [
        b"data: one\n\ndata: t",  # a whole event, and the start of the next
        b"wo " + value[:half],  # the secret cut in two ...
        value[half:] + b" end\n",  # ... and joined here, the event still open
        b"\ndata: three\n\n",
    ]
    upstream = _Scripted(chunks)
    with (
        running_gateway(emulator, tmp_path / "home", transport=upstream) as gateway,
        httpx2.Client(timeout=30) as client,
        client.stream(
            "POST",
            f"{gateway.base_url}/chat/completions",
            json=STREAM,
            headers={"Authorization": f"Bearer {gateway.key}"},
        ) as response,
    ):
        assert response.status_code == 200
        pieces = response.iter_raw()
        # Each complete event arrives before upstream has sent the next chunk: had the
        # gateway held the stream back, the go-ahead below would never be given.
        assert next(pieces) == b"data: one\n\n"
        upstream.go[1].set()
        upstream.go[2].set()
        upstream.go[3].set()
        rest = b"".join(pieces)
    assert rest == b"data: two [REDACTED] end\n\ndata: three\n\n"


def test_sse_cut_finds_the_end_of_the_last_complete_event() -> None:
    from copilot_host.gateway._sse import cut as sse_cut

    assert sse_cut(b"") == 0
    assert sse_cut(b"data: x\n") == 0
    assert sse_cut(b"data: x\n\n") == 9
    assert sse_cut(b"data: x\n\ndata: y") == 9
    assert sse_cut(b"data: x\r\n\r\ndata: y\r\n\r\n") == 22
    assert sse_cut(b"data: x\r\n\r\ndata: y") == 11
    assert sse_cut(b"data: x\r\rdata: y") == 9
    # A CRLF cut after its CR: the LF opens the next piece, and no byte changes.
    assert sse_cut(b"data: x\n\r") == 9


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.text(alphabet="ab\r\n", max_size=12), max_size=12),
)
def test_searching_only_the_new_bytes_cuts_where_searching_everything_does(
    pieces: list[str],
) -> None:
    """The relay searches for an event's end only where the newest chunk could complete
    one: chunk by chunk, it cuts exactly where a search of the whole buffer would."""
    from copilot_host.gateway._sse import cut as sse_cut

    held = bytearray()
    for piece in pieces:
        start = max(len(held) - 1, 0)
        held += piece.encode()
        cut = sse_cut(held, start)
        assert cut == sse_cut(bytes(held))
        del held[:cut]


def test_an_event_that_never_ends_cuts_the_stream_past_the_answer_cap(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from copilot_host.gateway._app import _relay

    monkeypatch.setattr(_relay, "MAX_ANSWER_BYTES", 1024 * 1024)
    megabyte = b"x" * (1024 * 1024)
    upstream = _Scripted([b"data: one\n\ndata: ", megabyte, megabyte, megabyte + b"\n\n"])
    for go in upstream.go:
        go.set()
    received = bytearray()
    with (
        running_gateway(emulator, tmp_path / "home", transport=upstream) as gateway,
        httpx2.Client(timeout=30) as client,
        client.stream(
            "POST",
            f"{gateway.base_url}/chat/completions",
            json=STREAM,
            headers={"Authorization": f"Bearer {gateway.key}"},
        ) as response,
    ):
        assert response.status_code == 200
        with pytest.raises(httpx2.RemoteProtocolError):
            for piece in response.iter_raw():
                received += piece
        # The complete event went out; the one that outgrew the cap was never sent.
        assert bytes(received) == b"data: one\n\n"
        assert upstream.closed.wait(10)


# -- hanging up --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "emulator", [Scenario(replies=Replies(stream_events=4, stream_pause=30.0))], indirect=True
)
def test_a_client_that_hangs_up_mid_stream_cancels_the_upstream_request(gateway: Gateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        body = json.dumps(STREAM).encode()
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\n"
            + f"Host: 127.0.0.1:{gateway.port}\r\n".encode()
            + f"Authorization: Bearer {gateway.key}\r\n".encode()
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        seen = b""
        # The first event arrives while upstream pauses 30 s before the next one.
        while b"\n\n" not in seen.partition(b"\r\n\r\n")[2]:
            chunk = sock.recv(65536)
            assert chunk, "the gateway closed the stream"
            seen += chunk
        assert seen.startswith(b"HTTP/1.1 200 ")
    (gone,) = gateway.emulator.wait_for_disconnects(1, timeout=10)
    assert (gone.endpoint, gone.disconnected) == ("chat", True)


@pytest.mark.parametrize("emulator", [Scenario(faults=Faults(slow={"chat": 30.0}))], indirect=True)
def test_a_client_that_hangs_up_while_upstream_is_silent_cancels_it(gateway: Gateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as sock:
        body = json.dumps(CHAT).encode()
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\n"
            + f"Host: localhost:{gateway.port}\r\n".encode()
            + f"Authorization: Bearer {gateway.key}\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        deadline = time.monotonic() + 10
        while not gateway.emulator.requests_to("chat"):
            assert time.monotonic() < deadline, "the request never reached upstream"
            time.sleep(0.01)
    (gone,) = gateway.emulator.wait_for_disconnects(1, timeout=10)
    assert gone.endpoint == "chat"


# -- failures ----------------------------------------------------------------------------------


class _Down(httpx2.AsyncBaseTransport):
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise self.error


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (httpx2.ConnectError("connection refused"), "network_error"),
        (httpx2.ReadTimeout("timed out"), "timeout"),
        (httpx2.RemoteProtocolError("peer closed"), "network_error"),
    ],
)
def test_the_network_failing_upstream_is_502(
    emulator: GitHubEmulator, tmp_path: Path, error: Exception, code: str
) -> None:
    with running_gateway(emulator, tmp_path / "home", transport=_Down(error)) as gateway:
        status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert (status, body["error"]["code"]) == (502, code)
        assert body["error"]["type"] == "server_error"
        status, _headers, body = gateway.post(
            "/v1/messages",
            {
                "model": "claude-opus-5",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "x"}],
            },
        )
        assert (status, body["error"]["type"]) == (502, "api_error")
        assert_no_leaks(gateway)


def test_the_login_failing_is_503_with_its_code(gateway: Gateway) -> None:
    gateway.emulator.revoke_login()  # GitHub no longer accepts the stored login
    status, _headers, body = gateway.post("/v1/chat/completions", CHAT)
    assert (status, body["error"]["code"]) == (503, "login_invalid")
    assert body["error"]["type"] == "server_error"
    assert gateway.emulator.requests_to("chat") == ()


def test_a_401_that_survives_route_auth_is_a_503_session_refused_not_a_wrong_key(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    clock = FakeClock()
    messages = {"model": "claude-opus-5", "max_tokens": 8, "messages": [CHAT["messages"][0]]}
    with running_gateway(emulator, tmp_path / "home", clock=clock) as gateway:
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        emulator.revoke_sessions()
        # An exchange ran within the last second: route.auth does not retry. The Copilot
        # API's 401 is about the session, so the client is told to come back soon, in
        # its API's shape, never with the status of a wrong gateway key.
        status, headers, body = gateway.post("/v1/chat/completions", CHAT)
        assert status == 503
        assert headers["retry-after"] == "1"
        assert body["error"]["code"] == "session_refused"
        assert body["error"]["type"] == "server_error"
        assert "session" in body["error"]["message"]
        status, headers, body = gateway.post("/v1/messages", messages)
        assert (status, headers["retry-after"]) == (503, "1")
        assert body["type"] == "error" and body["error"]["type"] == "api_error"
        # A wrong gateway key is still the 401 SDKs read as "fix your key".
        status, _headers, body = gateway.post(
            "/v1/chat/completions", CHAT, key=False, headers={"Authorization": "Bearer cph_wrong"}
        )
        assert (status, body["error"]["code"]) == (401, "invalid_api_key")
        # Later, route.auth exchanges a new session and retries once: served.
        clock.advance(2.0)
        assert gateway.post("/v1/chat/completions", CHAT)[0] == 200
        lines = gateway.access.lines
        assert any("status=503" in line for line in lines)
        assert_no_leaks(gateway)


# -- the access log ----------------------------------------------------------------------------


def test_one_access_line_per_request_and_nothing_from_bodies(gateway: Gateway) -> None:
    secret_prompt = "my-private-prompt-" + secrets.token_hex(4)
    gateway.post(
        "/v1/chat/completions", {**CHAT, "messages": [{"role": "user", "content": secret_prompt}]}
    )
    gateway.get("/v1/models")
    gateway.post("/v1/chat/completions", {**CHAT, "model": "gpt-9"})
    gateway.get("/v1/models", key=False)
    lines = gateway.access.lines
    assert len(lines) == 4
    first = lines[0].split()
    assert first[:2] == ["POST", "/v1/chat/completions"]
    assert first[2:5] == ["model=gpt-4.1", "status=200", f"bytes={first[4].partition('=')[2]}"]
    assert int(first[4].partition("=")[2]) > 0 and first[5].endswith("ms")
    assert lines[1].startswith("GET /v1/models model=- status=200 ")
    assert lines[2].startswith("POST /v1/chat/completions model=gpt-9 status=404 ")
    assert lines[3].startswith("GET /v1/models model=- status=401 ")
    assert not any(secret_prompt in line or gateway.key in line for line in lines)


def test_a_path_with_control_characters_is_shown_inert(gateway: Gateway) -> None:
    status, _headers, _body = gateway.get("/v1/%1B%5B2J%1B%5B31mred%0Aforged%20line")
    assert status == 404
    (line,) = gateway.access.lines
    assert "\x1b" not in line and "\n" not in line
    assert line.startswith("GET /v1/[2J[31mred forged line model=- status=404 ")


class _CutMidStream(httpx2.AsyncBaseTransport):
    """An upstream whose event stream breaks off after its first event."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"data: one\n\n"
            raise httpx2.RemoteProtocolError("peer closed connection mid-stream")

        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stream(body())
        )


def test_a_stream_cut_upstream_is_cut_for_the_client_too(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    """Once an answer has started, a failure cannot become an error document: the client's
    connection is cut, so it sees an answer that did not end, never a shorter one that did."""
    with (
        running_gateway(emulator, tmp_path / "home", transport=_CutMidStream()) as gateway,
        httpx2.Client(timeout=30) as client,
        client.stream(
            "POST",
            f"{gateway.base_url}/chat/completions",
            json=STREAM,
            headers={"Authorization": f"Bearer {gateway.key}"},
        ) as response,
    ):
        assert response.status_code == 200
        received = b""
        with pytest.raises(httpx2.RemoteProtocolError):
            for chunk in response.iter_raw():
                received += chunk
    assert received == b"data: one\n\n"


def test_v1_models_carries_the_prompt_limit_and_the_chat_default(gateway: Gateway) -> None:
    """Agents sized from ``/v1/models`` (and the profiles ``run`` builds) need the prompt
    limit, which is below the window, and the service's own default chat model."""
    status, _headers, body = gateway.get("/v1/models")
    assert status == 200
    entries = {entry["id"]: entry for entry in body["data"]}
    opus = entries["claude-opus-4.8"]
    assert (opus["context_window"], opus["max_prompt_tokens"]) == (1_000_000, 936_000)
    assert [name for name, entry in entries.items() if entry["chat_default"]] == ["gpt-5-mini"]
