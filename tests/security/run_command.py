"""The command ``copilot-host run`` runs in the leak suite: a small program that uses the
gateway with the key from its environment, the way an agent would.

    python tests/security/run_command.py REPORT

It sends a chat request and a Messages request to the gateway, reads every
``/proc/*/cmdline`` of this user's processes while run and its gateway are alive, and
writes ``{"key", "statuses", "cmdlines"}`` to REPORT (a file outside HOME, for the suite
to search: the key is one of its canaries). On stdout it says only that it is done.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path


def _post(url: str, key: str, body: dict[str, object]) -> int:
    request = urllib.request.Request(  # noqa: S310 - the gateway's loopback address
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        answer.read()
        return int(answer.status)


def _cmdlines() -> list[str]:
    seen = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if path.parent.stat().st_uid != os.getuid():
                continue
            seen.append(f"{path}: {path.read_bytes().decode('latin-1')}")
        except OSError:
            continue  # a process that ended meanwhile
    return seen


def main() -> None:
    key = os.environ["COPILOT_HOST_API_KEY"]
    base_url = os.environ["OPENAI_BASE_URL"]
    statuses = [
        _post(
            f"{base_url}/chat/completions",
            key,
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]},
        ),
        _post(
            f"{os.environ['ANTHROPIC_BASE_URL']}/v1/messages",
            os.environ["ANTHROPIC_AUTH_TOKEN"],
            {"model": "sonnet", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        ),
    ]
    report = {"key": key, "statuses": statuses, "cmdlines": _cmdlines()}
    Path(sys.argv[1]).write_text(json.dumps(report), encoding="utf-8")
    print("done")


if __name__ == "__main__":
    main()
