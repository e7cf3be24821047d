"""The static layers through the API: real ruff, mypy and bandit in a warm session.

A sample that passes every hidden case but has a high-severity bandit finding
(``hashlib.md5``: B324) fails with reason ``policy:static``; a task that allows
B324 passes it (the finding stays on the row); ``static: false`` gives
``static: null``; and the row's ``static`` field is the CLI's, byte for byte.
"""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.service import Store

pytestmark = pytest.mark.anyio

HEAD = "import hashlib\n\n\ndef digest(data: bytes) -> str:\n"
MD5 = HEAD + "    return hashlib.md5(data).hexdigest()\n"
WRONG = HEAD + "    return hashlib.md5(data).hexdigest()[:8]\n"
PUBLIC = {
    "fn": "digest",
    "spec": "Return the hex MD5 digest of data (a checksum, not for security).",
    "signature": "def digest(data: bytes) -> str",
}
HIDDEN = [
    {"fn": "digest", "args": [{"$bytes": "YWJj"}], "expect": "900150983cd24fb0d6963f7d28e17f72"},
    {"fn": "digest", "args": [{"$bytes": ""}], "expect": "d41d8cd98f00b204e9800998ecf8427e"},
]
TASK = {"public": PUBLIC, "hidden": HIDDEN, "disclosure": "cases"}


async def _task(svc, body):
    r = await svc.client.put("/v1/tasks/digest", json=body, headers=svc.admin)
    assert r.status_code == 200, r.text


async def _grade(svc, **body):
    r = await svc.client.post("/v1/grade", json={"fn": "digest", **body}, headers=svc.grader)
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_passing_sample_with_a_high_severity_finding_fails_by_policy(kit, static_service):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK)
        row = await _grade(svc, code=MD5)
        assert row["outcomes"] == ["ok", "ok"]
        assert (row["pass"], row["verdict"], row["reason"]) == (False, "fail", "policy:static")
        static = row["static"]
        assert static["effect"] == "fail" and static["deciding"] == ["B324"]
        [b324] = [f for f in static["findings"] if f["rule"] == "B324"]
        assert (b324["layer"], b324["severity"], b324["line"]) == ("security", "high", 5)
        assert static["infra_error"] is None


async def test_a_task_that_allows_the_rule_passes_and_keeps_the_finding(kit, static_service):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK | {"static": {"allow_rules": ["B324"]}})
        row = await _grade(svc, code=MD5)
        assert (row["pass"], row["verdict"], row["reason"]) == (True, "pass", "ok")
        assert row["static"]["effect"] == "pass" and row["static"]["deciding"] == []
        assert "B324" in [f["rule"] for f in row["static"]["findings"]]
        r = await svc.client.get("/v1/tasks/digest", headers=svc.admin)
        assert r.json()["static"] == {"allow_rules": ["B324"]}


async def test_static_false_gives_static_null_and_a_test_verdict(kit, static_service):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK)
        row = await _grade(svc, code=MD5, static=False)
        assert row["static"] is None
        assert (row["verdict"], row["reason"]) == ("pass", "ok")


async def test_allowing_a_rule_never_rescues_a_test_failure(kit, static_service):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK | {"static": {"allow_rules": ["B324"]}})
        row = await _grade(svc, code=WRONG)
        assert (row["verdict"], row["reason"]) == ("fail", "hidden_tests")
        assert row["static"]["effect"] == "pass"


async def test_a_task_policy_replaces_the_servers(kit, static_service):
    policy = {"fail_on": [], "review_on": [{"layer": "security", "rules": ["B3*"]}]}
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK | {"static": {"policy": policy}})
        row = await _grade(svc, code=MD5)
        assert (row["verdict"], row["reason"]) == ("needs_review", "policy:static")


async def test_the_row_static_field_is_the_clis(kit, static_service, tmp_path):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK)
        api = await _grade(svc, id="s1", code=MD5)
    files = {
        "hidden.jsonl": HIDDEN,
        "public.jsonl": [PUBLIC],
        "samples.jsonl": [{"id": "s1", "fn": "digest", "code": MD5}],
    }
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    args = ["grade", "--no-judge", "--jobs", "1"]
    for flag, name in (("--hidden", "hidden"), ("--public", "public"), ("--samples", "samples")):
        args += [flag, str(tmp_path / f"{name}.jsonl")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    [cli_row] = [json.loads(x) for x in res.stdout.splitlines()]
    assert json.dumps(api["static"]) == json.dumps(cli_row["static"])
    assert (api["verdict"], api["reason"]) == (cli_row["verdict"], cli_row["reason"])


async def test_runs_take_the_layers_as_query_parameters(kit, static_service):
    async with kit.running(static=static_service) as svc:
        await _task(svc, TASK)
        samples = [{"id": "a", "fn": "digest", "code": MD5}]
        rows = {}
        for query in ("", "?static=false"):
            r = await svc.client.post(f"/v1/runs{query}", json=samples, headers=svc.grader)
            assert r.status_code == 202, r.text
            status = await svc.wait_run(r.json()["id"], svc.grader)
            assert status["layers"]["static"] is (query == "")
            r = await svc.client.get(f"/v1/runs/{status['id']}/results", headers=svc.grader)
            rows[query] = json.loads(r.text.splitlines()[0])
        assert rows[""]["reason"] == "policy:static" and rows[""]["static"]["deciding"] == ["B324"]
        assert (
            rows["?static=false"]["static"] is None and rows["?static=false"]["verdict"] == "pass"
        )


async def test_a_server_without_static_refuses_static_true(kit):
    async with kit.running() as svc:
        await _task(svc, TASK)
        row = await _grade(svc, code=MD5)  # default: off on this server
        assert row["static"] is None
        r = await svc.client.post(
            "/v1/grade", json={"fn": "digest", "code": MD5, "static": True}, headers=svc.grader
        )
        assert r.status_code == 422
        assert r.json()["problems"][0]["pointer"] == "/static"


@pytest.mark.parametrize(
    ("static", "pointer"),
    [
        ({"allow": ["B324"]}, "/static/allow"),
        ({"allow_rules": "B324"}, "/static/allow_rules"),
        ({"policy": {"fail_on": [{"layer": "nope"}]}}, "/static/policy"),
        (
            {"lockfile": {"name": "requirements.txt", "content": "-r /etc/passwd\n"}},
            "/static/lockfile",
        ),
        ({"lockfile": {"name": "setup.py", "content": ""}}, "/static/lockfile"),
    ],
)
async def test_bad_static_settings_are_422(kit, static, pointer):
    async with kit.running() as svc:
        r = await svc.client.put(
            "/v1/tasks/digest", json=TASK | {"static": static}, headers=svc.admin
        )
        assert r.status_code == 422, r.text
        assert pointer in [p["pointer"] for p in r.json()["problems"]]


async def test_a_registered_lockfile_is_the_tasks(kit, static_service):
    code = "import requests\n\n\ndef digest(data: bytes) -> str:\n    return data.hex()\n"
    async with kit.running(static=static_service) as svc:
        found = {}
        for pinned in ("numpy==1.26.0\n", "requests==2.31.0\n"):
            lock = {"name": "requirements.txt", "content": pinned}
            await _task(svc, TASK | {"static": {"lockfile": lock}})
            row = await _grade(svc, code=code)
            found[pinned] = [
                f["rule"] for f in row["static"]["findings"] if f["layer"] == "imports"
            ]
        assert found["numpy==1.26.0\n"] == ["GBX102"]  # a real package the lockfile lacks
        assert found["requests==2.31.0\n"] == []


def test_an_old_database_is_migrated(tmp_path):
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE tasks (fn TEXT PRIMARY KEY, public TEXT NOT NULL, hidden TEXT NOT NULL,
            limits TEXT NOT NULL, revision INTEGER NOT NULL, updated REAL NOT NULL);
        CREATE TABLE runs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,
            created REAL NOT NULL, finished REAL, total INTEGER NOT NULL);
        """
    )
    con.execute(
        "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?)",
        ("digest", json.dumps(PUBLIC), json.dumps(HIDDEN), "{}", 1, time.time()),
    )
    con.execute("INSERT INTO runs VALUES ('r1', 'tok', 'done', 0, 0, 0)")
    con.commit()
    con.close()
    store = Store(db)
    try:
        task = store.task("digest")
        assert task is not None
        assert (task.disclosure, task.static) == ("counts", {})
        assert store.run_options("r1") == {}
    finally:
        store.close()
