"""Real processes: crashes in the middle of writes, and many processes at once."""

from __future__ import annotations

import fcntl
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import keyring
import pytest

from copilot_host import NotLoggedInError, StoreLockedError
from copilot_host.store import CredentialStore
from tests.store._child import token_for
from tests.store._file_keyring import FileKeyring

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("_child.py")
REWRITES = 200


def _spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_line(stream: IO[str]) -> str:
    line = stream.readline()
    assert line, "child exited early"
    return line.strip()


@pytest.fixture
def shared_keyring(tmp_path: Path) -> FileKeyring:
    folder = tmp_path / "keyring"
    folder.mkdir()
    backend = FileKeyring(folder)
    keyring.set_keyring(backend)  # the suite's autouse fixture restores the previous one
    return backend


def test_sigkill_during_rewrites_leaves_the_old_or_the_new_record(
    copilot_home: Path, shared_keyring: FileKeyring
) -> None:
    """200 rewrites by writers killed at random points; after each kill the record is
    either the last one finished or the one being written, and it decrypts."""
    seed = secrets.token_hex(8)
    chooser = random.Random(seed)
    store = CredentialStore(copilot_home)
    number = 0
    kills = 0
    current: str | None = None  # the account of the record on disk, as last verified
    while number < REWRITES:
        child = _spawn("rewrite", copilot_home, shared_keyring.folder, seed, number, REWRITES)
        assert child.stdout is not None
        # Kill at a random rewrite, at a random moment inside it (a save takes ~1-5 ms).
        target = number + chooser.randint(0, 30)
        lines: list[str] = []
        while not lines or lines[-1] != f"begin {target}":
            lines.append(_read_line(child.stdout))
        time.sleep(chooser.uniform(0, 0.004))
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate()
        assert child.returncode == -signal.SIGKILL
        lines += rest.splitlines()
        kills += 1

        begun = [int(line.split()[1]) for line in lines if line.startswith("begin ")]
        done = [int(line.split()[1]) for line in lines if line.startswith("done ")]
        old = f"acct-{done[-1]}" if done else current
        new = f"acct-{begun[-1]}"
        try:
            who, token = store.load()
        except NotLoggedInError:
            # Killed inside the very first save (1 run in 31): there was no old record.
            assert old is None
            number = begun[-1] + 1
            continue
        assert who.account in {old, new}
        assert token == token_for(seed, who.account)
        assert store.set_aside() == ()
        current = who.account
        number = begun[-1] + 1
    assert kills >= 6
    # Leftovers of killed writers (a temp file, an unused key) are swept by the next save.
    store.save("after", token_for(seed, "after"), key_file=True)
    names = sorted(os.listdir(copilot_home))
    assert names == sorted(["credential", "credential.lock", _key_file_of(store)])


def _key_file_of(store: CredentialStore) -> str:
    header = store.header()
    assert header is not None
    return Path(header.protection.backend).name


def test_sixteen_processes_log_in_out_and_read_at_once(
    copilot_home: Path, shared_keyring: FileKeyring
) -> None:
    seed = secrets.token_hex(8)
    children = [_spawn("mix", copilot_home, shared_keyring.folder, seed, i, 40) for i in range(16)]
    # Two more die by SIGKILL at a random moment, possibly while holding the lock.
    victims = [
        _spawn("mix", copilot_home, shared_keyring.folder, seed, 100 + i, 10_000) for i in range(2)
    ]
    time.sleep(random.uniform(0.3, 0.6))
    for victim in victims:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
    failures = []
    for child in children:
        _, err = child.communicate(timeout=60)
        if child.returncode != 0:
            failures.append(err[-2000:])
    assert failures == []

    # No stale lock: it is free at once, and nothing was set aside as damaged.
    fd = os.open(copilot_home / "credential.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    store = CredentialStore(copilot_home, lock_timeout=0)
    with store.lock():
        pass
    assert store.set_aside() == ()
    if store.availability() is None:  # the last step was a logout
        with pytest.raises(NotLoggedInError):
            store.load()
    else:
        who, token = store.load()
        assert token == token_for(seed, who.account)


def test_a_held_lock_times_out_naming_the_holder_and_dies_with_it(copilot_home: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
            "from copilot_host.store import CredentialStore\n"
            f"with CredentialStore({str(copilot_home)!r}).lock():\n"
            "    print('held', flush=True)\n"
            "    time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        store = CredentialStore(copilot_home, lock_timeout=0.2)
        with pytest.raises(StoreLockedError) as caught, store.lock():
            pass
        assert caught.value.retryable is True
        assert f"process {holder.pid}" in str(caught.value)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    # The kernel released the lock with the process; the file stays.
    with CredentialStore(copilot_home, lock_timeout=0).lock():
        pass
    assert (copilot_home / "credential.lock").exists()
