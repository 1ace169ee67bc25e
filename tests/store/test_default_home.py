"""default_home(): the store folder used when none is given, read when called."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import copilot_host.store
from copilot_host.store import CredentialStore, default_home
from tests.store._support import canary_token


def test_it_is_public() -> None:
    assert "default_home" in copilot_host.store.__all__
    assert copilot_host.store.default_home is default_home


def test_copilot_host_home_wins_and_is_read_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COPILOT_HOST_HOME", str(tmp_path / "one"))
    assert default_home() == tmp_path / "one"
    monkeypatch.setenv("COPILOT_HOST_HOME", str(tmp_path / "two"))
    assert default_home() == tmp_path / "two"
    assert CredentialStore().home == default_home()
    assert not (tmp_path / "two").exists()  # nothing is created


def test_it_is_absolute_with_the_user_folder_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COPILOT_HOST_HOME", "~/state/copilot")
    assert default_home() == tmp_path / "state" / "copilot"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COPILOT_HOST_HOME", "relative/home")
    assert default_home() == tmp_path / "relative" / "home"


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG state folder is Linux's")
@pytest.mark.parametrize("blank", ["", "   "])
def test_without_copilot_host_home_it_is_the_platforms_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv("COPILOT_HOST_HOME", blank)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_home() == tmp_path / "state" / "copilot-host"
    monkeypatch.delenv("COPILOT_HOST_HOME")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_home() == tmp_path / ".local" / "state" / "copilot-host"


@pytest.mark.parametrize("name", ["trailing ", "tab\t", "newline\n"])
def test_copilot_host_home_is_taken_exactly_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A folder name may begin or end with a space: stripping it would name another
    folder, and the login would be saved where the person never looks."""
    monkeypatch.setenv("COPILOT_HOST_HOME", str(tmp_path / name))
    assert default_home() == tmp_path / name
    store = CredentialStore()
    store.save("octocat", canary_token(), key_file=True)
    assert (tmp_path / name / "credential").exists()
