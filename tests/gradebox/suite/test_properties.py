"""Property-based hidden cases: generation, grading and shrinking in the real sandbox."""

from __future__ import annotations

import json

import pytest

from gradebox.errors import BadInput
from gradebox.model import Task
from gradebox.suite import Reference, extend_tasks, freeze_cases, load_references
from gradebox.suite.properties import (
    PropertySpec,
    draw_inputs,
    generate_cases,
    generate_property_cases,
    load_properties,
    shrink_counterexample,
)
from sandbox.cases import load_hidden
from sandbox.compare import judge_case

WRONG_FOR_NEGATIVES = "def absolute(x):\n    return x\n"


@pytest.fixture(scope="module")
def props(suites_dir):
    d = suites_dir / "props"
    return {
        "dir": d,
        "specs": load_properties(d / "properties.jsonl"),
        "refs": load_references(d / "reference.jsonl"),
        "hidden": load_hidden(d / "hidden.jsonl")[0],
    }


def _failures(sandbox, code, fn, cases):
    run = sandbox.run(code, fn, cases)
    return [
        c for c, o in zip(cases, run.observations, strict=True) if judge_case(c, o).outcome != "ok"
    ]


def test_drawing_is_deterministic_for_a_seed(props):
    spec = props["specs"][0]
    first = draw_inputs(spec)
    assert first == draw_inputs(spec)
    assert first != draw_inputs(spec, seed=spec.seed + 1)
    assert 40 <= len(first) <= 50 and all(-1000 <= a[0] <= 1000 and k == {} for a, k in first)


def test_generated_cases_catch_what_the_fixed_cases_miss_with_a_small_counterexample(
    sandbox, props
):
    fixed = tuple(c for c in props["hidden"] if c.fn == "absolute")
    assert _failures(sandbox, WRONG_FOR_NEGATIVES, "absolute", fixed) == []  # all positive

    generated = generate_property_cases(props["specs"], props["refs"], sandbox)
    cases = generated.cases["absolute"]
    assert [c.name for c in cases[:3]] == ["property:0", "property:1", "property:2"]
    assert all(c.expect == abs(c.args[0]) for c in cases)  # the reference's answers

    # Grade-time flow: the generated cases follow the fixed ones in the task.
    task = extend_tasks({"absolute": Task("absolute", fixed)}, generated.cases)["absolute"]
    assert task.cases[: len(fixed)] == fixed and len(task.cases) == len(fixed) + len(cases)
    failing = _failures(sandbox, WRONG_FOR_NEGATIVES, "absolute", task.cases)
    assert failing and all(c.args[0] < 0 and c.name.startswith("property:") for c in failing)

    worst = max(failing, key=lambda c: abs(c.args[0]))
    spec = generated.origins["absolute"][cases.index(worst)]
    shrunk = shrink_counterexample(
        "absolute", WRONG_FOR_NEGATIVES, worst, spec, props["refs"]["absolute"], sandbox
    )
    assert shrunk is not None
    assert shrunk.args == (-1,) and shrunk.expect == 1  # the minimal failing input
    assert _failures(sandbox, WRONG_FOR_NEGATIVES, "absolute", [shrunk]) == [shrunk]


def test_shrink_returns_none_when_the_candidate_does_not_fail(sandbox, props):
    case = generate_cases(props["specs"][:1], props["refs"], sandbox)["absolute"][0]
    good = "def absolute(x):\n    return abs(x)\n"
    assert (
        shrink_counterexample(
            "absolute", good, case, props["specs"][0], props["refs"]["absolute"], sandbox
        )
        is None
    )


def test_shrinking_is_bounded_in_sandbox_runs(sandbox, props):
    # A candidate wrong everywhere but 0: any input is a counterexample; with a budget
    # of 4 runs the search stops early and still returns a failing case.
    spec = props["specs"][0]
    case = generate_cases([spec], props["refs"], sandbox)["absolute"][5]
    bad = "def absolute(x):\n    return 0\n"
    shrunk = shrink_counterexample(
        "absolute", bad, case, spec, props["refs"]["absolute"], sandbox, max_runs=4
    )
    assert shrunk is not None and _failures(sandbox, bad, "absolute", [shrunk]) == [shrunk]


def test_errors_and_unanswerable_inputs(sandbox, props):
    specs = [
        PropertySpec(
            "clip_sum",
            ({"list": {"of": {"int": {}}, "max_size": 3}},),
            {"limit": {"int": {"min": -2, "max": 2}}},
            examples=30,
            seed=3,
        )
    ]
    got = generate_property_cases(specs, props["refs"], sandbox)
    errors = [c for c in got.cases["clip_sum"] if c.error is not None]
    assert errors and all(
        c.error == "builtins.ValueError" and c.kwargs["limit"] < 0 for c in errors
    )
    assert got.record["properties"][0]["seed"] == 3 and got.record["hypothesis"]

    code = (
        "class Odd(Exception):\n    pass\n\n"
        "class Small(ValueError):\n    pass\n\n"
        "def odd(x):\n"
        "    if x < -1:\n        raise Odd()\n"
        "    if x == -1:\n        raise Small()\n"
        "    return object() if x == 0 else x\n"
    )
    spec = PropertySpec("odd", ({"int": {"min": -3, "max": 3}},), examples=30, seed=0)
    got = generate_property_cases([spec], {"odd": Reference("odd", code)}, sandbox)
    kept = {c.args[0]: c.error for c in got.cases["odd"]}
    assert kept == {-1: "builtins.ValueError", 1: None, 2: None, 3: None}
    assert set(got.dropped["odd"]) == {
        "the reference raised an exception of its own class",
        "the reference returned an object that is not plain data",
    }


def test_missing_reference_is_bad_input(sandbox, props):
    with pytest.raises(BadInput, match="has no reference"):
        generate_cases([PropertySpec("nope", ())], props["refs"], sandbox)


def test_frozen_cases_are_valid_hidden_lines_without_known_inputs(sandbox, props, tmp_path):
    generated = generate_cases(props["specs"], props["refs"], sandbox)
    lines = freeze_cases(generated, props["hidden"])
    assert not any(line["fn"] == "absolute" and line["args"] == [0] for line in lines)  # in hidden
    assert any("error" in line and line["error"] == "ValueError" for line in lines)
    path = tmp_path / "new.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    back, _ = load_hidden(path)
    assert len(back) == len(lines)
    total = sum(len(v) for v in generated.values())
    known = {("absolute", (0,)), ("absolute", (3,)), ("absolute", (250,))}
    dupes = sum((c.fn, c.args) in known for cs in generated.values() for c in cs if not c.kwargs)
    assert len(lines) == total - dupes


def test_bad_property_lines_are_reported_with_file_and_line(tmp_path):
    path = tmp_path / "properties.jsonl"
    lines = [
        {"fn": "f", "args": [{"int": {"min": 5, "max": 1}}]},
        {"fn": "f", "args": [{"integer": {}}]},
        {"fn": "f", "args": [{"set": {"of": {"list": {"of": {"int": {}}}}}}]},
        {"fn": "f", "args": [{"int": {}}], "examples": 0},
        {"fn": "f", "args": [{"just": {"$nope": 1}}]},
        {"fn": "f", "args": [{"int": {}, "bool": {}}]},
        {"fn": "f", "args": [{"text": {"alphabet": "ab", "max_size": 3}}], "seed": 2},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(BadInput) as err:
        load_properties(path)
    problems = err.value.problems
    assert [p.split(":")[1] for p in problems] == ["1", "2", "3", "4", "5", "6"]
    assert "min (5) is greater than max (1)" in problems[0]
    assert "a strategy is an object with exactly one of" in problems[1]
    assert "set elements must be hashable" in problems[2]
    assert "examples" in problems[3]
    assert "unknown tag" in problems[4]
    assert "a strategy is an object with exactly one of" in problems[5]
