"""`gradebox import bigcodebench`: each unittest method a program case, in the real sandbox.
Fixtures: tests/cases/benchmarks/bigcodebench/README.md."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gradebox.cli import cli

BCB = Path(__file__).resolve().parents[2] / "cases" / "benchmarks" / "bigcodebench"


def _run(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["import", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bigcodebench_tests_are_program_cases_and_references_pass(tmp_path: Path, grade) -> None:
    out = tmp_path / "bcb"
    report = _run("bigcodebench", str(BCB / "bigcodebench.jsonl"), "--out", str(out))
    assert report["tasks"] == 2
    assert report["cases"] == {"function": 0, "stdio": 0, "program": 7}
    assert {(s["task"], s["what"]) for s in report["skipped"]} == {
        ("BigCodeBench/9003", "task"),
        ("BigCodeBench/9001", "TestCases.test_unicode"),
    }
    assert "pandas" in next(s["why"] for s in report["skipped"] if s["what"] == "task")
    assert "renamed" not in report
    public = {p["task"]: p for p in _lines(out / "public.jsonl")}
    assert {p["fn"] for p in public.values()} == {"task_func"}  # one entry point, two tasks
    assert "os" not in public["BigCodeBench/9002"]["banned_imports"]  # the task is about os
    assert "os" in public["BigCodeBench/9001"]["banned_imports"]
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(
            json.dumps({"id": r["task"], "task": r["task"], "code": r["code"]}) + "\n"
            for r in _lines(out / "reference.jsonl")
        )
    )
    assert all("def task_func" in r["code"] for r in _lines(out / "reference.jsonl"))
    rows = grade(out / "hidden.jsonl", refs, out / "public.jsonl")
    assert [(r["task"], r["outcomes"]) for r in rows if not r["pass"]] == []
    assert [(r["task"], r["fn"]) for r in rows] == [
        ("BigCodeBench/9001", "task_func"),
        ("BigCodeBench/9002", "task_func"),
    ]
    assert [r["kind"] for r in rows] == ["program", "program"]

    run = tmp_path / "run"
    _run("samples", str(BCB / "broken_samples.jsonl"), "--tasks", str(out), "--out", str(run))
    written = _lines(run / "samples.jsonl")
    # The model's code as it was: no alias appended, the task named by its id.
    assert [(s["task"], s["code"]) for s in written] == [
        (b["task_id"], b["solution"]) for b in _lines(BCB / "broken_samples.jsonl")
    ]
    broken = grade(out / "hidden.jsonl", run / "samples.jsonl", out / "public.jsonl")
    # 9001 does not validate top (assertRaises fails); 9002 also sums notes.txt (107, not 7).
    assert [r["outcomes"] for r in broken] == [["ok", "ok", "ok", "wrong"], ["wrong", "ok", "ok"]]
