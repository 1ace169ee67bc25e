"""README's "serve the hardened gateway with one call" snippet, run as written against the
emulator (its host's store and transport, and its address, rewritten), and holding serve's
hardening: a refusal sent before the body was read closes the connection."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import httpx2

from copilot_host.gateway import upstream_transport
from copilot_host.gateway._server import bind
from copilot_host.github import GitHubCopilotHost
from copilot_host.store import CredentialStore
from copilot_host.testing import GitHubEmulator

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
_BLOCK = re.compile(r"^```python\n(.*?)^```\n", re.S | re.M)
KEY = "readme-gateway-key-0123456789"


def _snippet() -> str:
    (found,) = [b for b in _BLOCK.findall(README) if "await serve(app" in b]
    return str(found)


def test_readme_serving_snippet_serves_the_hardened_gateway(tmp_path: Path) -> None:
    snippet = _snippet()
    assert snippet.rstrip().endswith("asyncio.run(main())")
    rewritten = (
        snippet.replace(
            "AsyncGitHubCopilotHost(store=CredentialStore())",
            "AsyncGitHubCopilotHost(store=_store, transport=_emulator.async_transport())",
        )
        .replace('host="127.0.0.1", port=4141', "listener=_listener, on_started=_started")
        .replace(
            'api_key=os.environ["MY_GATEWAY_KEY"]',
            "api_key=_key, transport=_emulator.async_transport(inner=upstream_transport())",
        )
        .replace("asyncio.run(main())", "")
    )
    assert rewritten.count("_emulator") == 2 and "_listener" in rewritten
    with GitHubEmulator() as emulator, bind("127.0.0.1", 0) as listener:
        home = tmp_path / "home"
        home.mkdir(mode=0o700)
        with GitHubCopilotHost(
            store=CredentialStore(home, key_file=True), transport=emulator.transport()
        ) as person:
            person.login(sleep=lambda _seconds: None)
        port = listener.getsockname()[1]

        async def drive() -> tuple[int, str, bytes]:
            started = asyncio.Event()
            namespace: dict[str, Any] = {
                "_store": CredentialStore(home),
                "_emulator": emulator,
                "_listener": listener,
                "_started": started.set,
                "_key": KEY,
                "upstream_transport": upstream_transport,
            }
            exec(compile(rewritten, "README.md", "exec"), namespace)
            task = asyncio.create_task(namespace["main"]())
            await asyncio.wait_for(started.wait(), 15)
            try:
                async with httpx2.AsyncClient(
                    base_url=f"http://127.0.0.1:{port}", trust_env=False
                ) as client:
                    chat = await client.post(
                        "/v1/chat/completions",
                        json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "Hi"}]},
                        headers={"Authorization": f"Bearer {KEY}"},
                    )
                refused = await asyncio.to_thread(_wrong_key_then_read, port)
                return chat.status_code, chat.json()["choices"][0]["message"]["content"], refused
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

        status, content, refused = asyncio.run(drive())
    assert (status, content) == (200, "echo: Hi")
    # Refused before its body was read: 401, Connection: close, and the socket closed.
    assert refused.startswith(b"HTTP/1.1 401")
    assert b"connection: close" in refused.lower()


def _wrong_key_then_read(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Authorization: Bearer wrong-key-wrong-key\r\nContent-Length: 1000000\r\n\r\n" % port
        )
        got = b""
        while piece := sock.recv(65536):  # ends only when the server closes
            got += piece
        return got
