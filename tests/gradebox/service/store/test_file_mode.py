"""The service's database is its owner's only (0600), and so are SQLite's journal files.

It holds every task's hidden cases and expected values, the tokens' digests and
every grade. Under the usual umask 022 SQLite would create the file, and with it
the ``-wal`` and ``-shm`` files it gives the same mode, readable by every local
user. A database an older version left ``0644``, with the journal of a run that
was killed, is narrowed when the service opens it, and nothing in it is lost.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from gradebox.service import Store
from gradebox.service.engine.auth import create_token

SUFFIXES = ("", "-wal", "-shm")


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _modes(db: Path) -> dict[str, int]:
    return {s: stat.S_IMODE(Path(f"{db}{s}").stat().st_mode) for s in SUFFIXES}


def test_a_new_database_and_its_journal_files_are_0600(tmp_path, umask_022):
    db = tmp_path / "gradebox.sqlite"
    store = Store(db)
    try:
        create_token(store, "grader")  # a write: the WAL and its index exist while open
        assert _modes(db) == dict.fromkeys(SUFFIXES, 0o600)
    finally:
        store.close()


def test_an_old_world_readable_database_is_narrowed_and_keeps_its_rows(tmp_path, umask_022):
    old, crashed = tmp_path / "old", tmp_path / "crashed"
    old.mkdir()
    crashed.mkdir()
    Store(old / "db.sqlite").close()
    (old / "db.sqlite").chmod(0o644)  # as an older version left it
    conn = sqlite3.connect(old / "db.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # the row stays in the WAL
    conn.execute("INSERT INTO tokens (id, hash, role, created) VALUES ('t1', 'h', 'admin', 1)")
    for suffix in SUFFIXES:  # the files as a kill -9 leaves them, world-readable
        shutil.copy(f"{old / 'db.sqlite'}{suffix}", f"{crashed / 'db.sqlite'}{suffix}")
    conn.close()
    db = crashed / "db.sqlite"
    assert set(_modes(db).values()) == {0o644}
    store = Store(db)
    try:
        assert _modes(db) == dict.fromkeys(SUFFIXES, 0o600)
        assert [t.id for t in store.tokens()] == ["t1"]
    finally:
        store.close()
