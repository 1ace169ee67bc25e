"""An emulator, a login on it, and ``copilot-host run`` of one agent, all in this process's
network namespace (the test starts it inside ``unshare -n``), then what reached the
emulator written as JSON for the test to read:

    python tests/agents/recorded_child.py OUT.json -- COMMAND [ARG...]

The login is stored in ``$COPILOT_HOST_HOME`` (a key file: no keyring), so ``run`` serves
it as it serves a person's; the emulator's scenario is ``run --emulator``'s (answers are
text only). OUT.json holds the exit status of ``run`` and, for each model request, its
endpoint, status and the body's model and output caps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CAPS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
MODEL_ENDPOINTS = ("chat", "responses", "messages")


def main() -> None:
    out = Path(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator, Replies, Scenario

    with GitHubEmulator(Scenario(replies=Replies(tool_calls=False))) as emulator:
        store = CredentialStore(Path(os.environ["COPILOT_HOST_HOME"]), key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as person:
            person.login(sleep=lambda _seconds: None)
        child = Path(__file__).resolve().parent / "run_child.py"
        done = subprocess.run(
            [sys.executable, str(child), str(emulator.port), "--", *command], check=False
        )
        records = []
        for record in emulator.requests:
            if record.endpoint not in MODEL_ENDPOINTS:
                continue
            body = json.loads(record.body)
            records.append(
                {
                    "endpoint": record.endpoint,
                    "status": record.status,
                    "model": body.get("model"),
                    **{cap: body[cap] for cap in CAPS if cap in body},
                }
            )
    out.write_text(json.dumps({"returncode": done.returncode, "requests": records}))


if __name__ == "__main__":
    main()
