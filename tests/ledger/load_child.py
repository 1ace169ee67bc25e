"""Model requests of four kinds through a gateway, for the ledger's process tests.

    python tests/ledger/load_child.py COUNT

run as the command of ``copilot-host run`` (the gateway from ``COPILOT_HOST_BASE_URL`` and
``COPILOT_HOST_API_KEY``, as run gives them); :func:`send` is the same load from a test's
own threads against a ``serve``. Prints the statuses it got, one JSON list.
"""

from __future__ import annotations

import json
import os
import sys

import httpx2

BOUND = 30.0
TEXT = [{"role": "user", "content": "hi"}]
# Four kinds a ledger must each record once: two streamed, and one answered by the gateway.
KINDS: tuple[tuple[str, dict[str, object]], ...] = (
    ("/v1/chat/completions", {"model": "gpt-4.1", "messages": TEXT}),
    ("/v1/chat/completions", {"model": "gpt-4.1", "messages": TEXT, "stream": True}),
    (
        "/v1/messages",
        {"model": "claude-sonnet-4.6", "max_tokens": 32, "messages": TEXT, "stream": True},
    ),
    ("/v1/messages/count_tokens", {"model": "claude-sonnet-4.6", "messages": TEXT}),
)


def send(base_url: str, key: str, count: int, first: int = 0) -> list[int]:
    """``count`` requests, the kinds in turn from ``first``; their statuses, each answer
    read to its end."""
    statuses = []
    root = base_url.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx2.Client(base_url=root, headers=headers, timeout=BOUND) as client:
        for index in range(first, first + count):
            path, body = KINDS[index % len(KINDS)]
            with client.stream("POST", path, json=body) as answer:
                answer.read()
                statuses.append(answer.status_code)
    return statuses


def main() -> None:
    env = os.environ
    statuses = send(env["COPILOT_HOST_BASE_URL"], env["COPILOT_HOST_API_KEY"], int(sys.argv[1]))
    print(json.dumps(statuses))


if __name__ == "__main__":
    main()
