"""Every refusal, over raw HTTP: its status, code and shape, the order in which the checks
run (Host, Origin, key, path/method, size, JSON/model, model lookup), and that none of them
sends anything to GitHub."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway._support import Gateway
from tests.gateway.conftest import fresh_view


@pytest.fixture
def gateway(shared_gateway: Gateway) -> Iterator[Gateway]:
    """One gateway for the module: these tests log nobody in or out."""
    yield from fresh_view(shared_gateway)


CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {
    "model": "claude-opus-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _openai_error(body: Any, code: str) -> str:
    """The OpenAI error shape with ``code``; returns its message."""
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "code", "param"}
    assert error["code"] == code
    assert error["message"].startswith("copilot-host")
    return str(error["message"])


def _anthropic_error(body: Any, kind: str) -> str:
    assert set(body) == {"type", "error"} and body["type"] == "error"
    assert set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind
    return str(body["error"]["message"])


# -- Host --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",  # DNS rebinding: the page's own name
        "evil.example",
        "127.0.0.1:{other}",  # another port
        "localhost:{other}",
        "127.0.0.2:{port}",  # another loopback address than the three named
        "0.0.0.0:{port}",
        "[::2]:{port}",
        "127.0.0.1",  # no port
        "",
        "127.0.0.1:{port}.evil.example",
    ],
)
def test_a_host_that_is_not_this_gateway_is_refused(gateway: Gateway, host: str) -> None:
    gateway.emulator.clear_requests()
    value = host.format(port=gateway.port, other=gateway.port + 1)
    status, headers, body = gateway.get("/v1/models", host=value)
    assert status == 421
    assert headers["content-type"] == "application/json"
    _openai_error(body, "invalid_host")
    assert gateway.emulator.requests == ()


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_three_loopback_names_on_its_port_are_served(gateway: Gateway, name: str) -> None:
    status, _headers, body = gateway.get("/v1/models", host=f"{name}:{gateway.port}")
    assert status == 200
    assert body["object"] == "list"


# -- Origin ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://127.0.0.1:{port}", "http://localhost"]
)
def test_any_origin_header_is_refused(gateway: Gateway, origin: str) -> None:
    gateway.emulator.clear_requests()
    value = origin.format(port=gateway.port)
    status, _headers, body = gateway.post("/v1/chat/completions", CHAT, headers={"Origin": value})
    assert status == 403
    _openai_error(body, "origin_not_allowed")
    # A CORS preflight gets no CORS headers, so no page can read any answer.
    status, headers, _body = gateway.raw(
        "OPTIONS",
        "/v1/chat/completions",
        headers={"Origin": value, "Access-Control-Request-Method": "POST"},
        key=False,
    )
    assert status == 403
    assert not any(name.startswith("access-control-") for name in headers)
    assert gateway.emulator.requests == ()


# -- the key -----------------------------------------------------------------------------------


def test_a_missing_or_wrong_key_is_refused(gateway: Gateway) -> None:
    gateway.emulator.clear_requests()
    for headers in (
        {},
        {"Authorization": "Bearer cph_not-the-key"},
        {"Authorization": f"Basic {gateway.key}"},
        {"Authorization": gateway.key},
        {"Authorization": f"Bearer {gateway.key[:-1]}"},
        {"Authorization": f"Bearer {gateway.key}x"},
        {"x-api-key": "cph_not-the-key"},
        {"x-api-key": ""},
        # Every key presented must be the gateway's.
        {"Authorization": f"Bearer {gateway.key}", "x-api-key": "cph_not-the-key"},
        {"Authorization": "Bearer cph_not-the-key", "x-api-key": gateway.key},
    ):
        status, found, body = gateway.post("/v1/chat/completions", CHAT, headers=headers, key=False)
        assert status == 401, headers
        assert found["www-authenticate"] == 'Bearer realm="copilot-host"'
        _openai_error(body, "invalid_api_key")
    status, _found, body = gateway.raw(
        "GET",
        "/v1/models",
        headers=[("Authorization", f"Bearer {gateway.key}"), ("Authorization", "Bearer x")],
        key=False,
    )
    assert status == 401
    assert gateway.emulator.requests == ()


@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_the_key_is_taken_from_either_header(gateway: Gateway, header: str) -> None:
    value = f"bearer {gateway.key}" if header == "authorization" else gateway.key
    status, _headers, body = gateway.post(
        "/v1/chat/completions", CHAT, headers={header: value}, key=False
    )
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "echo: hi"


# -- path, method, size ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/v1/completions", "/chat/completions", "/embeddings", "/v1", "/", "/v1/message"]
)
def test_paths_it_does_not_serve_are_404(gateway: Gateway, path: str) -> None:
    gateway.emulator.clear_requests()
    status, _headers, body = gateway.post(path, {"model": "gpt-4.1", "input": "x"})
    assert status == 404
    message = _openai_error(body, "not_found")
    assert "POST /v1/chat/completions" in message and "POST /v1/embeddings" in message
    assert gateway.emulator.requests_to("chat") == ()


def test_a_method_it_does_not_serve_is_405_with_allow(gateway: Gateway) -> None:
    gateway.emulator.clear_requests()
    for method, path, allowed in (
        ("GET", "/v1/chat/completions", "POST"),
        ("PUT", "/v1/responses", "POST"),
        ("DELETE", "/v1/models", "GET"),
        ("POST", "/v1/models", "GET"),
        ("HEAD", "/v1/messages", "POST"),
    ):
        status, headers, data = gateway.raw(method, path)
        assert (status, headers["allow"]) == (405, allowed)
        if method != "HEAD":
            body = json.loads(data)
            if path == "/v1/messages":
                _anthropic_error(body, "invalid_request_error")
            else:
                _openai_error(body, "method_not_allowed")
    assert gateway.emulator.requests == ()


def test_a_body_over_the_cap_is_413(gateway: Gateway) -> None:
    from copilot_host.gateway import MAX_BODY_BYTES

    gateway.emulator.clear_requests()
    # Declared too large: refused before any of it is read.
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    connection.putrequest("POST", "/v1/chat/completions", skip_accept_encoding=True)
    connection.putheader("Authorization", f"Bearer {gateway.key}")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413
    _openai_error(json.loads(response.read()), "request_too_large")
    connection.close()
    # Sent in chunks, with no length: refused once the cap is passed.
    chunk = b" " * (1024 * 1024)

    def body() -> Any:
        yield b'{"model": "gpt-4.1", "pad": "'
        for _ in range(MAX_BODY_BYTES // len(chunk) + 1):
            yield chunk
        yield b'"}'

    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    try:
        connection.request(
            "POST",
            "/v1/messages",
            body=body(),
            headers={"x-api-key": gateway.key, "Content-Type": "application/json"},
            encode_chunked=True,
        )
        response = connection.getresponse()
        assert response.status == 413
        _anthropic_error(json.loads(response.read()), "request_too_large")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the gateway may close the connection while the client still uploads
    finally:
        connection.close()
    assert gateway.emulator.requests == ()


# -- body, model -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"not json", "invalid_json"),
        (b"", "invalid_json"),
        (b"[1, 2]", "invalid_json"),
        (b'"gpt-4.1"', "invalid_json"),
        (b"{}", "missing_model"),
        (b'{"model": 4}', "missing_model"),
        (b'{"model": ""}', "missing_model"),
        (b'{"model": null, "messages": []}', "missing_model"),
    ],
)
def test_a_body_that_is_not_a_json_object_with_a_model_is_400(
    gateway: Gateway, body: bytes, code: str
) -> None:
    gateway.emulator.clear_requests()
    status, _headers, data = gateway.raw(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
    )
    assert status == 400
    _openai_error(json.loads(data), code)
    assert gateway.emulator.requests == ()


def test_an_unknown_model_is_404_and_nothing_is_sent_to_a_model(gateway: Gateway) -> None:
    for model in (
        "gpt-9",
        "github-copilot/gpt-9",
        "other-provider/gpt-4.1",
        "text-embedding-3-large",
    ):
        status, _headers, body = gateway.post("/v1/chat/completions", {**CHAT, "model": model})
        assert status == 404
        assert model in _openai_error(body, "model_not_found")
    status, _headers, body = gateway.post("/v1/messages", {**MESSAGES, "model": "claude-9"})
    assert status == 404
    _anthropic_error(body, "not_found_error")
    for path in ("/v1/models/", "/v1/models/gpt-9", "/v1/models/github-copilot/gpt-9"):
        status, _headers, body = gateway.get(path)
        assert status == 404
        _openai_error(body, "model_not_found")
    for endpoint in ("chat", "responses", "messages"):
        assert gateway.emulator.requests_to(endpoint) == ()


def test_a_model_name_over_256_characters_is_400_on_every_path_before_any_lookup(
    gateway: Gateway,
) -> None:
    """Longer names never reach the rules or the suggestion search (an 8 MiB name held the
    event loop for seconds); 256 characters are still looked up (404 with suggestions)."""
    gateway.emulator.clear_requests()
    for length, status in ((257, 400), (8 * 1024 * 1024, 400), (256, 404)):
        name = ("gpt-9-" + "9" * length)[:length]
        found, _headers, body = gateway.post("/v1/chat/completions", {**CHAT, "model": name})
        assert found == status
        if status == 400:
            assert "longer than 256" in _openai_error(body, "invalid_request")
        found, _headers, body = gateway.post("/v1/responses", {"model": name, "input": "hi"})
        assert found == status
        found, _headers, body = gateway.post("/v1/messages", {**MESSAGES, "model": name})
        assert found == status
        if status == 400:
            assert "longer than 256" in _anthropic_error(body, "invalid_request_error")
        if length < 65536:  # a URL path that long is a head too large for the parsers
            found, _headers, body = gateway.get(f"/v1/models/{name}")
            assert found == status
            if status == 400:
                _openai_error(body, "invalid_request")
            found, _headers, body = gateway.get(
                f"/v1/models/{name}", headers={"anthropic-version": "2023-06-01"}
            )
            assert found == status
    for endpoint in ("chat", "responses", "messages"):
        assert gateway.emulator.requests_to(endpoint) == ()


def test_a_model_on_an_endpoint_it_does_not_list_is_400_naming_its_endpoints(
    gateway: Gateway,
) -> None:
    status, _headers, body = gateway.post("/v1/chat/completions", {**CHAT, "model": "gpt-5.5"})
    assert status == 400
    message = _openai_error(body, "unsupported_api_for_model")
    assert "/v1/responses" in message and "translate" in message
    status, _headers, body = gateway.post("/v1/responses", {"model": "gpt-4.1", "input": "x"})
    assert status == 400
    assert "/v1/chat/completions" in _openai_error(body, "unsupported_api_for_model")
    status, _headers, body = gateway.post("/v1/messages", {**MESSAGES, "model": "gpt-5.4"})
    assert status == 400
    message = _anthropic_error(body, "invalid_request_error")
    assert "/v1/responses and /v1/chat/completions" in message
    # An embeddings model on a chat path, and a chat model on the embeddings path.
    embeddings = {**CHAT, "model": "text-embedding-3-small"}
    for path in ("/v1/chat/completions", "/v1/responses"):
        status, _headers, body = gateway.post(path, embeddings)
        assert status == 400
        assert "call it on /v1/embeddings" in _openai_error(body, "unsupported_api_for_model")
    status, _headers, body = gateway.post("/v1/messages", {**MESSAGES, **embeddings})
    assert "call it on /v1/embeddings" in _anthropic_error(body, "invalid_request_error")
    status, _headers, body = gateway.post("/v1/embeddings", {"model": "gpt-4.1", "input": ["x"]})
    assert status == 400
    assert "/v1/chat/completions" in _openai_error(body, "unsupported_api_for_model")
    for endpoint in ("chat", "responses", "messages", "embeddings"):
        assert gateway.emulator.requests_to(endpoint) == ()


# -- the order -----------------------------------------------------------------------------------


def test_refusals_come_in_the_fixed_order(gateway: Gateway) -> None:
    """Each request fails every check from its own on; it gets the first one's answer."""
    gateway.emulator.clear_requests()
    other = f"evil.example:{gateway.port}"
    big = {"Content-Length": str(64 * 1024 * 1024)}
    cases: list[tuple[dict[str, Any], str, str, int]] = [
        ({"host": other, "headers": {"Origin": "null"}, "key": False}, "GET", "/v1/x", 421),
        ({"headers": {"Origin": "null"}, "key": False}, "GET", "/v1/x", 403),
        ({"key": False, "headers": big}, "POST", "/v1/x", 401),
        ({"headers": big}, "GET", "/v1/x", 404),
        ({"headers": big}, "GET", "/v1/chat/completions", 405),
        ({"headers": big}, "POST", "/v1/chat/completions", 413),
    ]
    for options, method, path, expected in cases:
        status, _headers, _body = gateway.raw(method, path, **options)
        assert status == expected, (method, path, options)
    # JSON before the model lookup, the lookup before the endpoint check.
    assert gateway.raw("POST", "/v1/messages", body=b"{")[0] == 400
    assert gateway.post("/v1/messages", {**MESSAGES, "model": "nope"})[0] == 404
    assert gateway.post("/v1/messages", {**MESSAGES, "model": "gpt-4.1"})[0] == 400
    for endpoint in ("chat", "responses", "messages"):
        assert gateway.emulator.requests_to(endpoint) == ()


def test_errors_on_models_follow_the_clients_api(gateway: Gateway) -> None:
    status, _headers, body = gateway.get(
        "/v1/models/nope", headers={"anthropic-version": "2023-06-01"}
    )
    assert status == 404
    _anthropic_error(body, "not_found_error")
    status, _headers, body = gateway.get(
        "/v1/models", headers={"anthropic-version": "2023-06-01"}, key=False
    )
    assert status == 401
    _anthropic_error(body, "authentication_error")
    status, _headers, body = gateway.get("/v1/models/nope")
    assert status == 404
    _openai_error(body, "model_not_found")


def test_a_websocket_is_refused(gateway: Gateway) -> None:
    status, _headers, _body = gateway.raw(
        "GET",
        "/v1/models",
        headers={
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        },
    )
    # uvicorn serves no websockets here: the upgrade is ignored and the request served
    # as plain HTTP (with the key), never switched to another protocol.
    assert status != 101


# -- refused uploads ---------------------------------------------------------------------------


def _upload_refused(gateway: Gateway, head: bytes, budget: int) -> tuple[bytes, int, float]:
    """Send ``head``, then body bytes until the gateway stops taking them or ``budget``
    bytes went; returns the answer, the bytes the gateway took and the seconds it took."""
    import socket
    import threading
    import time

    sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=30)
    answer = bytearray()

    def read() -> None:
        try:
            while data := sock.recv(65536):
                answer.extend(data)
        except OSError:
            pass

    reader = threading.Thread(target=read, daemon=True)
    try:
        sock.sendall(head)
        reader.start()
        chunk = b"x" * (1024 * 1024)
        sent = 0
        began = time.monotonic()
        try:
            while sent < budget:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the gateway closed the connection: it reads no more
        took = time.monotonic() - began
        reader.join(30)
    finally:
        sock.close()
    return bytes(answer), sent, took


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"Authorization: Bearer cph_not_the_key_000000", b"401"),
        (b"Origin: http://evil.example", b"403"),
        (b"Content-Length: 99999999999", b"413"),
    ],
    ids=["wrong key", "origin", "too large"],
)
def test_a_refusal_closes_the_connection_and_stops_reading_the_upload(
    either_stack_gateway: Gateway, head: bytes, status: bytes
) -> None:
    """A client that goes on uploading after its request was refused (gigabytes, say) is
    not read to the end: the refusal says ``Connection: close`` and the gateway stops
    taking the body within a bounded amount (what a lingering close discards)."""
    gateway = either_stack_gateway
    key = b"" if b"Authorization" in head else f"Authorization: Bearer {gateway.key}\r\n".encode()
    length = b"" if b"Content-Length" in head else b"Content-Length: 4294967296\r\n"
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{gateway.port}\r\n".encode()
        + key
        + length
        + b"Content-Type: application/json\r\n"
        + head
        + b"\r\n\r\n"
    )
    budget = 1024 * 1024 * 1024
    answer, sent, took = _upload_refused(gateway, request, budget)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    assert b"\r\nconnection: close\r\n" in answer.lower()
    # Read to the end, the upload would take the whole gigabyte; the gateway lingers for
    # at most 32 MiB (plus what the sockets' buffers hold).
    assert sent < 128 * 1024 * 1024, f"the gateway took {sent >> 20} MiB in {took:.2f} s"
    print(f"refused upload: the gateway took {sent >> 20} MiB in {took:.2f} s")
    assert gateway.emulator.requests == ()


def test_a_refusal_after_the_body_was_read_keeps_the_connection(
    either_stack_gateway: Gateway,
) -> None:
    gateway = either_stack_gateway
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    try:
        for _ in range(2):  # the same connection serves both
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=json.dumps({"model": "no-such-model", "messages": []}),
                headers={"Authorization": f"Bearer {gateway.key}"},
            )
            response = connection.getresponse()
            assert response.status == 404
            assert response.getheader("connection") is None
            response.read()
    finally:
        connection.close()
