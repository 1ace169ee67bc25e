"""What the request rewrites (gateway/_rewrites.py) cost a request they do not change.

    python bench/rewrites.py [--rounds N]

The real gateway app, called in-process over ASGI (no sockets, so the gateway's own work is
what is timed), with its upstream an in-process transport that answers at once. Each
request shape is sent alternately, in batches, through two apps over the same host: one
with every rewrite on (this round's path) and one with ``rewrites=frozenset()`` (the check
skipped: the path before this round). The figure is the ratio of their medians (the CPU
time of this process per request, in alternating batches), measured in the same run; a
ratio near 1.00 means the check costs a request that needs no rewrite next to nothing.

The shapes: a small Chat request, a small Messages request, a 100 KB Messages conversation
(Claude Code-like: system blocks, tools, many turns; nothing to rewrite), and a Codex-like
Responses request with function tools only. Also printed: the cost of the rewrite Claude
Code's requests get under ``serve`` (``billing-header``, which re-encodes the body), as a
ratio to the same body without the block.

Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gateway as bench

from copilot_host.gateway import create_app
from copilot_host.github import AsyncGitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator

KEY = "cph_bench_key_0123456789abcdef"


def _upstream(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(
        200, content=b'{"id": "x", "object": "ok"}', headers={"content-type": "application/json"}
    )


def shapes() -> dict[str, tuple[str, dict[str, Any]]]:
    tool = {"name": "Read", "description": "read a file " * 20, "input_schema": {"type": "object"}}
    turns: list[dict[str, Any]] = []
    while len(json.dumps(turns)) < 100_000:
        turns += [
            {"role": "user", "content": [{"type": "text", "text": "please look at this " * 40}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done, here it is " * 40}]},
        ]
    turns.append({"role": "user", "content": "next"})
    return {
        "chat, small": (
            "/v1/chat/completions",
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "How are you?"}]},
        ),
        "messages, small": (
            "/v1/messages",
            {
                "model": "claude-opus-5",
                "max_tokens": 1000,
                "messages": [{"role": "user", "content": "How are you?"}],
            },
        ),
        "messages, 100 KB": (
            "/v1/messages",
            {
                "model": "claude-opus-5",
                "max_tokens": 32000,
                "system": [{"type": "text", "text": "You are Claude Code. " * 100}],
                "tools": [tool] * 20,
                "messages": turns,
            },
        ),
        "responses, function tools": (
            "/v1/responses",
            {
                "model": "gpt-5.5",
                "input": [{"role": "user", "content": "fix the bug"}],
                "tools": [
                    {"type": "function", "name": f"tool_{n}", "parameters": {"type": "object"}}
                    for n in range(20)
                ],
            },
        ),
    }


async def call(app: Any, path: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": headers,
        "server": ("127.0.0.1", 4141),
    }
    await app(scope, receive, send)
    return int(sent[0]["status"])


async def measure(rounds: int, home: Path, emulator: GitHubEmulator) -> None:
    async with AsyncGitHubCopilotHost(
        store=CredentialStore(home), transport=emulator.async_transport()
    ) as host:
        apps = {
            "on": create_app(host, api_key=KEY, transport=httpx2.MockTransport(_upstream)),
            "off": create_app(
                host,
                api_key=KEY,
                transport=httpx2.MockTransport(_upstream),
                rewrites=frozenset(),
            ),
        }
        base = [
            (b"host", b"127.0.0.1:4141"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-type", b"application/json"),
            (b"anthropic-version", b"2023-06-01"),
        ]
        cases = {name: (path, json.dumps(doc).encode()) for name, (path, doc) in shapes().items()}
        billing = dict(shapes()["messages, 100 KB"][1])
        billing["system"] = [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
            *billing["system"],
        ]
        for app in apps.values():
            for path, body in cases.values():
                assert await call(app, path, body, base) == 200

        async def timed(fn: Callable[[], Any], batch: int) -> float:
            # CPU time of this process: the machine's other load moves wall time, not this.
            start = time.process_time_ns()
            for _ in range(batch):
                await fn()
            return (time.process_time_ns() - start) / batch

        async def pair(a: Callable[[], Any], b: Callable[[], Any]) -> tuple[float, float]:
            first: list[float] = []
            second: list[float] = []
            for turn in range(rounds):
                # Which goes first alternates, so neither always runs on a warmer cache.
                if turn % 2:
                    second.append(await timed(b, 50))
                    first.append(await timed(a, 50))
                else:
                    first.append(await timed(a, 50))
                    second.append(await timed(b, 50))
            return statistics.median(first), statistics.median(second)

        print(f"{'request':28} {'rewrites on':>12} {'off':>10} {'ratio':>7}")
        for name, (path, body) in cases.items():
            on, off = await pair(
                functools.partial(call, apps["on"], path, body, base),
                functools.partial(call, apps["off"], path, body, base),
            )
            print(f"{name:28} {on / 1000:10.1f}us {off / 1000:8.1f}us {on / off:7.2f}")
        plain = cases["messages, 100 KB"][1]
        with_block = json.dumps(billing).encode()
        edited, untouched = await pair(
            lambda: call(apps["on"], "/v1/messages", with_block, base),
            lambda: call(apps["on"], "/v1/messages", plain, base),
        )
        print(
            f"{'billing-header, 100 KB':28} {edited / 1000:10.1f}us {untouched / 1000:8.1f}us "
            f"{edited / untouched:7.2f}  (rewritten vs. the same body without the block)"
        )
        for app in apps.values():
            await app.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, GitHubEmulator() as emulator:
        home = Path(tmp) / "home"
        bench.login(home, emulator.port)
        asyncio.run(measure(args.rounds, home, emulator))


if __name__ == "__main__":
    main()
