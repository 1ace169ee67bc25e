"""The aiohttp transport under the gateway's httpx2 client, on the wire: it sends what
httpx2's own transport sends and fails as it fails.

Each test drives both transports against a small HTTP/1.1 server on a loopback socket
(or a TLS one) and compares what the server received and what the client got back.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import secrets
import socket
import ssl
import threading
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests._extras import require
from tests._tls import self_signed

require("aiohttp")

import aiohttp  # noqa: E402

from copilot_host._accel import PURE_PYTHON_ENV, accelerations  # noqa: E402
from copilot_host.gateway import GatewayServer, upstream_transport  # noqa: E402
from copilot_host.gateway._server._aioerrors import mapped_error as _mapped  # noqa: E402
from copilot_host.gateway._server._aiotransport import AiohttpTransport  # noqa: E402

# Every test finishes well within this; a transport that hangs fails instead.
BOUND = 20.0

Transport = httpx2.AsyncBaseTransport
Factory = Callable[..., Transport]


def _aiohttp(limits: httpx2.Limits | None = None) -> Transport:
    return AiohttpTransport(limits=limits)


def _pure(limits: httpx2.Limits | None = None) -> Transport:
    return (
        httpx2.AsyncHTTPTransport() if limits is None else httpx2.AsyncHTTPTransport(limits=limits)
    )


BOTH: dict[str, Factory] = {"aiohttp": _aiohttp, "httpx2": _pure}


@pytest.fixture(params=sorted(BOTH))
def make(request: pytest.FixtureRequest) -> Factory:
    return BOTH[request.param]


# -- a small HTTP/1.1 server -------------------------------------------------------------------


@dataclass
class Seen:
    line: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes

    @property
    def path(self) -> str:
        return self.line.split()[1].decode()

    def lowered(self) -> list[tuple[bytes, bytes]]:
        """Names in lower case; Host without its port (each server has its own)."""
        return [
            (name.lower(), value.rsplit(b":", 1)[0] if name.lower() == b"host" else value)
            for name, value in self.headers
        ]


Answer = Callable[[Seen, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[bool]]


async def _read_request(reader: asyncio.StreamReader) -> Seen | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    line, *rest = head[:-4].split(b"\r\n")
    headers = [tuple(item.split(b": ", 1)) for item in rest]
    lowered = {name.lower(): value for name, value in headers}
    body = b""
    if b"content-length" in lowered:
        body = await reader.readexactly(int(lowered[b"content-length"]))
    elif lowered.get(b"transfer-encoding") == b"chunked":
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        await reader.readexactly(2)
    return Seen(line, [(n, v) for n, v in headers], body)


def _head(status: str, *headers: tuple[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def ok(seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    body = json.dumps({"path": seen.path}).encode()
    writer.write(
        _head("200 OK", ("Content-Type", "application/json"), ("Content-Length", str(len(body))))
        + body
    )
    await writer.drain()
    return True


@dataclass
class Upstream:
    answer: Answer = ok
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    server: asyncio.Server | None = None
    handlers: set[asyncio.Task[None]] = field(default_factory=set)
    alpn: list[str | None] = field(default_factory=list)

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self.server is not None
        self.server.close()
        # Connections still open (a stalled answer) end with the test, sockets closed.
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.connections += 1
        if self.tls is not None:
            self.alpn.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()
            self.handlers.discard(task)
            self.gone.set()

    def url(self, path: str = "/ok") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (seen := await _read_request(reader)) is not None:
            self.seen.append(seen)
            if not await self.answer(seen, reader, writer):
                break


def _request(
    url: str,
    *,
    method: str = "POST",
    headers: list[tuple[str, str | bytes]] | None = None,
    content: Any = None,
    timeout: httpx2.Timeout | None = None,
) -> httpx2.Request:
    raw = [(n.encode(), v if isinstance(v, bytes) else v.encode()) for n, v in headers or ()]
    return httpx2.Request(
        method,
        url,
        headers=raw,
        content=content,
        extensions={"timeout": (timeout or httpx2.Timeout(BOUND)).as_dict()},
    )


async def _exchange(transport: Transport, request: httpx2.Request) -> tuple[int, bytes]:
    response = await transport.handle_async_request(request)
    try:
        raw = b"".join([piece async for piece in response.aiter_raw()])
    finally:
        await response.aclose()
    return response.status_code, raw


async def _error_of(transport: Transport, request: httpx2.Request) -> BaseException:
    """The httpx2 error the exchange of ``request`` over ``transport`` ends in (none is an
    AssertionError); the transport is closed afterwards."""
    try:
        await _exchange(transport, request)
    except httpx2.HTTPError as exc:
        return exc
    finally:
        await transport.aclose()
    raise AssertionError("no failure")


def _run(test: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(test(), BOUND)

    return asyncio.run(bounded())


def _both(
    sent: Callable[[Transport, Upstream], Awaitable[Any]], answer: Answer = ok
) -> dict[str, Any]:
    """What ``sent`` returned, and the requests the server saw, per transport."""
    found: dict[str, Any] = {}
    for name, factory in BOTH.items():

        async def one(factory: Factory = factory) -> tuple[Any, list[Seen]]:
            async with Upstream(answer) as upstream:
                transport = factory()
                try:
                    return await sent(transport, upstream), upstream.seen
                finally:
                    await transport.aclose()

        found[name] = _run(one)
    return found


# -- what is sent ------------------------------------------------------------------------------


def test_headers_go_in_their_order_with_nothing_added() -> None:
    headers: list[tuple[str, str | bytes]] = [
        ("X-Trace", "1"),
        ("Authorization", "Bearer not-a-token"),
        ("x-trace", "2"),
        ("Accept-Encoding", "identity"),
        ("anthropic-beta", "a"),
        ("Anthropic-Beta", "b"),
        ("X-Utf8", "café".encode()),
        ("Content-Type", "application/json"),
    ]

    async def sent(transport: Transport, upstream: Upstream) -> int:
        status, _ = await _exchange(
            transport, _request(upstream.url(), headers=headers, content=b"{}")
        )
        return status

    found = _both(sent)
    (fast,) = found["aiohttp"][1]
    (pure,) = found["httpx2"][1]
    assert found["aiohttp"][0] == found["httpx2"][0] == 200
    # The same values in the same order; of a name repeated in another case, the first
    # spelling (aiohttp merges names by spelling).
    assert fast.lowered() == pure.lowered()
    assert [name for name, _ in fast.headers] == [
        b"Host",
        b"X-Trace",
        b"Authorization",
        b"X-Trace",
        b"Accept-Encoding",
        b"anthropic-beta",
        b"anthropic-beta",
        b"X-Utf8",
        b"Content-Type",
        b"Content-Length",
    ]
    assert (b"x-utf8", "café".encode()) in fast.lowered()
    names = {name for name, _ in fast.lowered()}
    assert not names & {b"user-agent", b"accept", b"cookie", b"connection"}


def test_decoded_headers_are_remembered_without_credentials_and_within_a_bound() -> None:
    """The aiohttp transport remembers a header's decoded form by its bytes (most repeat
    every request): what it gives is what decoding gives, a credential's value is never
    kept, and the memo stays within its bound however many values pass."""
    import copilot_host as ch
    from copilot_host.gateway._server import _aiotransport

    secret = secrets.token_hex(16).encode()
    known = ch.Secret("cph_" + secrets.token_hex(16))
    ch.register_secret(known)
    raw = [
        (b"Authorization", b"Bearer " + secret),
        (b"Cookie", b"k=" + secret),
        (b"X-Api-Key", secret),
        (b"X-Innocent", b"v=" + known.reveal().encode()),
        (b"Content-Type", b"application/json"),
        (b"X-Utf8", "café".encode()),
    ]
    for turn in range(3 * _aiotransport._DECODED_KEPT):
        headers = [*raw, (b"X-Request-Id", str(turn).encode())]
        converted = _aiotransport._headers(headers)
        assert converted is not None
        out, names = converted
        assert out == [(name.decode(), value.decode()) for name, value in headers]
        assert names == {name.decode().lower() for name, _ in headers}
        assert len(_aiotransport._DECODED) <= _aiotransport._DECODED_KEPT
    kept = _aiotransport._DECODED
    assert (b"Content-Type", b"application/json") in kept
    assert not any(secret.decode() in value for _name, value in kept.values())
    assert not any(known.reveal() in value for _name, value in kept.values())


def test_a_header_value_that_is_not_utf8_goes_byte_for_byte() -> None:
    headers: list[tuple[str, str | bytes]] = [("X-Latin1", "café".encode("latin-1")), ("X-A", "1")]

    async def sent(transport: Transport, upstream: Upstream) -> int:
        status, _ = await _exchange(
            transport, _request(upstream.url(), headers=headers, content=b"{}")
        )
        return status

    found = _both(sent)
    assert found["aiohttp"][1][0].lowered() == found["httpx2"][1][0].lowered()
    assert (b"X-Latin1", "café".encode("latin-1")) in found["aiohttp"][1][0].headers


async def _stream() -> AsyncIterator[bytes]:
    for piece in (b'{"a":', b' "streamed"', b"}"):
        yield piece


@pytest.mark.parametrize(
    ("method", "content"),
    [
        ("POST", b'{"a": 1}'),
        ("POST", b""),
        ("GET", None),
        ("POST", os.urandom(3 * 1024 * 1024 + 7)),
        ("POST", "streamed"),
    ],
    ids=["bytes", "empty", "none", "3mib", "streamed"],
)
def test_bodies_arrive_as_given(method: str, content: Any) -> None:
    async def sent(transport: Transport, upstream: Upstream) -> int:
        body = _stream() if content == "streamed" else content
        status, _ = await _exchange(
            transport, _request(upstream.url(), method=method, content=body)
        )
        return status

    found = _both(sent)
    (fast,) = found["aiohttp"][1]
    (pure,) = found["httpx2"][1]
    expected = b'{"a": "streamed"}' if content == "streamed" else (content or b"")
    assert fast.body == pure.body == expected
    assert fast.line == pure.line
    if content == "streamed":
        # Chunked either way; aiohttp writes its Transfer-Encoding header last.
        assert sorted(fast.lowered()) == sorted(pure.lowered())
        assert (b"transfer-encoding", b"chunked") in fast.lowered()
    else:
        assert fast.lowered() == pure.lowered()


def test_a_userinfo_url_sends_httpx2s_authorization_only() -> None:
    async def sent(transport: Transport, upstream: Upstream) -> int:
        url = upstream.url().replace("http://", "http://user:pass@")
        status, _ = await _exchange(transport, _request(url, method="GET"))
        return status

    found = _both(sent)
    assert found["aiohttp"][1][0].lowered() == found["httpx2"][1][0].lowered()
    assert not any(name == b"authorization" for name, _ in found["aiohttp"][1][0].lowered())


# -- what comes back ---------------------------------------------------------------------------


def test_an_event_stream_arrives_piece_by_piece(make: Factory) -> None:
    release = asyncio.Event()

    async def events(_seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            _head("200 OK", ("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"))
        )
        writer.write(b"9\r\ndata: 1\n\n\r\n")
        await writer.drain()
        # The second event only once the client has the first: a transport that waited
        # for more would never see it.
        await release.wait()
        writer.write(b"9\r\ndata: 2\n\n\r\n0\r\n\r\n")
        await writer.drain()
        return True

    async def test() -> list[bytes]:
        async with Upstream(events) as upstream:
            transport = make()
            pieces: list[bytes] = []
            response = await transport.handle_async_request(_request(upstream.url()))
            async for piece in response.aiter_raw():
                pieces.append(piece)
                release.set()
            await response.aclose()
            await transport.aclose()
            return pieces

    assert _run(test) == [b"data: 1\n\n", b"data: 2\n\n"]


async def _endless(seen: Seen, r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    if seen.path == "/ok":
        return await ok(seen, r, writer)
    writer.write(
        _head("200 OK", ("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"))
    )
    while True:  # until the client closes the connection
        writer.write(b"9\r\ndata: x\n\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.01)


def test_closing_an_answer_early_closes_its_connection_and_frees_its_slot(make: Factory) -> None:
    async def test() -> tuple[int, int]:
        async with Upstream(_endless) as upstream:
            transport = make(httpx2.Limits(max_connections=1))
            response = await transport.handle_async_request(_request(upstream.url("/endless")))
            async for _piece in response.aiter_raw():
                break
            await response.aclose()
            await asyncio.wait_for(upstream.gone.wait(), 5)
            # The one slot is free again: a second request gets a connection at once.
            short = httpx2.Timeout(BOUND, pool=2.0)
            status, _ = await _exchange(transport, _request(upstream.url(), timeout=short))
            await transport.aclose()
            return status, upstream.connections

    assert _run(test) == (200, 2)


def test_keep_alive_requests_share_one_connection(make: Factory) -> None:
    async def test() -> tuple[list[int], int]:
        async with Upstream() as upstream:
            transport = make()
            statuses = [(await _exchange(transport, _request(upstream.url())))[0] for _ in range(3)]
            await transport.aclose()
            return statuses, upstream.connections

    assert _run(test) == ([200, 200, 200], 1)


def test_no_cookie_is_kept_and_no_redirect_followed() -> None:
    async def answer(seen: Seen, r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        if seen.path == "/redirect":
            writer.write(
                _head(
                    "302 Found",
                    ("Location", "/ok"),
                    ("Set-Cookie", "session=kept; Path=/"),
                    ("Content-Length", "0"),
                )
            )
            await writer.drain()
            return True
        return await ok(seen, r, writer)

    async def sent(transport: Transport, upstream: Upstream) -> list[int]:
        first, _ = await _exchange(transport, _request(upstream.url("/redirect"), method="GET"))
        second, _ = await _exchange(transport, _request(upstream.url("/again"), method="GET"))
        return [first, second]

    found = _both(sent, answer)
    for statuses, seen in found.values():
        assert statuses == [302, 200]
        assert [s.path for s in seen] == ["/redirect", "/again"]
        assert not any(name == b"cookie" for name, _ in seen[1].lowered())


def test_an_encoded_answer_passes_raw_and_httpx2_decodes_it(make: Factory) -> None:
    document = json.dumps({"answer": "x" * 500}).encode()
    packed = gzip.compress(document)

    async def answer(_seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            _head(
                "200 OK",
                ("Content-Type", "application/json"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", str(len(packed))),
            )
            + packed
        )
        await writer.drain()
        return True

    async def test() -> tuple[bytes, bytes]:
        async with Upstream(answer) as upstream:
            transport = make()
            _status, raw = await _exchange(transport, _request(upstream.url()))
            async with httpx2.AsyncClient(transport=transport) as client:
                decoded = (await client.get(upstream.url())).content
            return raw, decoded

    assert _run(test) == (packed, document)


# -- failures ----------------------------------------------------------------------------------


async def _hang_up(_seen: Seen, _r: asyncio.StreamReader, _w: asyncio.StreamWriter) -> bool:
    return False


async def _short_body(_seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    writer.write(_head("200 OK", ("Content-Length", "10")) + b"abc")
    await writer.drain()
    return False


async def _garbage(_seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    writer.write(b"HTTP/1.1 abc nonsense\r\n\r\n")
    await writer.drain()
    return False


async def _switches(_seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    writer.write(_head("101 Switching Protocols", ("Connection", "Upgrade"), ("Upgrade", "h2c")))
    writer.write(b"not HTTP any more")
    await writer.drain()
    return False


async def _silent(_seen: Seen, _r: asyncio.StreamReader, _w: asyncio.StreamWriter) -> bool:
    await asyncio.sleep(BOUND)
    return False


async def _stalls_mid_body(
    _seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> bool:
    writer.write(_head("200 OK", ("Content-Length", "10")) + b"abc")
    await writer.drain()
    await asyncio.sleep(BOUND)
    return False


async def _never_reads(_seen: Seen, _r: asyncio.StreamReader, _w: asyncio.StreamWriter) -> bool:
    await asyncio.sleep(BOUND)
    return False


class _HeadOnly(Upstream):
    """Reads request heads only: a body is never taken off the socket."""

    async def serve(self, reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(BOUND)


CANARY = "canary-" + secrets.token_hex(16)
SECRET_HEADERS: list[tuple[str, str | bytes]] = [("Authorization", f"Bearer {CANARY}")]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _failure(
    factory: Factory, answer: Answer | None, timeout: httpx2.Timeout, *, read_body: bool = True
) -> BaseException:
    """The exception one request raises (None: it raised nothing)."""
    transport = factory()
    try:
        if answer is None:
            url = f"http://127.0.0.1:{_closed_port()}/ok"
            await _exchange(transport, _request(url, headers=SECRET_HEADERS, timeout=timeout))
            raise AssertionError("no failure")
        async with Upstream(answer) as upstream:
            await _exchange(
                transport, _request(upstream.url(), headers=SECRET_HEADERS, timeout=timeout)
            )
        raise AssertionError("no failure")
    except httpx2.HTTPError as exc:
        return exc
    finally:
        await transport.aclose()


FAILURES = {
    "refused": (None, httpx2.ConnectError),
    "hung_up": (_hang_up, httpx2.RemoteProtocolError),
    "short_body": (_short_body, httpx2.RemoteProtocolError),
    "garbage": (_garbage, httpx2.RemoteProtocolError),
    "switching_protocols": (_switches, httpx2.RemoteProtocolError),
    "silent": (_silent, httpx2.ReadTimeout),
    "stalls_mid_body": (_stalls_mid_body, httpx2.ReadTimeout),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_failure_is_the_httpx2_exception_httpx2_raises(case: str, make: Factory) -> None:
    answer, expected = FAILURES[case]
    timeout = httpx2.Timeout(5.0, read=0.3)
    exc = _run(lambda: _failure(make, answer, timeout))
    assert type(exc) is expected
    if make is _aiohttp:  # httpx2's own leaves .request to the client
        assert isinstance(exc, httpx2.RequestError)
        assert exc.request.url.path == "/ok"


def test_a_pool_wait_past_its_timeout_is_pool_timeout(make: Factory) -> None:
    async def test() -> BaseException:
        async with Upstream(_endless) as upstream:
            transport = make(httpx2.Limits(max_connections=1))
            held = await transport.handle_async_request(_request(upstream.url("/endless")))
            try:
                timeout = httpx2.Timeout(5.0, pool=0.2)
                request = _request(upstream.url(), headers=SECRET_HEADERS, timeout=timeout)
                return await _error_of(transport, request)
            finally:
                await held.aclose()

    assert type(_run(test)) is httpx2.PoolTimeout


def test_a_body_the_server_never_takes_is_write_timeout(make: Factory) -> None:
    async def test() -> BaseException:
        async with _HeadOnly() as upstream:
            transport = make()
            # Far more than loopback socket buffers hold.
            body = bytes(64 * 1024 * 1024)
            timeout = httpx2.Timeout(5.0, write=0.3)
            request = _request(
                upstream.url(), headers=SECRET_HEADERS, content=body, timeout=timeout
            )
            return await _error_of(transport, request)

    assert type(_run(test)) is httpx2.WriteTimeout


class _HangsUpOnHeads(Upstream):
    """Reads a request's head, then hangs up without an answer or reading the body."""

    async def serve(self, reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")


def test_a_failed_large_upload_leaves_the_task_alone_afterwards(make: Factory) -> None:
    """The write timeout times each slice of a large body; once the request has failed,
    a slice left pending must not cancel the task later, whatever it does next."""

    async def test() -> str:
        async with _HangsUpOnHeads() as upstream:
            transport = make()
            try:
                await _exchange(
                    transport,
                    _request(
                        upstream.url(),
                        content=bytes(16 * 1024 * 1024),
                        timeout=httpx2.Timeout(5.0, write=0.2),
                    ),
                )
            except httpx2.TransportError as exc:
                failed = type(exc).__name__
            else:
                raise AssertionError("no failure")
            finally:
                await transport.aclose()
            await asyncio.sleep(0.6)  # past the write timeout: not cancelled
            return failed

    assert _run(test) in {"RemoteProtocolError", "ReadError", "WriteError"}


def test_a_header_value_with_a_line_break_is_refused_before_sending(make: Factory) -> None:
    async def test() -> tuple[BaseException, int]:
        async with Upstream() as upstream:
            transport = make()
            headers: list[tuple[str, str | bytes]] = [
                *SECRET_HEADERS,
                ("X-Bad", "a\r\nInjected: 1"),
            ]
            try:
                await _exchange(transport, _request(upstream.url(), headers=headers))
            except httpx2.HTTPError as exc:
                return exc, len(upstream.seen)
            finally:
                await transport.aclose()
            raise AssertionError("no failure")

    exc, seen = _run(test)
    assert type(exc) is httpx2.LocalProtocolError
    assert seen == 0


def test_a_scheme_other_than_http_is_unsupported(make: Factory) -> None:
    async def test() -> BaseException:
        transport = make()
        try:
            await transport.handle_async_request(_request("ftp://127.0.0.1/x"))
        except httpx2.HTTPError as exc:
            return exc
        finally:
            await transport.aclose()
        raise AssertionError("no failure")

    assert type(_run(test)) is httpx2.UnsupportedProtocol


def test_aiohttps_connect_timeout_is_connect_timeout() -> None:
    # A connect that times out cannot be made on loopback; the mapping is checked alone.
    request = _request("https://api.example.test/x", headers=SECRET_HEADERS)
    exc = _mapped(aiohttp.ConnectionTimeoutError(f"timeout {CANARY}"), request)
    assert type(exc) is httpx2.ConnectTimeout
    assert CANARY not in str(exc)
    assert str(exc) == "timed out connecting to api.example.test:443"


def _texts(exc: BaseException) -> str:
    return "\n".join([str(exc), repr(exc), *traceback.format_exception(exc)])


def test_no_failure_text_holds_the_authorization_header() -> None:
    """Each failure of the aiohttp transport, as str, repr and a logged traceback: the
    request's Authorization never shows (aiohttp's own exceptions can quote headers, so
    they are neither quoted nor chained)."""
    timeout = httpx2.Timeout(5.0, read=0.3)

    def failure(answer: Answer | None) -> BaseException:
        return _run(lambda: _failure(_aiohttp, answer, timeout))  # type: ignore[no-any-return]

    failures = [failure(answer) for answer, _ in FAILURES.values()]

    async def bad_header() -> BaseException:
        transport = _aiohttp()
        try:
            async with Upstream() as upstream:
                headers: list[tuple[str, str | bytes]] = [
                    *SECRET_HEADERS,
                    ("X-Bad", f"{CANARY}\r\nX: 1"),
                ]
                await _exchange(transport, _request(upstream.url(), headers=headers))
        except httpx2.HTTPError as exc:
            return exc
        finally:
            await transport.aclose()
        raise AssertionError("no failure")

    failures.append(_run(bad_header))
    assert len(failures) == len(FAILURES) + 1
    for exc in failures:
        assert CANARY not in _texts(exc)
        assert exc.__cause__ is None
        assert exc.__suppress_context__


# -- TLS, proxies, the pure path ---------------------------------------------------------------


def test_tls_trusts_what_ssl_cert_file_names_and_nothing_else(
    make: Factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert_file, key_file = self_signed(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert_file, key_file)
    server_tls.set_alpn_protocols(["h2", "http/1.1"])

    async def request_with(setting: Path | None) -> int | type[BaseException]:
        if setting is None:
            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        else:
            monkeypatch.setenv("SSL_CERT_FILE", str(setting))
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        transport = make()  # the context is built as the transport is
        try:
            async with Upstream(tls=server_tls) as upstream:
                status, _ = await _exchange(transport, _request(upstream.url(), method="GET"))
                # HTTP/1.1 offered by name, as httpx2's own transport offers it.
                assert upstream.alpn == ["http/1.1"]
                return status
        except httpx2.HTTPError as exc:
            return type(exc)
        finally:
            await transport.aclose()

    assert _run(lambda: request_with(cert_file)) == 200
    # The system store does not know this certificate.
    assert _run(lambda: request_with(None)) is httpx2.ConnectError


def test_an_ssl_cert_file_that_cannot_be_read_fails_as_httpx2s_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    failed = []
    for factory in BOTH.values():
        with pytest.raises(OSError) as raised:
            factory()
        failed.append(type(raised.value))
    assert failed[0] is failed[1]


_PROXY_NAMES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy")


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "HTTP_PROXY"])
def test_a_proxy_in_the_environment_is_seen(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    assert not accelerations().proxy
    assert accelerations().aiohttp
    assert not accelerations({}).proxy
    monkeypatch.setenv(variable, "http://127.0.0.1:9")
    assert accelerations().proxy
    assert not accelerations().aiohttp  # httpx2 applies the proxy
    assert accelerations({variable: "http://127.0.0.1:9"}) == accelerations()


def test_the_pure_path_setting_rules_aiohttp_out(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    assert isinstance(upstream_transport(), AiohttpTransport)
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    assert upstream_transport() is None
    monkeypatch.setenv(PURE_PYTHON_ENV, "0")
    assert isinstance(upstream_transport(), AiohttpTransport)


def test_without_aiohttp_importable_httpx2s_own_transport_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from copilot_host.testing import async_loopback_transport

    for name in _PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # as if it were not installed
    assert upstream_transport() is None
    assert GatewayServer().stack.transport == "httpx2"

    async def through_loopback() -> int:
        async with Upstream() as upstream:
            transport = async_loopback_transport(upstream.port)
            try:
                # The loopback transport takes GitHub's own URLs (and only those).
                request = _request("https://api.github.com/ok", method="GET")
                status, _ = await _exchange(transport, request)
            finally:
                await transport.aclose()
            return status

    assert _run(through_loopback) == 200


async def _refuse_tunnel(
    _seen: Seen, _r: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> bool:
    writer.write(_head("403 Forbidden", ("Content-Length", "0")))
    await writer.drain()
    return False


def test_with_a_proxy_set_the_gateway_sends_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTPS_PROXY keeps the gateway on httpx2's own transport, which applies it: the
    model request reaches the proxy (a loopback one that refuses the tunnel) as a CONNECT
    to the route's host, and the client gets the gateway's usual 502."""
    from copilot_host.gateway import create_app
    from copilot_host.github import AsyncGitHubCopilotHost, GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator

    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    key = "k-" + secrets.token_hex(16)
    chat = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    with GitHubEmulator() as emulator:
        with GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emulator.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)

        async def test() -> tuple[int, dict[str, Any], list[Seen], str]:
            async with Upstream(_refuse_tunnel) as proxy:
                monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
                async with AsyncGitHubCopilotHost(
                    store=CredentialStore(home), transport=emulator.async_transport()
                ) as host:
                    app = create_app(host, api_key=key)  # the gateway's own upstream
                    # As serve() and run put it on their transport: httpx2's, for the proxy.
                    GatewayServer().adopt(app)
                    await app.startup()
                    try:
                        async with httpx2.AsyncClient(
                            transport=httpx2.ASGITransport(app), base_url="http://127.0.0.1:8080"
                        ) as client:
                            answer = await client.post(
                                "/v1/chat/completions",
                                json=chat,
                                headers={"Authorization": f"Bearer {key}"},
                            )
                        route = app.catalog.get("github-copilot/gpt-4.1")
                        assert route is not None
                        return answer.status_code, answer.json(), proxy.seen, route.origin
                    finally:
                        await app.aclose()

        status, body, seen, origin = _run(test)
    assert (status, body["error"]["code"]) == (502, "network_error")
    assert "ProxyError" in body["error"]["message"]
    host_name = httpx2.URL(origin).host
    assert [s.line for s in seen] == [f"CONNECT {host_name}:443 HTTP/1.1".encode()]
    assert emulator.requests_to("chat") == ()


class _Redirected(httpx2.AsyncBaseTransport):
    """Every request to 127.0.0.1:``port`` over ``inner``, its Host header kept."""

    def __init__(self, port: int, inner: Transport) -> None:
        self.port = port
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
        moved = httpx2.Request(
            request.method,
            url,
            headers=request.headers,
            stream=request.stream,
            extensions=request.extensions,
        )
        return await self.inner.handle_async_request(moved)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _answer_each(listener: socket.socket, failure: str) -> None:
    """Each connection's whole request read, then ``switches``: an answer 101, as if the
    upstream had switched protocols; ``hung_up``: closed without an answer (a close with
    bytes still unread would be a reset, which reads as ReadError)."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            data = b""
            while b"\r\n\r\n" not in data and (piece := conn.recv(65536)):
                data += piece
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length and (piece := conn.recv(65536)):
                body += piece
            if failure == "switches":
                conn.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                    b"Upgrade: h2c\r\n\r\nnot HTTP any more"
                )


@pytest.mark.parametrize("failure", ["refused", "hung_up", "switches"])
def test_the_gateway_answers_an_upstream_failure_the_same_on_either_transport(
    failure: str, tmp_path: Path
) -> None:
    from copilot_host.testing import GitHubEmulator
    from tests.gateway._support import running_gateway

    chat = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if failure == "refused":
        listener.close()
    else:
        listener.listen(8)
        threading.Thread(target=_answer_each, args=(listener, failure), daemon=True).start()
    answers = {}
    try:
        with GitHubEmulator() as emulator:
            for name, factory in BOTH.items():
                upstream = _Redirected(port, factory())
                with running_gateway(emulator, tmp_path / name, transport=upstream) as gateway:
                    status, _headers, body = gateway.post("/v1/chat/completions", chat)
                answers[name] = (status, body["error"]["code"], body["error"]["message"])
    finally:
        listener.close()
    expected = "ConnectError" if failure == "refused" else "RemoteProtocolError"
    assert (
        answers["aiohttp"]
        == answers["httpx2"]
        == (
            502,
            "network_error",
            f"copilot-host: could not reach the Copilot API ({expected})",
        )
    )
