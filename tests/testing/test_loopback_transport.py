"""Reaching an emulator that runs in another process: only its port is needed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import httpx2
import pytest

from copilot_host.testing import async_loopback_transport, loopback_transport

# An emulator in a child process: it prints its port, then serves until stdin closes.
CHILD = textwrap.dedent(
    """
    import sys
    from copilot_host.testing import GitHubEmulator
    with GitHubEmulator() as emulator:
        print(emulator.port, flush=True)
        sys.stdin.read()
    """
)
USER = "https://api.github.com/user"


def test_both_transports_reach_an_emulator_in_another_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        with httpx2.Client(transport=loopback_transport(port)) as client:
            # Routed there (the emulator answers an unknown token as GitHub does) ...
            answer = client.get(USER, headers={"Authorization": "token nope"})
            assert (answer.status_code, answer.json()["message"]) == (401, "Bad credentials")
            assert answer.headers["x-github-request-id"]
            # ... and a host that is not GitHub's is refused, not sent anywhere.
            with pytest.raises(httpx2.ConnectError, match="does not route"):
                client.get("https://example.com/")

        async def asynchronous() -> int:
            transport = async_loopback_transport(port, limits=httpx2.Limits(max_connections=4))
            async with httpx2.AsyncClient(transport=transport) as client:
                answers = await asyncio.gather(*(client.get(USER) for _ in range(8)))
            return sum(a.status_code == 401 for a in answers)

        assert asyncio.run(asynchronous()) == 8
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
