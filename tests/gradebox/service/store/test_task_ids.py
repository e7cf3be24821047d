"""The service names tasks by id: a database from before task ids moves over whole.

``tests/cases/service/before_task_ids.sqlite`` was written by the service as it
was before task ids (its tables keyed tasks by ``fn``): the examples' tasks, a
second revision of ``is_even``, a finished run of every example sample, a
synchronous grade, and a run still queued (pinned to its task revisions and
rubric). Opened by this code it is migrated in place: every row stays readable,
the finished run's rows are served as they were, and the queued run is graded.
Then two tasks with one entry point (HumanEval's two ``add``s) are registered
by id, ``/`` included, and graded apart.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from gradebox.grade import Grade
from gradebox.service import Store

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).resolve().parents[3] / "cases" / "service" / "before_task_ids.sqlite"
KEYED = ("tasks", "task_revisions", "run_tasks", "run_rubrics")
TABLES = (*KEYED, "tokens", "runs", "samples", "grades", "feedback", "rubrics")
QUEUED = "queued0before0ids0000000"


def _columns(db: Path, table: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _contents(db: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(db) as conn:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    db = tmp_path / "svc.sqlite"
    shutil.copyfile(FIXTURE, db)
    assert all("fn" in _columns(db, t) and "task" not in _columns(db, t) for t in KEYED)
    return db


def test_the_migration_renames_the_key_and_keeps_every_row(old_db: Path) -> None:
    before = _contents(old_db)
    Store(old_db).close()
    assert all("task" in _columns(old_db, t) and "fn" not in _columns(old_db, t) for t in KEYED)
    assert _contents(old_db) == before  # same rows, same values: only a column's name changed
    Store(old_db).close()  # a second open changes nothing
    assert _contents(old_db) == before
    store = Store(old_db)
    try:
        summary = store.task_summary("is_even")
        assert summary is not None
        assert (summary["task"], summary["fn"], summary["revision"]) == ("is_even", "is_even", 2)
        stored = store.task("is_even")
        assert stored is not None and stored.task == "is_even" and stored.hidden
        assert store.run_revision(QUEUED, "is_even") == 2
        assert store.run_rubric(QUEUED, "is_even") is not None
        assert store.task_names({"is_even", "mean", "HumanEval/85"}) == {
            "is_even": "is_even",
            "mean": "mean",
        }
        done = next(r for (r,) in store.fetch_all("SELECT id FROM runs WHERE status = 'done'"))
        rows = [stored.to_row() for stored in store.results(done)]  # StoredGrade, as stored
        assert len(rows) == 17 and all("task" not in r for r in rows)
        # A stored row from before task ids reads as its fn's task.
        assert all(Grade.from_row(r).task == r["fn"] for r in rows if "task_revision" in r)
    finally:
        store.close()


async def test_an_old_database_serves_its_runs_and_grades_its_queued_run(kit, old_db: Path):
    async with kit.running(register=False) as svc:
        assert svc.db == old_db
        info = await svc.wait_run(QUEUED, svc.admin)
        assert (info["status"], info["done"]) == ("done", 4)
        r = await svc.client.get(f"/v1/runs/{QUEUED}/results", headers=svc.admin)
        assert r.status_code == 200, r.text
        rows = [json.loads(line) for line in r.text.splitlines()]
        samples = kit.example_samples()[:4]
        assert [(x["id"], x["task"], x["fn"]) for x in rows] == [
            (s["id"], s["fn"], s["fn"]) for s in samples
        ]
        assert {x["task_revision"] for x in rows if x["task"] == "is_even"} == {2}
        r = await svc.client.get("/v1/tasks/is_even", headers=svc.admin)
        assert (r.json()["task"], r.json()["fn"], r.json()["revision"]) == ("is_even", "is_even", 2)


ADD_53 = {
    "public": {"fn": "add", "spec": "Add two numbers x and y."},
    "hidden": [{"args": [2, 3], "expect": 5}, {"args": [5, 7], "expect": 12}],
    "disclosure": "cases",
}
ADD_85 = {
    "public": {"fn": "add", "spec": "Add the even elements that are at odd indices."},
    "hidden": [{"args": [[4, 2, 6, 7]], "expect": 2}, {"args": [[4, 0, 6, 7]], "expect": 0}],
    "disclosure": "cases",
}


async def test_two_tasks_with_one_entry_point_are_registered_by_id_and_graded_apart(kit):
    async with kit.running(register=False) as svc:
        for path, body in (("HumanEval/53", ADD_53), ("HumanEval%2F85", ADD_85)):
            r = await svc.client.put(f"/v1/tasks/{path}", json=body, headers=svc.admin)
            assert r.status_code == 200, r.text
        assert r.json() == {"task": "HumanEval/85", "fn": "add", "revision": 1, "cases": 2}
        r = await svc.client.get("/v1/tasks/HumanEval/53", headers=svc.admin)
        assert (r.json()["task"], r.json()["fn"]) == ("HumanEval/53", "add")
        plus = "def add(x, y):\n    return x + y\n"
        rows = {}
        for task in ("HumanEval/53", "HumanEval/85"):
            sample = {"id": task, "task": task, "code": plus}
            r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
            assert r.status_code == 200, r.text
            rows[task] = r.json()
        assert (rows["HumanEval/53"]["task"], rows["HumanEval/53"]["fn"]) == ("HumanEval/53", "add")
        assert rows["HumanEval/53"]["verdict"] == "pass"
        assert rows["HumanEval/85"]["verdict"] == "fail"
        r = await svc.client.post(
            "/v1/runs",
            json=[{"task": "HumanEval/85", "code": plus}, {"task": "HumanEval/53", "code": plus}],
            headers=svc.grader,
        )
        assert r.status_code == 202, r.text
        run = r.json()["id"]
        await svc.wait_run(run, svc.grader)
        r = await svc.client.get(f"/v1/runs/{run}/results", headers=svc.grader)
        got = [json.loads(line) for line in r.text.splitlines()]
        assert [(x["task"], x["pass"]) for x in got] == [
            ("HumanEval/85", False),
            ("HumanEval/53", True),
        ]
        # fn alone names a task whose id it is; with task, it must be that task's entry point.
        for sample, pointer in (
            ({"fn": "add", "code": plus}, "/fn"),
            ({"task": "HumanEval/85", "fn": "plus", "code": plus}, "/fn"),
            ({"task": "HumanEval/99", "code": plus}, "/task"),
        ):
            r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
            assert r.status_code == 422, r.text
            assert [p["pointer"] for p in r.json()["problems"]] == [pointer]


async def test_a_task_id_that_is_not_a_python_name_needs_its_entry_point(kit):
    async with kit.running(register=False) as svc:
        body = {"hidden": [{"args": [1], "expect": 1}]}
        r = await svc.client.put("/v1/tasks/Bench%2F1", json=body, headers=svc.admin)
        assert r.status_code == 422
        assert [p["pointer"] for p in r.json()["problems"]] == ["/public/fn"]
        body = {"public": {"task": "Bench/2", "fn": "f"}, "hidden": [{"args": [1], "expect": 1}]}
        r = await svc.client.put("/v1/tasks/Bench%2F1", json=body, headers=svc.admin)
        assert r.status_code == 422
        assert [p["pointer"] for p in r.json()["problems"]] == ["/public/task"]
        r = await svc.client.put("/v1/tasks/" + "x" * 201, json=body, headers=svc.admin)
        assert r.status_code == 422 and r.json()["problems"][0]["in"] == "path"
        r = await svc.client.put("/v1/tasks/a%0Ab", json=body, headers=svc.admin)
        assert r.status_code == 404  # no route takes a control character
