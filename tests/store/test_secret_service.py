"""The store against a real Secret Service (private gnome-keyring on a private bus)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from copilot_host import NotLoggedInError
from copilot_host.store import CredentialStore, Protection
from tests.store._support import canary_token, files_under

pytestmark = pytest.mark.keyring


def test_round_trip_and_delete(copilot_home: Path, secret_service: Any) -> None:
    store = CredentialStore()
    token = canary_token()
    who = store.save("octocat", token).identity
    header = store.header()
    assert header is not None
    assert header.protection == Protection("keyring", "Secret Service")
    # The entry really is in the Secret Service, under the login id.
    stored = secret_service.get_password("copilot-host", who.login_id)
    assert stored is not None
    key = base64.b64decode(stored)
    assert len(key) == 32
    # ...and neither the key nor the token is anywhere in the store folder.
    for path, data in files_under(copilot_home):
        assert key not in data, path
        assert stored.encode() not in data, path
        assert token.reveal().encode() not in data, path
    assert CredentialStore(copilot_home).load() == (who, token)

    assert store.delete().removed is True
    assert secret_service.get_password("copilot-host", who.login_id) is None
    assert os.listdir(copilot_home) == ["credential.lock"]
    with pytest.raises(NotLoggedInError):
        store.load()


def test_a_new_login_replaces_the_old_key(secret_service: Any) -> None:
    store = CredentialStore()
    first = store.save("octocat", canary_token()).identity
    second = store.save("hubot", canary_token()).identity
    assert secret_service.get_password("copilot-host", first.login_id) is None
    assert secret_service.get_password("copilot-host", second.login_id) is not None
    assert store.load()[0] == second
    assert store.delete().removed is True
