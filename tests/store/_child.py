"""Child process of the crash and concurrency tests (run as a script).

    _child.py rewrite HOME KEYRING_DIR SEED START COUNT
        saves accounts acct-START .. acct-(START+COUNT-1), printing "begin N" before and
        "done N" after each save (key file for even N, keyring for odd N).
    _child.py mix HOME KEYRING_DIR SEED INDEX OPS
        OPS random logins, logouts and reads; checks every record it reads is whole.

Tokens are derived from SEED and the account, so any reader can tell whether a record's
token belongs to its header. Exit status 0 means every check held.
"""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import keyring

from copilot_host import NotLoggedInError, Secret
from copilot_host.store import CredentialStore
from tests.store._file_keyring import FileKeyring


def token_for(seed: str, account: str) -> Secret:
    return Secret("gho_" + hashlib.sha256(f"{seed}:{account}".encode()).hexdigest()[:36])


def rewrite(store: CredentialStore, seed: str, start: int, count: int) -> int:
    for number in range(start, start + count):
        print(f"begin {number}", flush=True)
        account = f"acct-{number}"
        store.save(account, token_for(seed, account), key_file=number % 2 == 0)
        print(f"done {number}", flush=True)
    return 0


def mix(store: CredentialStore, seed: str, index: int, ops: int) -> int:
    chooser = random.Random(f"{seed}:{index}")
    for step in range(ops):
        roll = chooser.random()
        if roll < 0.45:
            account = f"p{index}-{step}"
            who = store.save(
                account, token_for(seed, account), key_file=chooser.random() < 0.5
            ).header
            if who.account != account:
                print(f"save returned {who}", file=sys.stderr)
                return 1
        elif roll < 0.6:
            store.delete()
        else:
            store.availability()
            try:
                loaded, token = store.load()
            except NotLoggedInError:
                continue
            if token != token_for(seed, loaded.account):
                print(f"torn record: {loaded.account}", file=sys.stderr)
                return 1
    return 0


def main(argv: list[str]) -> int:
    command, home, keyring_dir, seed, first, second = argv
    keyring.set_keyring(FileKeyring(keyring_dir))
    store = CredentialStore(home)
    if command == "rewrite":
        return rewrite(store, seed, int(first), int(second))
    return mix(store, seed, int(first), int(second))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
