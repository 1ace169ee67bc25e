"""Running a child Python process as an unprivileged user, for tests that need file modes
to be enforced (root reads and writes files whatever their mode, so a root-run test could
never see a 0400 file it cannot write).

Run as root, the suite creates a system user once (``copilot-host-test``: no home, no
login shell) and runs children as that user; run as anyone else, children run as that
same user. Either way the child imports copilot_host from this checkout through the
running interpreter, so the checkout and the virtual environment must be readable by that
user (``.ci/run`` makes its venv so). Anything that prevents a real unprivileged child
fails the test; it never skips.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TEST_USER = "copilot-host-test"
REPO = Path(__file__).resolve().parents[2]
# The check every child runs first: copilot_host imports, and modes really are enforced
# (a file of mode 0000 cannot be opened, even by its owner).
_PROOF = """
import json, os, sys
import copilot_host.store, cryptography, keyring
probe = os.path.join(sys.argv[1], "mode-0000")
with open(probe, "w"):
    pass
os.chmod(probe, 0)
try:
    open(probe).close()
    enforced = False
except PermissionError:
    enforced = True
os.unlink(probe)
print(json.dumps({"euid": os.geteuid(), "enforced": enforced}))
"""


@dataclass(frozen=True)
class Unprivileged:
    """Runs Python children as ``user`` in ``root``, a fresh 0700 folder that user owns."""

    user: str
    uid: int
    gid: int
    root: Path

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        as_user: dict[str, Any] = {}
        if os.geteuid() != self.uid:
            as_user = {"user": self.uid, "group": self.gid, "extra_groups": []}
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        try:
            return subprocess.run(
                [sys.executable, *args],
                env=env,
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                **as_user,
            )
        except PermissionError as exc:
            pytest.fail(
                f"{self.user} cannot run {sys.executable} ({exc.strerror}): the interpreter, "
                "its base installation and the virtual environment must be readable by that "
                "user (a pyenv Python under /root is not; make the venv from a system Python)"
            )

    def run_json(self, *args: str) -> Any:
        """Run a child that prints one JSON document; any other outcome fails the test."""
        done = self.run(*args)
        if done.returncode != 0:
            pytest.fail(
                f"the child run as {self.user} (uid {self.uid}) failed with exit status "
                f"{done.returncode}:\n{done.stderr[-3000:]}"
            )
        return json.loads(done.stdout)


def _test_user() -> pwd.struct_passwd:
    """The unprivileged user, created once, idempotently and race-free: parallel workers
    (pytest-xdist) may all find it missing at once, and two concurrent ``useradd`` runs
    make one of them fail on the passwd lock, so creation is serialized by an exclusive
    lock on this very file (root-owned, in the checkout, the same for every worker)."""
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd")
    if useradd is None:
        pytest.fail(
            "running as root, these tests need an unprivileged user and useradd is missing "
            f"(Debian package passwd); or create the user {TEST_USER!r} beforehand"
        )
    with open(__file__, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            return pwd.getpwnam(TEST_USER)  # another worker made it while this one waited
        except KeyError:
            pass
        made = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            return pwd.getpwnam(TEST_USER)
        except KeyError:
            pytest.fail(f"could not create the user {TEST_USER!r}: {made.stderr.strip()}")


def scratch_for(entry: pwd.struct_passwd) -> Path:
    """A fresh 0700 folder owned by ``entry``'s user, in the shared temp folder (a root
    test's own tmp_path sits below a 0700 folder that user could not enter)."""
    root = Path(tempfile.mkdtemp(prefix="copilot-host-unprivileged-"))
    if os.geteuid() != entry.pw_uid:
        os.chown(root, entry.pw_uid, entry.pw_gid)
    root.chmod(0o700)
    return root


def unprivileged_user() -> pwd.struct_passwd:
    """Who runs the children, proven able to import copilot_host and bound by modes."""
    entry = _test_user() if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    root = scratch_for(entry)
    try:
        proof = Unprivileged(entry.pw_name, entry.pw_uid, entry.pw_gid, root)
        done = proof.run("-c", _PROOF, str(root))
        if done.returncode != 0:
            pytest.fail(
                f"a child run as {entry.pw_name} cannot import copilot_host from {REPO} "
                f"with {sys.executable}; the checkout and the virtual environment must be "
                f"readable by that user (chmod -R a+rX on the venv and the folders above "
                f"it):\n{done.stderr[-2000:]}"
            )
        found = json.loads(done.stdout)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if found["euid"] == 0 or not found["enforced"]:
        pytest.fail(
            f"the child runs as uid {found['euid']} and file modes are not enforced for "
            "it, so a mode test would prove nothing"
        )
    return entry
