"""Task ids in a run's files: files from before them read as id = entry point = fn.

``tests/cases/golden/results_before_task_ids.jsonl`` is the golden results file
as it was before rows carried ``task``; ``examples/`` has never named a task but
by ``fn``. Both must read as they always did. Rows of ``gradebox gate`` are read
by ``gradebox passk`` directly: pass@k per instance.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.errors import BadInput
from gradebox.grade import Grade
from gradebox.runs.diff import diff_runs
from gradebox.runs.inputs import load_inputs
from gradebox.runs.passk import estimate, pass_at_k
from gradebox.runs.rundir import read_results

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "cases" / "golden"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_examples_read_as_id_equals_entry_point_equals_fn() -> None:
    inputs = load_inputs(
        EXAMPLES / "hidden.jsonl", EXAMPLES / "samples.jsonl", EXAMPLES / "public.jsonl"
    )
    assert inputs.tasks and all(t.id == t.fn for t in inputs.tasks.values())
    assert all(c.task == c.fn for t in inputs.tasks.values() for c in t.cases)
    samples = [json.loads(line) for line in (EXAMPLES / "samples.jsonl").read_text().splitlines()]
    assert list(inputs.samples.tasks) == [s["fn"] for s in samples]
    assert all(t.public is not None and t.public.task == t.id for t in inputs.tasks.values())


def test_old_golden_rows_read_with_their_fn_as_task_and_gain_only_the_task_field() -> None:
    old = (GOLDEN / "results_before_task_ids.jsonl").read_text().splitlines()
    new = (GOLDEN / "results.jsonl").read_text().splitlines()
    assert len(old) == len(new) > 10
    for before, after in zip(old, new, strict=True):
        row = json.loads(before)
        assert "task" not in row
        grade = Grade.from_row(row)
        assert grade.task == grade.fn == row["fn"]
        written = grade.to_row()
        assert list(written)[:3] == ["id", "task", "fn"]
        assert json.dumps(written) == after
        assert Grade.from_row(json.loads(after)) == grade
    rows = [json.loads(line) for line in old]
    by_fn = {t.task: (t.n, t.c) for t in estimate(rows, (1,)).tasks}
    assert by_fn == {
        t.task: (t.n, t.c) for t in estimate(read_results(GOLDEN / "results.jsonl"), (1,)).tasks
    }
    assert set(by_fn) == {r["fn"] for r in rows}


def test_rows_group_by_task_not_by_entry_point() -> None:
    rows = [
        {"id": "a", "task": "T/1", "fn": "f", "pass": True, "verdict": "pass", "outcomes": []},
        {"id": "b", "task": "T/2", "fn": "f", "pass": False, "verdict": "fail", "outcomes": []},
        {"id": "c", "fn": "g", "pass": True, "verdict": "pass", "outcomes": []},  # older row
    ]
    report = estimate(rows, (1,))
    assert {t.task: t.c for t in report.tasks} == {"T/1": 1, "T/2": 0, "g": 1}
    new = [dict(rows[0]), {**rows[1], "pass": True, "verdict": "pass"}, rows[2]]
    diff = diff_runs(rows, new)
    assert [(c.id, c.task) for c in diff.newly_passing] == [("b", "T/2")]
    assert {d.task for d in diff.passk if d.task} == {"T/1", "T/2", "g"}


def test_cases_and_public_line_of_one_task_must_call_one_entry_point(tmp_path: Path) -> None:
    hidden = _write(
        tmp_path / "hidden.jsonl",
        [
            {"task": "T/1", "fn": "f", "args": [1], "expect": 1},
            {"task": "T/1", "fn": "g", "args": [2], "expect": 2},
            {"task": "T/2", "fn": "f", "args": [1], "expect": 2},
        ],
    )
    public = _write(tmp_path / "public.jsonl", [{"task": "T/2", "fn": "h", "spec": "x"}])
    samples = _write(tmp_path / "samples.jsonl", [{"id": "s", "task": "T/2", "code": "x = 1"}])
    with pytest.raises(BadInput) as caught:
        load_inputs(hidden, samples, public)
    assert caught.value.problems == [
        f"{hidden}:2: fn: task 'T/1' calls 'f' on line 1; every case of a task has one entry point",
        f"{public}:1: fn: task 'T/2' calls 'f' in its hidden cases ({hidden}:3), not 'h'",
    ]


def test_a_sample_naming_no_task_answers_the_task_of_its_id(tmp_path: Path) -> None:
    hidden = _write(
        tmp_path / "hidden.jsonl",
        [
            {"task": "HumanEval/85", "fn": "add", "args": [[4, 2, 6, 7]], "expect": 2},
            {"task": "HumanEval/53", "fn": "add", "args": [1, 2], "expect": 3},
        ],
    )
    samples = _write(
        tmp_path / "samples.jsonl",
        [
            {"id": "HumanEval/53", "code": "def add(x, y):\n    return x + y\n"},
            {"id": "x", "code": "1"},
        ],
    )
    with pytest.raises(BadInput) as caught:
        load_inputs(hidden, samples)
    assert caught.value.problems == [
        f"{samples}:2: id: 'x' has no hidden cases in {hidden} (the line names no 'task' or "
        "'fn', so its id was taken as its task)"
    ]
    inputs = load_inputs(hidden, samples, skip_bad_lines=True)
    assert list(inputs.samples.tasks) == ["HumanEval/53"]
    assert inputs.tasks["HumanEval/53"].fn == inputs.tasks["HumanEval/85"].fn == "add"


def test_a_task_id_with_a_control_character_is_a_bad_line(tmp_path: Path) -> None:
    hidden = _write(
        tmp_path / "hidden.jsonl", [{"task": "T\n", "fn": "f", "args": [], "expect": 1}]
    )
    samples = _write(tmp_path / "samples.jsonl", [{"id": "s", "task": "T\t1", "code": "x"}])
    with pytest.raises(BadInput) as caught:
        load_inputs(hidden, samples)
    assert caught.value.problems == [
        f"{hidden}:1: task: 'T\\n' has a control character",
        f"{samples}:1: task: 'T\\t1' has a control character",
    ]


# ------------------------------------------------------------------ gate rows in passk


def _gate_row(instance: str, verdict: str, reason: str, **extra: object) -> dict:
    """A row in the shape ``GateRow.to_row`` writes (``gradebox/patches/model.py``)."""
    row: dict[str, object] = {
        "id": instance,
        "verdict": verdict,
        "reason": reason,
        "resolved": verdict == "pass",
        "detail": None,
        "repo": "calc",
        "base": "main",
        "apply": None,
        "tests": None,
        "tamper": [],
        "static": None,
        "diff": None,
        "infra_error": None,
        "judge": None,
        "timing": {},
        "rules": {},
    }
    return row | extra


def test_passk_reads_gate_rows_per_instance(tmp_path: Path) -> None:
    rows = [
        _gate_row("acme__calc-1", "pass", "ok"),
        _gate_row("acme__calc-1", "fail", "fail_to_pass"),
        _gate_row("acme__calc-1", "fail", "fail_to_pass"),
        _gate_row("acme__calc-2", "fail", "pass_to_pass"),
        _gate_row("acme__calc-2", "needs_review", "infra_error", infra_error="docker went away"),
        _gate_row("acme__calc-2", "needs_review", "tamper_risk"),
    ]
    gate = _write(tmp_path / "gate.jsonl", rows)
    res = CliRunner().invoke(cli, ["passk", str(gate), "-k", "1,2", "--json", "--exclude-infra"])
    assert res.exit_code == 0, res.output
    tasks = json.loads(res.stdout)["tasks"]
    assert tasks["acme__calc-1"]["n"] == 3 and tasks["acme__calc-1"]["c"] == 1
    assert tasks["acme__calc-1"]["pass@2"] == pytest.approx(pass_at_k(3, 1, 2))
    assert (tasks["acme__calc-2"]["n"], tasks["acme__calc-2"]["excluded"]) == (2, 1)
    assert tasks["acme__calc-2"]["pass@1"] == 0.0
    table = CliRunner().invoke(cli, ["passk", str(gate), "-k", "1"])
    assert table.exit_code == 0 and "acme__calc-1" in table.stdout


def test_a_results_row_among_gate_rows_is_a_bad_line(tmp_path: Path) -> None:
    gate = _write(
        tmp_path / "gate.jsonl",
        [_gate_row("i-1", "pass", "ok"), {"id": "s", "fn": "f", "pass": True, "verdict": "pass"}],
    )
    res = CliRunner().invoke(cli, ["passk", str(gate)])
    assert res.exit_code == 2
    assert f"{gate}:2: " in res.output and "a gate row was expected" in res.output
