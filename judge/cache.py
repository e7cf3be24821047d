"""A persistent reply cache: SQLite in WAL mode, keyed by the full request.

The key is the SHA-256 of a canonical JSON document holding everything that
decides the reply: cache format, endpoint base URL, model, the messages (as
sent in structured-output mode), the reply schema, the rubric's name, version
and content digest, the code's SHA-256, the seed and the temperature. Change
any of them and the request is new.

What is stored is the reply as received (:class:`~judge.types.Reply`), not the
verdict: a cached reply is checked again on every hit, so a stricter checker
applies to old replies too, and a reply that broke protocol stays
``needs_review`` on re-grading at no cost. Only completed exchanges are
stored; an unavailable endpoint stores nothing.

One connection, shared by the judge's threads under a lock (SQLite calls are
short next to an HTTP round trip); WAL lets other processes read meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from judge.types import Reply

__all__ = ["CACHE_FORMAT", "ReplyCache", "cache_key"]

CACHE_FORMAT = 1
"""Bumped when the key's contents or the stored value change shape."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    reply TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(
    *,
    base_url: str,
    model: str,
    messages: list[Any],
    schema: dict[str, Any],
    rubric: tuple[str, str, str],
    code: str,
    seed: int,
    temperature: float,
) -> str:
    """The cache key of one request.

    Args:
        base_url: The endpoint.
        model: The model asked.
        messages: The chat messages (structured-output form).
        schema: The reply schema.
        rubric: The rubric's name, version and digest.
        code: The candidate code as extracted (hashed).
        seed: The seed sent.
        temperature: The temperature sent.

    Returns:
        64 hex digits.
    """
    document = {
        "format": CACHE_FORMAT,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "messages": messages,
        "schema": schema,
        "rubric": list(rubric),
        "code_sha256": hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest(),
        "seed": seed,
        "temperature": temperature,
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


class ReplyCache:
    """Replies by request key, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        """Open (and create) the cache at ``path``.

        Args:
            path: The SQLite file; its directory is created if missing.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> Reply | None:
        """The stored reply for ``key``, if any."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else Reply.from_json(json.loads(row[0]))

    def put(self, key: str, reply: Reply) -> None:
        """Store ``reply`` under ``key`` (replacing any earlier one)."""
        value = json.dumps(reply.to_json())  # ASCII: lone surrogates survive
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, reply, created) VALUES (?, ?, ?)",
                (key, value, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
