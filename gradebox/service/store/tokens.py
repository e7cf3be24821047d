"""The tokens table: ids, roles, hashes (never a secret), expiry and task scope."""

from __future__ import annotations

import json
import time

from gradebox.service.store.db import Database, dump
from gradebox.service.store.records import TokenInfo, TokenRecord

__all__ = ["TokenTable"]


class TokenTable(Database):
    """Tokens: stored as hashes, read on every request."""

    def add_token(
        self,
        token_id: str,
        role: str,
        token_hash: str,
        *,
        expires: float | None = None,
        tasks: frozenset[str] | None = None,
    ) -> None:
        """Store a new token's hash, its expiry and its task scope."""
        scope = None if tasks is None else dump(sorted(tasks))
        self._write(
            "INSERT INTO tokens (id, role, hash, created, expires, tasks) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (token_id, role, token_hash, time.time(), expires, scope),
        )

    def token(self, token_id: str) -> TokenRecord | None:
        """The token with this id, if any."""
        row = self._one(
            "SELECT id, role, hash, expires, tasks FROM tokens WHERE id = ?", (token_id,)
        )
        if row is None:
            return None
        tasks = None if row[4] is None else frozenset(json.loads(row[4]))
        return TokenRecord(row[0], row[1], row[2], row[3], tasks)

    def tokens(self) -> list[TokenInfo]:
        """Every token, oldest first (never a hash)."""
        rows = self._all(
            "SELECT id, role, created, expires, tasks FROM tokens ORDER BY created, id"
        )
        return [
            TokenInfo(
                str(r[0]),
                r[1],
                float(r[2]),
                None if r[3] is None else float(r[3]),
                None if r[4] is None else tuple(json.loads(r[4])),
            )
            for r in rows
        ]

    def revoke_token(self, token_id: str) -> bool:
        """Delete a token: its next request fails; a running server cancels its queued runs.

        Written from any process (``gradebox token revoke`` beside a running server):
        the server reads tokens from this database on every request and before it
        starts each sample (:meth:`unfinished`, :meth:`retire_orphaned`).
        """
        return self._write("DELETE FROM tokens WHERE id = ?", (token_id,)) > 0

    def token_live(self, token_id: str, now: float | None = None) -> bool:
        """Whether a token exists and has not expired (at ``now``, default: the time now)."""
        when = time.time() if now is None else now
        row = self._one(
            "SELECT 1 FROM tokens WHERE id = ? AND (expires IS NULL OR expires > ?)",
            (token_id, when),
        )
        return row is not None

    def has_admin(self) -> bool:
        """Whether any admin token exists."""
        return self._one("SELECT 1 FROM tokens WHERE role = 'admin' LIMIT 1") is not None
