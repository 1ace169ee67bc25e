"""A child process that runs one full login through ``GitHubCopilotHost`` against an
emulator running in the parent (reached by its port), for concurrent-login tests.

    python _login_child.py PORT HOME KEYRING_FOLDER keyring|key-file

Prints ``ready`` once set up, waits for a line on stdin (so all children start together),
then prints ``done <login id>``; a typed error prints ``error <code>`` and exits 3.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    port, home, folder, mode = sys.argv[1:5]
    import keyring

    from copilot_host import CopilotHostError
    from copilot_host.github import GitHubCopilotHost
    from copilot_host.store import CredentialStore
    from copilot_host.testing._routes import ROUTED_HOSTS
    from copilot_host.testing._transport import LoopbackTransport
    from tests.store._file_keyring import FileKeyring

    keyring.set_keyring(FileKeyring(folder))
    transport = LoopbackTransport(int(port), ROUTED_HOSTS, lambda _url: None)
    # A generous lock wait: sixteen logins queue for one lock on a loaded 2-core machine.
    store = CredentialStore(home, lock_timeout=60, key_file=mode == "key-file")
    print("ready", flush=True)
    sys.stdin.readline()
    with GitHubCopilotHost(store=store, transport=transport) as host:
        try:
            identity = host.login(sleep=lambda _s: None)
        except CopilotHostError as exc:
            print("error", exc.code, flush=True)
            return 3
    print("done", identity.login_id, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
