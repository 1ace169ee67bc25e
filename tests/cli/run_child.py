"""The command ``copilot-host run`` runs in its tests: a small program that reports what it
sees as one JSON line on stdout.

    python tests/cli/run_child.py MODE [ARG]

MODE ``look``: the environment it got, whether the gateway answers with the key, and where
the key can be found (every ``/proc/*/cmdline``, every file under ``$HOME``); then exits
with ARG (default 0). ``stdin``: echoes its input. ``wait``: says it is ready, then waits
for SIGTERM (or SIGQUIT), says it got it and dies of it. ``port``: the gateway's port, then exits.
``spend N``: N chat requests one after another; the status and error code of each.
``relogin MODEL READY GO``: a chat request for MODEL, then creates the file READY and waits
for the file GO (the test logs in to another account meanwhile), then two more; the status
and error message of each.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def _say(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


def _where_the_key_is(key: bytes) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if key in cmdline.read_bytes():
                found.append(str(cmdline))
        except OSError:
            continue  # a process that ended meanwhile
    for path in Path(os.environ["HOME"]).rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and key in path.read_bytes():
                found.append(str(path))
        except OSError:
            continue
    return found


def _gateway_answers(key: str) -> int:
    url = os.environ["OPENAI_BASE_URL"] + "/models"  # http://127.0.0.1:PORT/v1, run's own
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return int(answer.status)


def _chat(key: str, model: str = "gpt-4.1", *, field: str = "code") -> tuple[int, str | None]:
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(  # noqa: S310
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            answer.read()
            return int(answer.status), None
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())["error"][field]


def main() -> None:
    mode = sys.argv[1]
    if mode == "look":
        key = os.environ["COPILOT_HOST_API_KEY"]
        names = (
            "OPENAI_BASE_URL",
            "OPENAI_API_BASE",
            "OPENAI_API_KEY",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "COPILOT_HOST_BASE_URL",
            "COPILOT_HOST_API_KEY",
            "KEPT",
        )
        _say(
            {
                "env": {name: os.environ.get(name) for name in names},
                "status": _gateway_answers(key),
                "key_found_in": _where_the_key_is(key.encode()),
            }
        )
        sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    if mode == "stdin":
        _say({"stdin": sys.stdin.read()})
        return
    if mode == "wait":

        def on_term(signum: int, _frame: object) -> None:
            _say({"got": signal.Signals(signum).name})
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGQUIT, on_term)
        _say({"ready": os.getpid()})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.05)
        _say({"got": None})
        return
    if mode == "port":
        _say({"port": int(os.environ["OPENAI_BASE_URL"].rsplit(":", 1)[1].split("/")[0])})
        return
    if mode == "spend":
        key = os.environ["OPENAI_API_KEY"]
        _say({"answers": [_chat(key) for _ in range(int(sys.argv[2]))]})
        return
    if mode == "relogin":
        key = os.environ["OPENAI_API_KEY"]
        model, ready, go = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
        answers = [_chat(key, model, field="message")]
        ready.touch()
        deadline = time.monotonic() + 30
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        answers += [_chat(key, model, field="message") for _ in range(2)]
        _say({"answers": answers})
        return
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
