"""Bytes an upstream answer leaves unread on a kept-alive connection (hardening round 3,
I1). httpcore2 (2.16, 2.17), under httpx2's own transport, hands them to the next request
on that connection: an answer with ``Content-Length: 2`` followed by a second complete
answer gives request 2 the second one. The first test is the minimal repro kept for the
upstream report (docs/upstream/httpcore2-leftover-bytes.md, which also says why the
gateway keeps its connections alive anyway: only the Copilot API itself, over a verified
TLS connection carrying this account's session, could send such bytes). The others: the
gateway does keep an upstream connection for the next request on httpx2's own transport,
and aiohttp discards what an answer left."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2

from copilot_host.gateway import create_app
from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator
from tests._extras import require
from tests.gateway._support import new_key

BOUND = 20.0
# One write: the answer to request 1, then bytes that read as a complete second answer.
SMUGGLING = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"
)
HONEST = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhonest"


class _Upstream:
    """Answers the first request on each connection with :data:`SMUGGLING` (``smuggle``;
    else :data:`HONEST`), any later one with :data:`HONEST`; counts connections."""

    def __init__(self, *, smuggle: bool = True) -> None:
        self.connections = 0
        self.smuggle = smuggle

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.smuggle
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(SMUGGLING if first else HONEST)
                await writer.drain()
                first = False
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def _upstream(*, smuggle: bool = True) -> AsyncIterator[tuple[_Upstream, str]]:
    upstream = _Upstream(smuggle=smuggle)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield upstream, f"http://127.0.0.1:{port}"
    finally:
        server.close()


async def _two(client: httpx2.AsyncClient, url: str) -> list[bytes]:
    return [(await client.get(f"{url}/{n}")).content for n in (1, 2)]


def _run(test: Callable[[], Awaitable[tuple[list[bytes], int]]]) -> tuple[list[bytes], int]:
    async def bounded() -> tuple[list[bytes], int]:
        return await asyncio.wait_for(test(), BOUND)

    return asyncio.run(bounded())


def test_repro_httpcore2_hands_bytes_left_after_one_answer_to_the_next_request() -> None:
    async def test() -> tuple[list[bytes], int]:
        async with _upstream() as (upstream, url), httpx2.AsyncClient() as client:
            return await _two(client, url), upstream.connections

    # The defect: request 2 got the bytes request 1's answer left, on the same connection.
    assert _run(test) == ([b"ok", b"smuggled"], 1)


def test_on_httpx2s_own_transport_the_gateway_keeps_its_upstream_connection(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)

    async def test() -> tuple[list[bytes], int]:
        with GitHubEmulator() as emulator:
            async with AsyncGitHubCopilotHost(
                store=CredentialStore(home, key_file=True), transport=emulator.async_transport()
            ) as host:
                app = create_app(host, api_key=new_key())  # no transport: httpx2's own
                try:
                    async with _upstream(smuggle=False) as (upstream, url):
                        return await _two(app._upstream(), url), upstream.connections
                finally:
                    await app.aclose()

    # Two answers on one connection: the second request paid no TCP or TLS handshake.
    assert _run(test) == ([b"honest", b"honest"], 1)


def test_the_aiohttp_transport_discards_what_an_answer_left() -> None:
    require("aiohttp")  # [fast]; skipped only on the base install
    from copilot_host.gateway._server._aiotransport import AiohttpTransport

    async def test() -> tuple[list[bytes], int]:
        async with (
            _upstream() as (upstream, url),
            httpx2.AsyncClient(transport=AiohttpTransport()) as client,
        ):
            return await _two(client, url), upstream.connections

    answers, connections = _run(test)
    assert answers[0] == b"ok"
    assert answers[1] != b"smuggled"
    assert connections == 2
