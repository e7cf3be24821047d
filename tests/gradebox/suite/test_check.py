"""check_suite end to end on the real sandbox: the bundled examples and the weak corpus."""

from __future__ import annotations

import json

import pytest

from gradebox.model import Task
from gradebox.suite import check_suite, load_references, render_text
from gradebox.suite.references import Reference
from sandbox.types import make_case


def test_bundled_examples_pass_the_suite_check(sandbox, load_tasks, examples_dir):
    tasks, pub = load_tasks(examples_dir / "hidden.jsonl", examples_dir / "public.jsonl")
    refs = load_references(examples_dir / "reference.jsonl")
    report = check_suite(tasks, pub, refs, sandbox, runs=20)
    assert report.trustworthy, render_text(report)
    assert [t.fn for t in report.tasks] == list(tasks)
    for task in report.tasks:
        assert task.reference is not None and task.reference.runs == 20
        assert not task.reference.flaky and not task.reference.failing
        assert task.mutation.score == 1.0, render_text(report)
        assert not any(s.survived for s in task.stubs)
    # The examples do leak: split_pair's first case is its public example, and fib's
    # spec states fib(0) == 0 and fib(1) == 1. Leaks warn unless made fatal.
    leaks = {(f.fn, f.cases) for f in report.findings if f.code == "SC006"}
    assert leaks == {("split_pair", (0,)), ("fib", (0,)), ("fib", (1,))}
    assert all(f.severity == "warn" for f in report.findings)


def test_weak_suite_fails_with_exactly_the_expected_findings(sandbox, load_tasks, suites_dir):
    weak = suites_dir / "weak"
    tasks, pub = load_tasks(weak / "hidden.jsonl", weak / "public.jsonl")
    refs = load_references(weak / "reference.jsonl")
    report = check_suite(tasks, pub, refs, sandbox, runs=20)
    expected = json.loads((weak / "expected.json").read_text())["findings"]
    got = [f for f in report.findings]
    assert len(got) == len(expected), render_text(report)
    for want, f in zip(expected, got, strict=True):
        assert (f.fn, f.code, f.severity, list(f.cases)) == (
            want["fn"],
            want["code"],
            want["severity"],
            want["cases"],
        ), render_text(report)
        assert want["contains"] in f.message
    assert not report.trustworthy
    assert {t.fn: t.trustworthy for t in report.tasks} == {
        "dedupe": False,
        "is_adult": False,
        "is_odd": False,
    }
    flaky = report.tasks[2].reference.flaky[0]
    assert {o for o, _ in flaky.outcomes} == {"ok", "wrong"}
    assert report.tasks[2].mutation.skipped is not None  # a flaky oracle judges no mutant
    survivor = report.tasks[1].mutation.survived[0].mutant
    assert "-    return age >= 18\n+    return age >= 17\n" in survivor.diff


def test_missing_and_failing_reference_and_declared_equivalents(sandbox):
    cases = (
        make_case("inc", 1, expect=2),
        make_case("inc", 5, expect=7),  # wrong on purpose: the reference fails it
        make_case("inc", -1, expect=0),
    )
    tasks = {"inc": Task("inc", cases), "dec": Task("dec", (make_case("dec", 1, expect=0),))}
    code = "def inc(x):\n    return x + 1\n"
    refs = {"inc": Reference("inc", code, equivalent_mutants=("RET:2:12:none", "AOR:9:9:-"))}
    report = check_suite(tasks, {}, refs, sandbox, runs=3)
    codes = [(f.fn, f.code) for f in report.findings]
    assert ("dec", "SC001") in codes
    assert ("inc", "SC002") in codes
    assert ("inc", "SC007") in codes  # AOR:9:9:- does not exist
    inc = report.tasks[0]
    assert inc.reference.failing[0].case == 1 and inc.reference.trusted == (0, 2)
    statuses = {r.mutant.id: r.status for r in inc.mutation.results}
    assert statuses["RET:2:12:none"] == "equivalent"
    assert report.tasks[1].mutation.skipped.startswith("no reference")
    json.dumps(report.to_json())  # JSON-ready


def test_min_mutation_score_turns_survivors_into_warnings(sandbox, load_tasks, suites_dir):
    weak = suites_dir / "weak"
    tasks, pub = load_tasks(weak / "hidden.jsonl", weak / "public.jsonl")
    tasks = {"is_adult": tasks["is_adult"]}
    refs = load_references(weak / "reference.jsonl")
    report = check_suite(tasks, pub, refs, sandbox, runs=2, min_mutation_score=0.8)
    assert report.trustworthy
    assert [f.severity for f in report.findings] == ["warn"]


def test_looping_mutants_cost_the_floor_not_the_default_limit(sandbox):
    code = (
        "def count_down(n):\n"
        "    steps = 0\n"
        "    while n > 0:\n"
        "        n -= 1\n"
        "        steps += 1\n"
        "    return steps\n"
    )
    cases = tuple(make_case("count_down", n, expect=n) for n in (0, 1, 5))
    tasks = {"count_down": Task("count_down", cases)}
    refs = {"count_down": Reference("count_down", code)}
    report = check_suite(tasks, {}, refs, sandbox, runs=2, mutant_floor_s=0.2)
    mutation = report.tasks[0].mutation
    looping = [r for r in mutation.results if r.mutant.id == "DROP:4:9:pass"]
    assert looping and looping[0].status == "killed"
    assert report.seconds < 15


@pytest.mark.parametrize("runs", [0, -1])
def test_runs_must_be_positive(sandbox, runs):
    with pytest.raises(ValueError):
        check_suite({}, {}, {}, sandbox, runs=runs)
