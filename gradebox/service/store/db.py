"""The SQLite connections under the store: one writer, one reader, WAL, migrations."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from gradebox.service.store import schema as storesql

__all__ = ["Database", "Params", "SqlValue", "dump"]

SqlValue = str | int | float | bytes | None
"""A value bound to a statement's parameter."""
Params = tuple[SqlValue, ...]
"""A statement's parameters."""


_FILE_MODE = 0o600


def _owner_only(path: Path) -> None:
    """Create ``path`` (and narrow it and its journal files when they exist) to ``0600``.

    The database holds tasks' hidden cases and expected values, token digests and
    every grade: under the usual umask SQLite would create it ``0644``. SQLite gives
    the ``-wal`` and ``-shm`` files it creates the database file's mode, so the file
    is made first; journal files left by an older version are narrowed too.
    """
    _narrow(path, os.O_CREAT)
    for suffix in ("-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            _narrow(Path(f"{path}{suffix}"), 0)


def _narrow(path: Path, create: int) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | create, _FILE_MODE)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, _FILE_MODE)
    finally:
        os.close(fd)


class Database:
    """Connections to one SQLite file (see :mod:`.sqlite`).

    A reader behind its own lock, and two writers behind one lock (so never two
    writes at once): one commits with ``synchronous=FULL``, the other with
    ``NORMAL`` for :meth:`_write_fast`.
    """

    def __init__(self, path: Path) -> None:
        """Open (creating when missing) the database at ``path`` in WAL mode."""
        path.parent.mkdir(parents=True, exist_ok=True)
        _owner_only(path)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed result survives a power cut too, not only a kill -9.
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.executescript(storesql.SCHEMA)
            self._migrate()
        # synchronous is a connection's setting: a writer of its own for fast writes, set
        # once, instead of switching the main writer's setting twice per write (two more
        # statements for every synchronous grade's row).
        self._fast = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._fast.execute("PRAGMA synchronous=NORMAL")
        self._fast.execute("PRAGMA busy_timeout=10000")
        self._reader = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._reader.execute("PRAGMA busy_timeout=10000")
        self._read_lock = threading.Lock()

    def _migrate(self) -> None:
        """Bring an older database to this schema, in one transaction; every row stays.

        Adds the columns it lacks (``storesql.MIGRATIONS``), with their defaults, and
        renames the task columns of databases from before task ids (``storesql.RENAMES``).
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for table, column, sql in storesql.MIGRATIONS:
                if column not in self._columns(table):
                    self._db.execute(sql)
            for table, old, new in storesql.RENAMES:
                columns = self._columns(table)
                if old in columns and new not in columns:
                    self._db.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")
            self._db.execute(storesql.BACKFILL_REVISIONS)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        """Close the connection."""
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._fast.close()
            self._db.close()

    def fetch_one(self, sql: str, args: Params = ()) -> tuple[Any, ...] | None:
        """One row of a read-only query: for tools and tests (the service calls typed methods)."""
        return self._one(sql, args)

    def fetch_all(self, sql: str, args: Params = ()) -> list[tuple[Any, ...]]:
        """Every row of a read-only query: for tools and tests."""
        return self._all(sql, args)

    def _write_fast(self, sql: str, args: Params = ()) -> int:
        """Run one statement, committed without waiting for the disk (``synchronous=NORMAL``).

        For rows a client already holds (synchronous grades) and feedback: they
        survive a crash of the process; a power cut may lose the last of them.
        """
        with self._lock:
            return self._fast.execute(sql, args).rowcount

    def _one(self, sql: str, args: Params = ()) -> tuple[Any, ...] | None:
        with self._read_lock:
            row: tuple[Any, ...] | None = self._reader.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: Params = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, args).fetchall()

    def _write(self, sql: str, args: Params = ()) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer, in one ``BEGIN IMMEDIATE`` transaction (rolled back on any error)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


def dump(value: object) -> str:
    """``value`` as compact JSON, as every JSON column is written."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
