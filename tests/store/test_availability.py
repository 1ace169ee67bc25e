"""availability(): one stat() while nothing changed; changes by others show at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from copilot_host import StoreInsecureError
from copilot_host.store import CredentialStore
from tests.store._support import FixedClock, canary_token


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    opened: list[object] = []
    real_open = os.open

    def counting_open(path: object, *args: object, **kwargs: object) -> int:
        opened.append(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    return opened


def test_unchanged_record_costs_no_open(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    assert store.availability() == who  # first call reads the header
    opened = _count_opens(monkeypatch)
    for _ in range(100):
        assert store.availability() == who
    assert opened == []


def test_logout_and_relogin_elsewhere_show_on_the_next_call(copilot_home: Path) -> None:
    mine = CredentialStore()
    other = CredentialStore()  # another process, in effect: its own cache and lock handle
    first = mine.save("octocat", canary_token()).identity
    assert mine.availability() == first
    other.delete()
    assert mine.availability() is None
    second = other.save("hubot", canary_token()).identity
    assert mine.availability() == second
    third = other.save("hubot", canary_token()).identity  # same account, new login id
    assert third.login_id != second.login_id
    assert mine.availability() == third


def test_in_place_rewrite_with_same_size_is_noticed(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CredentialStore(clock=FixedClock())
    store.save("octocat", canary_token())
    replacement_store = CredentialStore(copilot_home / "elsewhere", clock=FixedClock())
    replacement = replacement_store.save("hubot-x", canary_token()).identity  # same label length
    data = replacement_store.record_path.read_bytes()
    assert store.availability() is not None
    assert len(data) == store.record_path.stat().st_size
    # Rewrite in place (same inode, same size): mtime/ctime still move.
    with open(store.record_path, "r+b") as handle:
        handle.write(data)
    assert store.availability() == replacement


def test_chmod_is_noticed(copilot_home: Path) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    assert store.availability() is not None
    store.record_path.chmod(0o644)
    with pytest.raises(StoreInsecureError):
        store.availability()
