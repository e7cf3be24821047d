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
    assert report["renamed"] == [
        {"task": "BigCodeBench/9002", "entry_point": "task_func", "fn": "task_func_9002"}
    ]
    public = {p["fn"]: p for p in _lines(out / "public.jsonl")}
    assert "os" not in public["task_func_9002"]["banned_imports"]  # the task is about os
    assert "os" in public["task_func"]["banned_imports"]
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(
            json.dumps({"id": r["fn"], "fn": r["fn"], "code": r["code"]}) + "\n"
            for r in _lines(out / "reference.jsonl")
        )
    )
    rows = grade(out / "hidden.jsonl", refs, out / "public.jsonl")
    assert [(r["fn"], r["outcomes"]) for r in rows if not r["pass"]] == []
    assert [r["kind"] for r in rows] == ["program", "program"]

    run = tmp_path / "run"
    _run("samples", str(BCB / "broken_samples.jsonl"), "--tasks", str(out), "--out", str(run))
    broken = grade(out / "hidden.jsonl", run / "samples.jsonl", out / "public.jsonl")
    # 9001 does not validate top (assertRaises fails); 9002 also sums notes.txt (107, not 7).
    assert [r["outcomes"] for r in broken] == [["ok", "ok", "ok", "wrong"], ["wrong", "ok", "ok"]]
