"""Running a child Python process as an unprivileged user, for tests that need file modes
to be enforced (root reads and writes files whatever their mode, so a root-run test could
never see a 0400 file it cannot write).

Run as root, the suite creates a system user once (``copilot-host-test``: no home, no
login shell) and runs children as that user; run as anyone else, children run as that
same user. The child imports copilot_host from this checkout and its dependencies from the
running virtual environment, so both must be readable by that user.

Which interpreter the child runs (:func:`child_interpreter`): the running one when that
user can run it; otherwise (a pyenv Python under a 0700 ``/root``, the usual layout when
pyenv is installed for root) a system Python of the same minor version, whose compiled
extensions' ABI tag matches the venv's, with the venv's site-packages on its path. When
neither can serve, the mode tests skip with that one-line reason, except under ``CI``,
where they fail: CI must prove the file modes.
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
class Interpreter:
    """A Python the unprivileged user can run: its path and the folders put first on its
    import path (the checkout, and for a borrowed interpreter the venv's site-packages)."""

    executable: str
    path: tuple[str, ...]

    @property
    def borrowed(self) -> bool:
        return self.executable != sys.executable


@dataclass(frozen=True)
class Unprivileged:
    """Runs Python children as ``user`` in ``root``, a fresh 0700 folder that user owns."""

    user: str
    uid: int
    gid: int
    root: Path
    interpreter: Interpreter = Interpreter(sys.executable, (str(REPO),))

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        as_user: dict[str, Any] = {}
        if os.geteuid() != self.uid:
            as_user = {"user": self.uid, "group": self.gid, "extra_groups": []}
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join(self.interpreter.path),
            "PYTHONDONTWRITEBYTECODE": "1",
            # A borrowed system Python must not add its own user site-packages.
            "PYTHONNOUSERSITE": "1",
        }
        try:
            return subprocess.run(
                [self.interpreter.executable, *args],
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
                f"{self.user} cannot run {self.interpreter.executable} ({exc.strerror}), "
                "which it could run when the session began"
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


def _venv_site_packages() -> tuple[str, ...]:
    """The running virtual environment's site-packages (none outside a venv)."""
    import site

    if sys.prefix == sys.base_prefix:
        return ()
    return tuple(path for path in site.getsitepackages() if path.startswith(sys.prefix))


def _system_pythons() -> list[str]:
    """System interpreters of the running minor version (an extension module built for
    3.11 loads only in a 3.11), most specific name first, this interpreter excluded."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    own = os.path.realpath(sys.executable)
    found: list[str] = []
    for folder in ("/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"):
        for name in (f"python{minor}", "python3"):
            candidate = os.path.join(folder, name)
            real = os.path.realpath(candidate)
            if os.access(candidate, os.X_OK) and real != own and real not in found:
                found.append(real)
    return found


def _candidates() -> list[Interpreter]:
    own = Interpreter(sys.executable, (str(REPO),))
    site_packages = _venv_site_packages()
    if not site_packages:
        return [own]
    return [own] + [Interpreter(path, (str(REPO), *site_packages)) for path in _system_pythons()]


def _unavailable(reason: str) -> None:
    """Skip with ``reason`` on a developer's machine; fail under CI, which must run these."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the file-mode tests as an unprivileged user: {reason}")
    pytest.skip(reason)


def unprivileged_user() -> tuple[pwd.struct_passwd, Interpreter]:
    """Who runs the children and with which interpreter, proven able to import copilot_host
    and bound by modes."""
    entry = _test_user() if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    tried: list[str] = []
    for interpreter in _candidates():
        root = scratch_for(entry)
        try:
            proof = Unprivileged(entry.pw_name, entry.pw_uid, entry.pw_gid, root, interpreter)
            try:
                done = proof.run("-c", _PROOF, str(root))
            except pytest.fail.Exception:
                tried.append(f"{interpreter.executable}: not runnable by {entry.pw_name}")
                continue
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                tried.append(f"{interpreter.executable}: {last}")
                continue
            found = json.loads(done.stdout)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if found["euid"] == 0 or not found["enforced"]:
            pytest.fail(
                f"the child runs as uid {found['euid']} and file modes are not enforced for "
                "it, so a mode test would prove nothing"
            )
        return entry, interpreter
    _unavailable(
        f"no Python that {entry.pw_name} can run imports copilot_host and this venv "
        f"({'; '.join(tried)}); make the venv from a system Python "
        f"{sys.version_info.major}.{sys.version_info.minor} readable by other users, "
        "or run .ci/run"
    )
    raise AssertionError("unreachable")
