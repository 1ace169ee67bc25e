"""Credential store costs.

    python bench/store.py [--runs N]

Median save and load latency (keyring mode with an in-process keyring, so the figure is the
store's own cost: encryption, the atomic write with its fsyncs, the lock; and key-file
mode), and the cost of ``availability()`` when nothing changed (one stat) against when the
record changed on disk (stat plus a checked header read), with their ratio. Runs in a
throwaway folder; never touches a real keyring.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import keyring
import keyring.backend

from copilot_host import Secret
from copilot_host.store import CredentialStore


class BenchKeyring(keyring.backend.KeyringBackend):
    priority = 10

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


def median_us(action: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    keyring.set_keyring(BenchKeyring())
    token = Secret("gho_" + secrets.token_hex(18))
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        store = CredentialStore(home)
        for key_file in (False, True):
            mode = "key file" if key_file else "keyring "
            store.save("octocat", token, key_file=key_file)  # warm up imports
            store.load()

            def save_once(k: bool = key_file) -> object:
                return store.save("octocat", token, key_file=k)

            save = median_us(save_once, runs)
            load = median_us(store.load, runs)
            print(f"{mode}  save {save:9.1f} us   load {load:8.1f} us   (median of {runs})")

        store.availability()
        unchanged = median_us(store.availability, runs * 20)
        other = CredentialStore(home)

        def changed() -> None:
            # Make the on-disk record differ from the cache: flip between two saved states.
            other.save("octocat", token)
            started = time.perf_counter()
            store.availability()
            changed_samples.append(time.perf_counter() - started)

        changed_samples: list[float] = []
        for _ in range(runs):
            changed()
        changed_us = statistics.median(changed_samples) * 1e6
        print(f"availability unchanged {unchanged:7.2f} us   (median of {runs * 20})")
        print(f"availability changed   {changed_us:7.2f} us   (median of {runs})")
        print(f"ratio changed / unchanged: {changed_us / unchanged:.1f}x")
        other.delete()


if __name__ == "__main__":
    main()
