"""CPU time the gateway spends relaying one long streamed event that arrives in pieces.

    python bench/stream_event.py [--mib N] [--chunk KIB]

Upstream (an in-memory transport; the login and session come from an emulator) answers a
streaming Chat request with one event of N MiB (default 32, just under the answer cap)
sent in chunks of KIB KiB (default 16, about what a TCP read returns), whose end arrives
with the last chunk: until then the gateway holds an unfinished event. The gateway app is
driven directly through ASGI (no server, no client), so the CPU time measured is the
relay's: its buffering, its search for the event's end, its masking. Before the relay
searched only the new bytes, this grew with the square of the event's length.

Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway as bench

from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator

KEY = "cph_bench_stream_event_key_0123456789"


class _LongEvent(httpx2.AsyncBaseTransport):
    def __init__(self, size: int, chunk: int) -> None:
        self.size = size
        self.chunk = chunk

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        size, chunk = self.size, self.chunk

        async def body() -> AsyncIterator[bytes]:
            yield b"data: "
            piece = b"x" * chunk
            left = size - len(b"data: ") - 2
            while left > 0:
                yield piece[: min(chunk, left)]
                left -= chunk
            yield b"\n\n"

        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stream(body())
        )


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, source: AsyncIterator[bytes]) -> None:
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._source:
            yield piece


async def _relay_once(home: Path, emulator: GitHubEmulator, upstream: _LongEvent) -> float:
    from copilot_host.gateway import create_app

    async with AsyncGitHubCopilotHost(
        store=CredentialStore(home), transport=emulator.async_transport()
    ) as host:
        app = create_app(host, api_key=KEY, transport=upstream)
        await app.startup()
        body = b'{"model": "gpt-4.1", "stream": true, "messages": []}'
        scope: dict[str, Any] = {
            "type": "http",
            "method": "POST",
            "path": "/v1/chat/completions",
            "headers": [
                (b"host", b"127.0.0.1:4141"),
                (b"authorization", f"Bearer {KEY}".encode()),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "server": ("127.0.0.1", 4141),
        }
        received = [{"type": "http.request", "body": body, "more_body": False}]
        sent = {"bytes": 0, "status": 0}
        hang = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if received:
                return received.pop()
            await hang.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            else:
                sent["bytes"] += len(message.get("body", b""))

        # A first request registers the models and gets a session: not measured.
        upstream_size = upstream.size
        upstream.size = 64
        received.append({"type": "http.request", "body": body, "more_body": False})
        await app(scope, receive, send)
        upstream.size = upstream_size
        sent["bytes"] = 0
        received[:] = [{"type": "http.request", "body": body, "more_body": False}]
        began = time.process_time()
        await app(scope, receive, send)
        took = time.process_time() - began
        await app.aclose()
        assert sent["status"] == 200, sent
        assert sent["bytes"] == upstream_size, (sent, upstream_size)
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=16)
    options = parser.parse_args()
    size = options.mib * 1024 * 1024 - 1024  # under the cap, with room for the framing
    with tempfile.TemporaryDirectory() as folder, GitHubEmulator() as emulator:
        home = Path(folder) / "home"
        bench.login(home, emulator.port)
        took = asyncio.run(_relay_once(home, emulator, _LongEvent(size, options.chunk * 1024)))
    print(
        f"one {size / (1024 * 1024):.1f} MiB event in {options.chunk} KiB chunks: "
        f"{took:.2f} s of CPU in the gateway"
    )


if __name__ == "__main__":
    main()
