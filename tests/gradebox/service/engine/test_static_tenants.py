"""The service's warm static sessions keep each token's mypy cache entries to that token.

Sessions are shared between tokens. Had one token's check left a cache entry that
another token's identical sample could use, the second check would be faster
(about twice as fast on this machine), and a client could learn from a grade's
time whether another tenant had submitted exactly that code. Real warm sessions,
real mypy, real SQLite cache.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradebox.service.engine.static import StaticService

pytestmark = pytest.mark.anyio

CODE = "def inc(x):\n    total = x + 1\n    return total\n"
TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
    "disclosure": "cases",
}


@pytest.fixture
def cached_static(tmp_path) -> Iterator[tuple[StaticService, Path]]:
    cache = tmp_path / "static-cache"
    service = StaticService(sessions=1, cache_dir=cache, start_timeout_s=300)  # a hang bound
    try:
        yield service, cache
    finally:
        service.close()


def _entries(cache: Path) -> set[str]:
    """Candidate modules with mypy cache entries (its SQLite cache, or files)."""
    names = {p.name.split(".")[0] for p in cache.rglob("c-*") if p.is_file()}
    for db in cache.rglob("*.db"):
        with sqlite3.connect(db) as con:
            query = "SELECT name FROM sqlite_master WHERE type = 'table'"
            for (table,) in list(con.execute(query)):
                rows = con.execute(f"SELECT path FROM {table} WHERE path LIKE 'c-%'")
                names |= {str(path).split(".")[0] for (path,) in rows}
    return names


async def _static(svc, headers) -> dict:
    r = await svc.client.post(
        "/v1/grade", json={"fn": "inc", "code": CODE, "static": True}, headers=headers
    )
    assert r.status_code == 200, r.text
    return r.json()["static"]


async def test_one_tokens_check_never_warms_another_tokens(kit, cached_static):
    service, cache = cached_static
    async with kit.running(static=service) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        warm = _entries(cache)  # the sessions' own warm-up
        first = await _static(svc, svc.grader)
        mine = _entries(cache)
        assert len(mine - warm) == 1
        assert await _static(svc, svc.grader) == first
        assert _entries(cache) == mine  # its own entry serves it again
        guess = await _static(svc, svc.other)
        assert guess == first  # the same findings, from an entry of its own
        assert len(_entries(cache) - warm) == 2
