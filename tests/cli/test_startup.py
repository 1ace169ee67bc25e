"""Start-up cost: --help, --version and status import none of the heavy libraries.

Checked in fresh interpreters through ``sys.modules`` (timings live in bench/cli.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from copilot_host import Secret
from copilot_host.store import CredentialStore

from .conftest import LeakGuard, canary_token, child_env

HEAVY = ("httpx2", "keyring", "cryptography")

_PROBE = """
import sys
from copilot_host_cli import main
try:
    main(sys.argv[1:], prog_name="copilot-host")
except SystemExit as exc:
    code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[0].split(",")))
print("EXIT=%s HEAVY=%s" % (code, ",".join(heavy)), file=sys.stderr)
"""


def _probe(*args: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.replace("sys.argv[0]", repr(",".join(HEAVY))), *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=False,
    )
    last = done.stderr.strip().splitlines()[-1]
    return last, done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        *([c, "--help"] for c in ("login", "logout", "status", "models", "demo")),
    ],
)
def test_help_and_version_import_nothing_heavy(args: list[str]) -> None:
    last, _ = _probe(*args)
    assert last == "EXIT=0 HEAVY=", last


def test_status_logged_out_imports_nothing_heavy() -> None:
    last, out = _probe("status")
    assert last == "EXIT=1 HEAVY=", last
    assert out == "Not logged in.\n"


@pytest.mark.parametrize("key_file", [True, False])
def test_status_logged_in_imports_nothing_heavy(leak_guard: LeakGuard, key_file: bool) -> None:
    token = leak_guard.canary(canary_token())
    CredentialStore().save("octocat", Secret(token), key_file=key_file)
    last, out = _probe("status", "--json")
    assert last == "EXIT=0 HEAVY=", last
    assert '"logged_in":true' in out


def test_version_does_not_use_importlib_metadata() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom copilot_host_cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print('importlib.metadata' in sys.modules, file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    assert done.stderr.strip().splitlines()[-1] == "False"
