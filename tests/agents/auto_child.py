"""An emulator of a plan that can use only Copilot Auto (Copilot Free), a login on it, and
``copilot-host run`` of one agent, all in this process's network namespace (the test starts
it inside ``unshare -n``: loopback only), then what reached the emulator written as JSON:

    python tests/agents/auto_child.py OUT.json LOG -- COMMAND [ARG...]

OUT.json holds ``run``'s exit status, stdout and stderr, and for each request the emulator
saw its endpoint, status, the model its body named, whether it carried
``Copilot-Session-Token``, and the rule it was refused by, if any. LOG is run's ``--log``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def main() -> None:
    out, log = Path(sys.argv[1]), Path(sys.argv[2])
    command = sys.argv[sys.argv.index("--") + 1 :]

    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing import GitHubEmulator, Replies, Scenario, Usage

    scenario = Scenario(replies=Replies(tool_calls=False), usage=Usage(usage_plan="free"))
    with GitHubEmulator(scenario) as emulator:
        store = CredentialStore(Path(os.environ["COPILOT_HOST_HOME"]), key_file=True)
        with GitHubCopilotHost(store=store, transport=emulator.transport()) as person:
            person.login(sleep=lambda _seconds: None)
        emulator.clear_requests()
        child = Path(__file__).resolve().parent / "run_child.py"
        done = subprocess.run(
            [sys.executable, str(child), str(emulator.port), "--log", str(log), "--", *command],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        requests = []
        for r in emulator.requests:
            try:
                named = json.loads(r.body).get("model") if r.body else None
            except (ValueError, AttributeError):
                named = None
            requests.append(
                {
                    "endpoint": r.endpoint,
                    "status": r.status,
                    "model": named,
                    "session": "copilot-session-token" in r.headers,
                    "refusal": r.refusal,
                }
            )
    out.write_text(
        json.dumps(
            {
                "status": done.returncode,
                "stdout": done.stdout,
                "stderr": done.stderr,
                "requests": requests,
            }
        )
    )


if __name__ == "__main__":
    main()
