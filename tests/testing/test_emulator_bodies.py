"""How the emulator reads request bodies: chunked uploads, and bodies that are not a JSON
object."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import pytest

from copilot_host.testing import GitHubEmulator
from tests.testing._support import body, copilot


def test_a_chunked_request_body_is_read_whole() -> None:
    document = json.dumps(body("chat", "gpt-4.1", "chunked hello")).encode()

    def pieces() -> Iterator[bytes]:  # no length known up front: sent chunked
        for start in range(0, len(document), 7):
            yield document[start : start + 7]

    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(f"{origin}/chat/completions", content=pieces(), headers=headers)
        (sent,) = emu.requests_to("chat")
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "echo: chunked hello"
    assert sent.headers["transfer-encoding"] == "chunked"


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"'])
def test_a_body_that_is_not_a_json_object_is_a_400(raw: bytes) -> None:
    with GitHubEmulator() as emu, httpx2.Client(transport=emu.transport()) as client:
        origin, headers = copilot(emu, client)
        answer = client.post(
            f"{origin}/chat/completions",
            content=raw,
            headers={**headers, "Content-Type": "application/json"},
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_request_body"
