"""Two tasks with one entry point on a Dask cluster: each keeps its own task set.

Task sets are registered with the workers once per run, keyed by task id: keyed
by entry point, one task's cases would stand in for the other's on the workers.
"""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import grade, rows

PLUS = "def add(x, y):\n    return x + y\n"
MINUS = "def add(x, y):\n    return x - y\n"


def test_tasks_sharing_an_entry_point_keep_their_own_cases_on_the_workers(tmp_path: Path):
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text(
        "".join(
            json.dumps(c) + "\n"
            for c in (
                {"task": "T/plus", "fn": "add", "args": [5, 3], "expect": 8},
                {"task": "T/minus", "fn": "add", "args": [5, 3], "expect": 2},
                {"task": "T/plus", "fn": "add", "args": [1, 1], "expect": 2},
            )
        )
    )
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"id": f"{task}:{name}", "task": task, "code": code}) + "\n"
            for task in ("T/plus", "T/minus")
            for name, code in (("plus", PLUS), ("minus", MINUS))
        )
    )
    out = tmp_path / "rows.jsonl"
    res = grade(
        "--hidden", str(hidden), "--samples", str(samples), "--out", str(out),
        "--no-static", "--no-judge", "--scheduler", "local:1", "--jobs", "1",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = {r["id"]: (r["task"], r["fn"], r["pass"], len(r["outcomes"])) for r in rows(out)}
    assert got == {
        "T/plus:plus": ("T/plus", "add", True, 2),
        "T/plus:minus": ("T/plus", "add", False, 2),
        "T/minus:plus": ("T/minus", "add", False, 1),
        "T/minus:minus": ("T/minus", "add", True, 1),
    }
