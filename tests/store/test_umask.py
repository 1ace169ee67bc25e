"""Every file the store creates is 0600 and every folder 0700, whatever the umask.

Run in a child process as an unprivileged user (see _unprivileged.py): root ignores file
modes, so a read-only lock file would never stop a root process, and a test run as root
would pass on exactly the code that locks a real user out of their own logout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.store._unprivileged import Unprivileged

pytestmark = pytest.mark.slow

CHILD = str(Path(__file__).with_name("_umask_child.py"))
FRESH_STEPS = [
    "preflight",
    "save-keyring",
    "save-keyring-again",
    "load",
    "logout",
    "save-key-file",
    "save-key-file-again",
    "load-key-file",
]


@pytest.mark.parametrize("mask", ["0000", "0022", "0077", "0277", "0377", "0777"])
def test_files_are_0600_and_folders_0700_whatever_the_umask(
    unprivileged: Unprivileged, mask: str
) -> None:
    report = unprivileged.run_json(CHILD, str(unprivileged.root), mask, "fresh")
    assert report["steps"] == dict.fromkeys(FRESH_STEPS, "ok")
    modes = report["modes"]
    (key_file,) = [name for name in modes if name.endswith(".key")]
    assert modes == {
        # The missing parents too: under umask 0377 a parent made 0400 could not be
        # entered to make the store folder in it.
        "deep": "0700",
        "deep/er": "0700",
        "deep/er/home": "0700",
        "deep/er/home/credential": "0600",
        "deep/er/home/credential.lock": "0600",
        key_file: "0600",
    }


@pytest.mark.parametrize("mask", ["0077", "0277"])
def test_a_read_only_lock_file_left_by_an_earlier_version_is_repaired(
    unprivileged: Unprivileged, mask: str
) -> None:
    report = unprivileged.run_json(CHILD, str(unprivileged.root), mask, "old-lock")
    assert report["steps"] == {"save": "ok", "logout": "ok"}
    assert report["modes"] == {"home": "0700", "home/credential.lock": "0600"}


def test_children_really_run_unprivileged(unprivileged: Unprivileged) -> None:
    done = unprivileged.run("-c", "import os; print(os.geteuid())")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == unprivileged.uid != 0


def test_the_child_runs_this_minor_version_with_this_venvs_packages(
    unprivileged: Unprivileged,
) -> None:
    # A borrowed system Python (the running one is out of that user's reach) must load the
    # same compiled extensions the suite runs with, not its own distribution's copies.
    done = unprivileged.run(
        "-c",
        "import json, sys, cryptography; "
        "print(json.dumps([list(sys.version_info[:2]), cryptography.__file__]))",
    )
    assert done.returncode == 0, done.stderr
    version, cryptography_file = json.loads(done.stdout)
    assert tuple(version) == sys.version_info[:2]
    import cryptography

    assert cryptography_file == cryptography.__file__
