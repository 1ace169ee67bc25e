"""The schema: ``PRAGMA user_version``, migrations, and files that are not a ledger."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from copilot_host import StoreCorruptError, StoreVersionError
from copilot_host.gateway._ledger import SCHEMA_VERSION, read_history
from copilot_host.gateway._ledger._schema import MIGRATIONS, migrate

from ._support import begun, end, ledger_at, opened, rows, start


def _version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_a_new_ledger_is_made_at_the_current_version_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
    assert _version(path) == SCHEMA_VERSION == len(MIGRATIONS)
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
    assert [row["status"] for row in rows(path)] == [200]


def _newer(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE requests (id INTEGER PRIMARY KEY, time REAL)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()


def test_a_ledger_written_by_a_newer_copilot_host_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.touch(mode=0o600)
    _newer(path)
    before = path.read_bytes()
    with pytest.raises(StoreVersionError) as raised:
        opened(path)
    assert raised.value.code == "ledger_version"
    assert f"schema {SCHEMA_VERSION + 1}" in raised.value.message
    assert "upgrade copilot-host" in raised.value.message
    with pytest.raises(StoreVersionError):
        read_history(path, since=0)
    assert path.read_bytes() == before
    assert _version(path) == SCHEMA_VERSION + 1


def test_an_older_ledger_is_migrated_keeping_its_rows(tmp_path: Path) -> None:
    """The steps run from the file's version on, in one transaction; rows stay."""
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))

    def v2(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE requests ADD COLUMN region TEXT")

    db = sqlite3.connect(path, isolation_level=None)
    try:
        assert migrate(db, path, steps=(*MIGRATIONS, v2)) == SCHEMA_VERSION + 1
    finally:
        db.close()
    assert _version(path) == SCHEMA_VERSION + 1
    assert [(row["status"], row["region"]) for row in rows(path)] == [(200, None)]


def test_a_migration_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with ledger_at(path):
        pass

    def half_done(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE extra (x)")
        raise OSError("power cut")

    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(OSError, match="power cut"):
            migrate(db, path, steps=(*MIGRATIONS, half_done))
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'extra'").fetchall() == []
    finally:
        db.close()
    assert _version(path) == SCHEMA_VERSION


def test_an_empty_version_zero_file_is_brought_to_the_schema(tmp_path: Path) -> None:
    """What a start killed before its first transaction leaves: an empty file."""
    path = tmp_path / "ledger.sqlite3"
    path.touch(mode=0o600)
    assert read_history(path, since=0).requests == 0  # read: nothing, changed nothing
    assert path.stat().st_size == 0
    with ledger_at(path) as ledger:
        ledger.end(end(begun(ledger, start())))
    assert _version(path) == SCHEMA_VERSION
    assert len(rows(path)) == 1


@pytest.mark.parametrize(
    "content", [b"not a database at all " * 100, b"SQLite format 3\x00" + b"\xff" * 200]
)
def test_a_file_that_is_not_a_database_is_a_typed_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(content)
    path.chmod(0o600)
    for attempt in (lambda: opened(path), lambda: read_history(path, since=0)):
        with pytest.raises(StoreCorruptError) as raised:
            attempt()
        assert raised.value.code == "ledger_corrupt"
        assert "move it aside" in raised.value.message
    assert path.read_bytes() == content


def test_another_programs_sqlite_file_is_not_taken_for_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.touch(mode=0o600)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE requests (url TEXT)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.commit()
    db.close()
    with pytest.raises(StoreCorruptError):
        opened(path)
    with pytest.raises(StoreCorruptError):
        read_history(path, since=0)
