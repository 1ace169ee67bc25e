"""A store folder others can reach is refused by every call, availability() included,
with its exact path and the command that fixes it; never reported as "not logged in",
never chmod-ed by copilot-host."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from copilot_host_cli import main
from copilot_host_cli._context import CliSeam

from copilot_host import StoreInsecureError
from copilot_host._safety._text import shell_quote, show_path
from copilot_host.store import CredentialStore
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token

CALLS: dict[str, Callable[[CredentialStore], object]] = {
    "availability": lambda s: s.availability(),
    "header": lambda s: s.header(),
    "load": lambda s: s.load(),
    "set_aside": lambda s: s.set_aside(),
    "preflight": lambda s: s.preflight(),
    "save": lambda s: s.save("octocat", canary_token()),
    "delete": lambda s: s.delete(),
}


def _plain_mkdir(path: Path) -> Path:
    """What `mkdir` in a shell makes under the usual umask 022."""
    previous = os.umask(0o022)
    try:
        os.mkdir(path)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    return path


@pytest.mark.parametrize("name", ["state", "my  state"])
def test_a_folder_made_with_plain_mkdir_is_refused_by_every_call(
    tmp_path: Path, memory_keyring: MemoryKeyring, name: str
) -> None:
    home = _plain_mkdir(tmp_path / name)
    store = CredentialStore(home)
    for call in CALLS.values():
        with pytest.raises(StoreInsecureError) as caught:
            call(store)
        message = caught.value.message
        assert f"The credential store folder {show_path(home)} is accessible" in message
        assert message.endswith(f"run: chmod 700 {shell_quote(home)}")
    # Never chmod-ed, nothing written, no key stored.
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    assert os.listdir(home) == []
    assert memory_keyring.items == {}
    # The command the message gives is the whole fix.
    subprocess.run(["bash", "-c", f"chmod 700 {shell_quote(home)}"], check=True)
    assert store.availability() is None
    who = store.save("octocat", canary_token()).identity
    assert store.availability() == who


def test_a_symlinked_folder_without_a_record_is_refused_by_availability(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(StoreInsecureError, match="symbolic link"):
        CredentialStore(link).availability()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_foreign_folder_without_a_record_is_refused_by_availability(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.chown(home, 54321, 54321)
    with pytest.raises(StoreInsecureError, match="owned by uid 54321"):
        CredentialStore(home).availability()


def test_availability_of_an_unchanged_record_is_one_stat(
    copilot_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It runs before every inference request: the folder check must not cost more."""
    store = CredentialStore()
    who = store.save("octocat", canary_token()).identity
    assert store.availability() == who
    calls: list[str] = []
    for name in ("stat", "lstat", "fstat", "open", "listdir", "scandir"):
        real = getattr(os, name)

        def counting(
            *args: object, _real: object = real, _name: str = name, **kw: object
        ) -> object:
            calls.append(_name)
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(os, name, counting)
    for _ in range(10):
        assert store.availability() == who
    monkeypatch.undo()
    assert calls == ["lstat"] * 10


@pytest.mark.parametrize("command", [["models"], ["models", "--json"], ["status"]])
def test_the_cli_names_the_open_folder_instead_of_saying_not_logged_in(
    tmp_path: Path, command: list[str]
) -> None:
    home = _plain_mkdir(tmp_path / "home")
    result = CliRunner().invoke(
        main,
        command,
        obj=CliSeam(),
        env={"COPILOT_HOST_HOME": str(home)},
        prog_name="copilot-host",
        catch_exceptions=False,
    )
    assert result.exit_code == 1
    output = result.stdout + result.stderr
    assert "not logged in" not in output.lower()
    assert f"chmod 700 {shell_quote(home)}" in output
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
