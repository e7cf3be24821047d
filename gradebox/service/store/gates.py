"""Registered repositories and patch gates (queued, running, done, with their rows)."""

from __future__ import annotations

import json
import sqlite3
import time

from gradebox.service.store.db import Database

__all__ = ["GateRecord", "GateTable", "RepoRecord"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS repos (name TEXT PRIMARY KEY, path TEXT NOT NULL, "
    "lockfile TEXT, protect TEXT, updated REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS gates (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "repo TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')), "
    "created REAL NOT NULL, finished REAL, spec TEXT NOT NULL, row TEXT)",
)

RepoRecord = tuple[str, str | None, list[str] | None]
"""A registered repository: ``(path, lockfile, protect)``."""
GateRecord = tuple[str, str, str, float, float | None, str | None]
"""A gate: ``(owner, repo, status, created, finished, row as JSON or None)``."""


class GateTable(Database):
    """Repositories and gates; made on first use (:meth:`open_gates`)."""

    def open_gates(self) -> None:
        """Make the tables when missing, and queue again gates a stop left running."""
        for sql in _SCHEMA:
            self._write(sql)
        self._write("UPDATE gates SET status = 'queued' WHERE status = 'running'")

    def is_open(self) -> bool:
        """Whether the store is still open (closed: its app stopped)."""
        try:
            self._one("SELECT 1")
        except sqlite3.ProgrammingError:
            return False
        return True

    def put_repo(
        self, name: str, path: str, lockfile: str | None, protect: list[str] | None
    ) -> None:
        """Register (or replace) repository ``name``."""
        self._write(
            "INSERT INTO repos (name, path, lockfile, protect, updated) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET path = excluded.path, lockfile = excluded.lockfile, "
            "protect = excluded.protect, updated = excluded.updated",
            (name, path, lockfile, None if protect is None else json.dumps(protect), time.time()),
        )

    def repo(self, name: str) -> RepoRecord | None:
        """A registered repository, or ``None``."""
        found = self._one("SELECT path, lockfile, protect FROM repos WHERE name = ?", (name,))
        if found is None:
            return None
        return str(found[0]), found[1], None if found[2] is None else json.loads(found[2])

    def unfinished_gates(self, owner: str) -> int:
        """How many gates of ``owner`` are not done."""
        found = self._one(
            "SELECT COUNT(*) FROM gates WHERE owner = ? AND status != 'done'", (owner,)
        )
        return 0 if found is None else int(found[0])

    def add_gate(self, gate_id: str, owner: str, repo: str, spec: str) -> None:
        """Queue gate ``gate_id`` (``spec``: its JSON)."""
        self._write(
            "INSERT INTO gates (id, owner, repo, status, created, spec) "
            "VALUES (?, ?, ?, 'queued', ?, ?)",
            (gate_id, owner, repo, time.time(), spec),
        )

    def queued_gates(self) -> list[tuple[str, str]]:
        """``(gate id, owner)`` of every queued gate, oldest first."""
        rows = self._all("SELECT id, owner FROM gates WHERE status = 'queued' ORDER BY created, id")
        return [(str(r[0]), str(r[1])) for r in rows]

    def gate_spec(self, gate_id: str) -> str | None:
        """A gate's spec (JSON), or ``None``."""
        found = self._one("SELECT spec FROM gates WHERE id = ?", (gate_id,))
        return None if found is None else str(found[0])

    def start_gate(self, gate_id: str) -> None:
        """Mark a gate running."""
        self._write("UPDATE gates SET status = 'running' WHERE id = ?", (gate_id,))

    def finish_gate(self, gate_id: str, row: str, *, only_queued: bool = False) -> None:
        """Mark a gate done with its row (JSON); ``only_queued``: if it is still queued."""
        sql = "UPDATE gates SET status = 'done', finished = ?, row = ? WHERE id = ?"
        self._write(sql + " AND status = 'queued'" * only_queued, (time.time(), row, gate_id))

    def gate(self, gate_id: str) -> GateRecord | None:
        """A gate, or ``None``."""
        found = self._one(
            "SELECT owner, repo, status, created, finished, row FROM gates WHERE id = ?",
            (gate_id,),
        )
        if found is None:
            return None
        owner, repo, status, created, finished, row = found
        return str(owner), str(repo), str(status), float(created), finished, row
