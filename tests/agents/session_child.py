"""A scripted emulator, a login on it, and ``copilot-host run`` of one agent, all in this
process's network namespace (the test starts it inside ``unshare -n``: loopback only), then
what reached the emulator written as JSON for the test to read:

    python tests/agents/session_child.py [--tty] OUT.json SCRIPT.json LOG -- COMMAND [ARG...]

SCRIPT.json is the tool script, a list of ``[name, arguments]``; every rule the emulated
service enforces stays on. OUT.json holds ``run``'s exit status, stdout and stderr, and for
each request the emulator saw its method, path, endpoint, status, body (as text), and the
rule it was refused by, if any. The login is a key file in ``$COPILOT_HOST_HOME``. With
``--tty``, ``run`` has this process's terminal (a full-screen agent in tmux): its output is
not captured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def main() -> None:
    tty = sys.argv[1] == "--tty"
    if tty:
        del sys.argv[1]
    out, script, log = (Path(arg) for arg in sys.argv[1:4])
    command = sys.argv[sys.argv.index("--") + 1 :]

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator, Replies, Scenario, ToolCall

    calls = tuple(ToolCall(name, arguments) for name, arguments in json.loads(script.read_text()))
    with GitHubEmulator(Scenario(replies=Replies(tool_script=calls))) as emulator:
        store = CredentialStore(Path(os.environ["COPILOT_HOST_HOME"]), key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as person:
            person.login(sleep=lambda _seconds: None)
        emulator.clear_requests()
        child = Path(__file__).resolve().parent / "run_child.py"
        # Copilot's WebSocket too: Codex's socket requests go up over the emulator's.
        ports = f"{emulator.port}:{emulator.socket_port}"
        done = subprocess.run(
            [sys.executable, str(child), ports, "--log", str(log), "--", *command],
            capture_output=not tty,
            text=True,
            stdin=None if tty else subprocess.DEVNULL,
            check=False,
        )
        requests = [
            {
                "method": r.method,
                "path": r.path,
                "endpoint": r.endpoint,
                "status": r.status,
                "body": r.body.decode("utf-8", "replace"),
                "model": r.model,
                "refusal": r.refusal,
                "refusal_detail": r.refusal_detail,
            }
            for r in emulator.requests
        ]
    out.write_text(
        json.dumps(
            {
                "status": done.returncode,
                "stdout": done.stdout or "",
                "stderr": done.stderr or "",
                "requests": requests,
            }
        )
    )


if __name__ == "__main__":
    main()
