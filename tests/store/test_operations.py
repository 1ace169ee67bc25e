"""save() and delete() say what they did, so no caller reads the folder again to find out."""

from __future__ import annotations

from pathlib import Path

import pytest

from copilot_host.store import CredentialStore, Deleted, Saved
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token


def test_save_names_the_login_it_replaced(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    first = store.save("octocat", canary_token())
    second = store.save("hubot", canary_token())
    assert isinstance(second, Saved)
    assert second.replaced == first.header
    assert second.set_aside is None
    assert second.header == store.header()


def test_save_over_a_damaged_record_says_where_it_was_set_aside(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    store.record_path.write_bytes(b"not a record")
    saved = store.save("hubot", canary_token())
    assert saved.replaced is None
    assert saved.set_aside is not None
    assert saved.set_aside.read_bytes() == b"not a record"
    assert store.set_aside() == (saved.set_aside,)


def test_delete_names_the_login_it_removed(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    saved = store.save("octocat", canary_token())
    deleted = store.delete()
    assert isinstance(deleted, Deleted) and deleted
    assert deleted.record == saved.header
    assert (deleted.set_aside, deleted.still_aside) == (None, ())
    again = store.delete()
    assert not again
    assert again == Deleted(False)


def test_delete_of_a_damaged_record_says_where_it_went_and_what_stayed(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    store.save("octocat", canary_token())
    store.record_path.write_bytes(b"first damage")
    earlier = store.save("hubot", canary_token()).set_aside
    store.record_path.write_bytes(b"second damage")
    deleted = store.delete()
    assert deleted
    assert deleted.record is None
    assert deleted.set_aside is not None
    assert deleted.set_aside.read_bytes() == b"second damage"
    assert deleted.still_aside == (earlier,)


@pytest.mark.parametrize("damaged", [False, True])
def test_the_results_are_frozen(
    copilot_home: Path, memory_keyring: MemoryKeyring, damaged: bool
) -> None:
    store = CredentialStore()
    saved = store.save("octocat", canary_token())
    if damaged:
        store.record_path.write_bytes(b"x")
    deleted = store.delete()
    with pytest.raises(AttributeError):
        saved.set_aside = Path("/")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        deleted.removed = False  # type: ignore[misc]
