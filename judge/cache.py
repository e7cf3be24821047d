"""A persistent reply cache: SQLite in WAL mode, keyed by the full request.

The key is the SHA-256 of a canonical JSON document holding everything that
decides the reply: cache format, endpoint base URL, model, each message's role
and SHA-256 (as sent in structured-output mode), the reply schema's SHA-256,
the rubric's name, version and content digest, the code's SHA-256, the seed
and the temperature. Change any of them and the request is new.

What is stored is the reply as received (:class:`~judge.types.Reply`), with
the request that was sent beside it for audit (:meth:`ReplyCache.request`), not
the verdict: a cached reply is checked again on every hit, so a stricter checker
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
from collections.abc import Mapping, Sequence
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
    request TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(
    *,
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    schema_sha256: str,
    rubric: tuple[str, str, str],
    code: str,
    seed: int,
    temperature: float,
) -> str:
    """The cache key of one request.

    Args:
        base_url: The endpoint.
        model: The model asked.
        messages: The chat messages (structured-output form); each is hashed.
        schema_sha256: SHA-256 of the reply schema (:attr:`judge.reply.ReplyChecker.schema_sha256`).
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
        "messages": [[m["role"], _sha256(str(m["content"]))] for m in messages],
        "schema_sha256": schema_sha256,
        "rubric": list(rubric),
        "code_sha256": _sha256(code),
        "seed": seed,
        "temperature": temperature,
    }
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return _sha256(canonical)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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

    def put(self, key: str, reply: Reply, request: Mapping[str, Any]) -> None:
        """Store ``reply`` under ``key`` (replacing any earlier one), with its request for audit.

        Args:
            key: The request's cache key.
            reply: The reply as received.
            request: What was sent (model, messages, seed...), kept for a human to read.
        """
        values = (key, json.dumps(reply.to_json()), json.dumps(request), time.time())
        with self._lock:  # JSON is ASCII here, so lone surrogates survive
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, reply, request, created) VALUES (?, ?, ?, ?)",
                values,
            )

    def request(self, key: str) -> dict[str, Any] | None:
        """The request stored with ``key``'s reply: what the judge was shown."""
        with self._lock:
            row = self._db.execute("SELECT request FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
