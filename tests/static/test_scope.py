"""Cache scopes: one scope's mypy cache entries never serve another's candidate.

The attack (a service shares warm sessions between tokens): a tenant submits a
guess of another tenant's code; had the other tenant's check left a mypy cache
entry for that module, the guess would be checked faster (about twice as fast
here), telling the guesser that somebody submitted exactly that code. With a
scope per token the guess has a module, and a cache entry, of its own.
Real mypy, real cache directory.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from static.batch import Candidate, WarmTools
from static.config import StaticConfig

CODE = "def inc(x):\n    return x + 1\n"


def _entries(cache: Path) -> set[str]:
    """The candidate modules mypy has cache entries for (files, or rows of its SQLite cache)."""
    names = {p.name.split(".")[0] for p in cache.rglob("c-*") if p.is_file()}
    for db in cache.rglob("*.db"):
        with sqlite3.connect(db) as con:
            query = "SELECT name FROM sqlite_master WHERE type = 'table'"
            tables = [t for (t,) in con.execute(query)]
            for table in tables:
                rows = con.execute(f"SELECT path FROM {table} WHERE path LIKE 'c-%'")
                names |= {str(path).split(".")[0] for (path,) in rows}
    return names


def test_each_scope_has_its_own_cache_entry_and_the_same_findings(tmp_path):
    cache = tmp_path / "mypy-cache"
    config = StaticConfig(cache_dir=cache, jobs=1, layers=frozenset({"types"}))
    with WarmTools(config) as tools:
        first = tools.check_batch([Candidate(CODE, "inc", "def inc(x: int) -> int", "token-a")])
        seen = _entries(cache)
        assert len(seen) == 1
        again = tools.check_batch([Candidate(CODE, "inc", "def inc(x: int) -> int", "token-a")])
        assert _entries(cache) == seen  # the same scope reuses its entry
        other = tools.check_batch([Candidate(CODE, "inc", "def inc(x: int) -> int", "token-b")])
        assert len(_entries(cache)) == 2  # another scope never does
        unscoped = tools.check_batch([Candidate(CODE, "inc", "def inc(x: int) -> int")])
    assert first == again == other == unscoped
    # An unscoped candidate keeps the module name it had before scopes (kept caches hold).
    key = "\0".join((CODE, "inc", "def inc(x: int) -> int"))
    name = "c-" + hashlib.sha256(key.encode()).hexdigest()[:24]
    assert name in _entries(cache)
    assert len(_entries(cache)) == 3
