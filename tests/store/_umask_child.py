"""Child of the umask tests, run as an unprivileged user (see _unprivileged.py).

    _umask_child.py ROOT UMASK fresh
        under UMASK, uses a store at ROOT/deep/er/home (its parents missing): preflight,
        logins in both key modes, reads, logouts; reports each step and the mode of every
        folder and file below ROOT/deep.
    _umask_child.py ROOT UMASK old-lock
        plants a read-only (0400) lock file, as an earlier version left under a strict
        umask, then logs in and out under UMASK; reports each step and the lock's mode.

Prints one JSON document: {"steps": {name: "ok" | "<code>: <message>"}, "modes": {...}}.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors

from copilot_host import CopilotHostError, Secret
from copilot_host.store import CredentialStore

TOKEN = Secret("gho_" + "u" * 36)


class _Keyring(keyring.backend.KeyringBackend):
    priority = 10

    def __init__(self) -> None:
        # Named, not super(): see tests/_keyring_base.py (this child imports no test code).
        keyring.backend.KeyringBackend.__init__(self)
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.items.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("not found")


def _steps(store: CredentialStore, plan: list[tuple[str, Callable[[], object]]]) -> dict[str, str]:
    outcome = {}
    for name, step in plan:
        try:
            step()
            outcome[name] = "ok"
        except (CopilotHostError, OSError) as exc:
            outcome[name] = f"{getattr(exc, 'code', type(exc).__name__)}: {exc}"
    return outcome


def _modes(top: Path) -> dict[str, str]:
    found = {top.name: f"{stat.S_IMODE(top.lstat().st_mode):04o}"}
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            found[str(path.relative_to(top.parent))] = f"{stat.S_IMODE(path.lstat().st_mode):04o}"
    return found


def fresh(root: Path) -> dict[str, object]:
    store = CredentialStore(root / "deep" / "er" / "home")
    plan: list[tuple[str, Callable[[], object]]] = [
        ("preflight", store.preflight),
        ("save-keyring", lambda: store.save("octocat", TOKEN)),
        ("save-keyring-again", lambda: store.save("octocat", TOKEN)),
        ("load", store.load),
        ("logout", store.delete),
        ("save-key-file", lambda: store.save("octocat", TOKEN, key_file=True)),
        ("save-key-file-again", lambda: store.save("octocat", TOKEN, key_file=True)),
        ("load-key-file", store.load),
    ]
    return {"steps": _steps(store, plan), "modes": _modes(root / "deep")}


def old_lock(root: Path, mask: int) -> dict[str, object]:
    home = root / "home"
    home.mkdir(mode=0o700)
    lock = home / "credential.lock"
    lock.touch()
    lock.chmod(0o400)
    os.umask(mask)
    store = CredentialStore(home)
    plan: list[tuple[str, Callable[[], object]]] = [
        ("save", lambda: store.save("octocat", TOKEN, key_file=True)),
        ("logout", store.delete),
    ]
    return {"steps": _steps(store, plan), "modes": _modes(home)}


def main(argv: list[str]) -> int:
    root, mask, scenario = Path(argv[0]), int(argv[1], 8), argv[2]
    keyring.set_keyring(_Keyring())
    if scenario == "fresh":
        os.umask(mask)
        report = fresh(root)
    else:
        os.umask(0o077)
        report = old_lock(root, mask)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
