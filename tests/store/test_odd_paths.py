"""A store folder's path may hold any bytes a file name can: what save() writes, load()
reads, and every message names the path exactly (escaped, never altered)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from copilot_host import Secret, StoreCorruptError, StoreError, StoreInsecureError
from copilot_host._safety._text import one_line, shell_quote, show_path
from copilot_host.store import CredentialStore, Protection, RecordHeader
from copilot_host.store._record import BASE_FORMAT, seal
from tests.conftest import MemoryKeyring
from tests.store._support import canary_token

# Folder names the header parser used to refuse once they were part of a key file's path.
ODD_NAMES = {
    "two-spaces": "a  b",
    "tab": "a\tb",
    "not-utf8": os.fsdecode(b"a\xffb"),
    "zero-width": "a\u200bb",
}
SHOWN = {
    "two-spaces": "a  b",
    "tab": "a\\tb",
    "not-utf8": "a\\xffb",
    "zero-width": "a\\u200bb",
}


@pytest.fixture(params=list(ODD_NAMES))
def odd(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """(the case's id, a store folder below a real folder with that odd name)."""
    parent = tmp_path / ODD_NAMES[request.param]
    parent.mkdir()
    return request.param, parent / "home"


@pytest.mark.parametrize("key_file", [False, True], ids=["keyring", "key-file"])
def test_what_save_writes_load_reads_whatever_the_folder_is_called(
    odd: tuple[str, Path], key_file: bool, memory_keyring: MemoryKeyring
) -> None:
    _case, home = odd
    store = CredentialStore(home)
    token = canary_token()
    store.save("octocat", token, key_file=key_file)
    header = store.header()
    assert header is not None
    who = header.identity
    assert CredentialStore(home).load() == (who, token)
    assert store.set_aside() == ()
    assert store.availability() == who
    if key_file:
        key_path = home / f"credential-{who.login_id}.key"
        assert header.protection == Protection("key-file", os.fspath(key_path))
        assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
        # The folder's path is not in the record at all.
        assert os.fsencode(home) not in store.record_path.read_bytes()
    assert store.delete().removed is True
    assert sorted(os.listdir(home)) == ["credential.lock"]
    assert memory_keyring.items == {}


def test_an_insecure_folder_is_named_exactly_with_a_command_that_fixes_it(
    odd: tuple[str, Path],
) -> None:
    case, home = odd
    CredentialStore(home).save("octocat", canary_token(), key_file=True)
    home.chmod(0o755)
    with pytest.raises(StoreInsecureError) as caught:
        CredentialStore(home).load()
    message = caught.value.message
    assert f"folder {home.parent.parent}{os.sep}{SHOWN[case]}{os.sep}home is accessible" in (
        message
    )
    assert "\t" not in message and "\u200b" not in message
    # The remedy is a shell command that works as printed.
    command = message.split("run: ", 1)[1]
    assert command == f"chmod 700 {shell_quote(home)}"
    subprocess.run(["bash", "-c", command], check=True, env={"LANG": "C.UTF-8"})
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    CredentialStore(home).load()


def test_a_record_set_aside_is_named_at_its_real_path(odd: tuple[str, Path]) -> None:
    _case, home = odd
    store = CredentialStore(home)
    store.save("octocat", canary_token(), key_file=True)
    data = bytearray(store.record_path.read_bytes())
    data[-1] ^= 1
    store.record_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError) as caught:
        store.load()
    (aside,) = store.set_aside()
    assert f"moved to {show_path(aside)} and kept" in caught.value.message
    assert aside.read_bytes() == bytes(data)


@pytest.mark.parametrize(
    ("name", "shown"), [("bad\ud800", "bad\\ud800"), ("bad\x00nul", "bad\\x00nul")]
)
@pytest.mark.parametrize(
    "action",
    ["preflight", "preflight-key-file", "save", "load", "header", "availability", "delete"],
)
def test_a_name_no_file_system_call_can_take_is_refused_by_every_call(
    tmp_path: Path, name: str, shown: str, action: str
) -> None:
    store = CredentialStore(tmp_path / name)
    calls = {
        "preflight": store.preflight,
        "preflight-key-file": lambda: store.preflight(key_file=True),
        "save": lambda: store.save("octocat", canary_token(), key_file=True),
        "load": store.load,
        "header": store.header,
        "availability": store.availability,
        "delete": store.delete,
    }
    with pytest.raises(StoreError) as caught:
        calls[action]()
    assert caught.value.code == "invalid_store_path"
    assert f"{tmp_path}{os.sep}{shown} cannot be used" in caught.value.message
    assert os.listdir(tmp_path) == []


def _pre_0_2_record(store: CredentialStore, folder: Path) -> tuple[RecordHeader, Path, Secret]:
    """A key-file login rewritten as 0.1.0 recorded it: the key file's absolute path, in
    ``folder``. Returns the legacy header, the key file's real path and the token."""
    token = canary_token()
    header = store.save("octocat", token, key_file=True).header
    key_path = store.home / f"credential-{header.login_id}.key"
    legacy = type(header)(
        BASE_FORMAT,
        header.login_id,
        header.account,
        header.created_at,
        Protection("key-file", os.fspath(folder / key_path.name)),
    )
    store.record_path.write_bytes(seal(legacy, key_path.read_bytes(), token))
    return legacy, key_path, token


def test_records_written_before_the_name_only_header_still_read(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    """Older records hold the key file's absolute path: still read, shown where the key
    really is (the same path here; in a moved folder, the new one)."""
    store = CredentialStore()
    legacy, _key_path, token = _pre_0_2_record(store, copilot_home)
    assert store.header() == legacy
    assert store.load() == (legacy.identity, token)


def test_an_older_record_of_a_moved_folder_shows_where_its_key_really_is(
    copilot_home: Path, memory_keyring: MemoryKeyring
) -> None:
    store = CredentialStore()
    legacy, key_path, token = _pre_0_2_record(store, Path("/old/home"))
    shown = store.header()
    assert shown is not None and shown.protection.backend == os.fspath(key_path)
    assert store.load() == (legacy.identity, token)


# -- the text helpers the messages use ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/plain/path", "/plain/path"),
        ("/a  b/ c ", "/a  b/ c "),
        ("/a\tb\nc\x1b", "/a\\tb\\nc\\x1b"),
        (b"/a\xff\x80b", "/a\\xff\\x80b"),
        ("/a\u0085b", "/a\\u0085b"),  # a character, told apart from the byte 0x85
        ("/a\u200b\u202e\ufeffb", "/a\\u200b\\u202e\\ufeffb"),
        ("/no\u00a0break", "/no\\u00a0break"),
        ("/back\\slash", "/back\\\\slash"),
        ("/caf\u00e9/\u65e5\u672c", "/caf\u00e9/\u65e5\u672c"),
    ],
)
def test_show_path_escapes_what_cannot_be_seen_and_keeps_the_rest(
    path: str | bytes, shown: str
) -> None:
    assert show_path(path) == shown
    # ...and an error message keeps it exactly.
    assert StoreError(f"folder {show_path(path)} is odd").message == f"folder {shown} is odd"


@pytest.mark.parametrize(
    "path",
    [
        "/plain/path",
        "/a  b",
        "/it's here",
        "/a\tb",
        "/it's\there",
        b"/a\xffb",
        "/z\u200bw",
        "/x\\y",
        "/$HOME",
    ],
)
def test_shell_quote_gives_back_the_exact_bytes(path: str | bytes) -> None:
    printed = subprocess.run(
        ["bash", "-c", f"printf %s {shell_quote(path)}"],
        capture_output=True,
        check=True,
        env={"LANG": "C.UTF-8"},
    ).stdout
    assert printed == os.fsencode(path)


def test_one_line_still_folds_line_breaks_and_tabs() -> None:
    assert one_line("first\n   second\t\tthird  ") == "first second third"
    assert one_line("keeps  two   spaces") == "keeps  two   spaces"
