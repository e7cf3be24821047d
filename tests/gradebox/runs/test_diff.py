"""`gradebox diff` on two real runs of the bundled examples, and the diff rules on small rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli.diff import diff
from gradebox.cli.grade import grade
from gradebox.runs.diff import diff_runs, failing_cases, format_diff

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"

# The new run changes the bundled samples like this:
CHANGED = {
    # a passing sample now divides with // : newly failing
    "mean-good": {
        "code": "def mean(xs):\n    if not xs:\n        raise ValueError('empty')\n"
        "    return sum(xs) // len(xs)\n"
    },
    # a failing sample is fixed: newly passing
    "dedupe-set-order": {"code": "def dedupe(xs):\n    return list(dict.fromkeys(xs))\n"},
    # still failing, now on cases 0-2 only (the bool case now raises TypeError)
    "even-int-not-bool": {
        "code": "def is_even(n):\n    if type(n) is not int:\n        raise TypeError('int')\n"
        "    return 1 if n % 2 == 0 else 0\n"
    },
    # still failing, for another reason: banned import -> syntax error
    "fib-shells-out": {"code": "import subprocess\ndef fib(n)\n    return 0\n"},
}
REMOVED = "split-two-blocks"
ADDED = {"id": "fib-memo", "fn": "fib", "code": "def fib(n):\n    return n\n"}


def _grade(tmp: Path, samples: Path, name: str) -> Path:
    out = tmp / f"{name}.jsonl"
    args = [
        "--hidden", str(EXAMPLES / "hidden.jsonl"),
        "--public", str(EXAMPLES / "public.jsonl"),
        "--samples", str(samples),
        "--out", str(out),
        "--no-static", "--no-judge", "--jobs", "2",
    ]  # fmt: skip
    res = CliRunner().invoke(grade, args)
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    old = _grade(tmp, EXAMPLES / "samples.jsonl", "old")
    lines = []
    for line in (EXAMPLES / "samples.jsonl").read_text().splitlines():
        sample = json.loads(line)
        if sample["id"] == REMOVED:
            continue
        if sample["id"] in CHANGED:
            sample = {"id": sample["id"], "fn": sample["fn"], **CHANGED[sample["id"]]}
        lines.append(json.dumps(sample))
    lines.append(json.dumps(ADDED))
    changed = tmp / "samples-new.jsonl"
    changed.write_text("\n".join(lines) + "\n")
    return old, _grade(tmp, changed, "new")


def test_diff_of_two_real_runs_exits_1_and_lists_every_change(runs):
    old, new = runs
    res = CliRunner().invoke(diff, [str(old), str(new), "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    assert data["regressed"] is True
    assert [c["id"] for c in data["newly_failing"]] == ["mean-good"]
    assert data["newly_failing"][0]["new"] == {
        "verdict": "fail",
        "reason": "hidden_tests",
        "failing_cases": [0, 1, 2],
    }
    assert [c["id"] for c in data["newly_passing"]] == ["dedupe-set-order"]
    assert [c["id"] for c in data["changed_cases"]] == ["even-int-not-bool"]
    cases = data["changed_cases"][0]
    assert (cases["old"]["failing_cases"], cases["new"]["failing_cases"]) == (
        [0, 1, 2, 3],
        [0, 1, 2],
    )
    assert [c["id"] for c in data["changed_reasons"]] == ["fib-shells-out"]
    reasons = data["changed_reasons"][0]
    assert (reasons["old"]["reason"], reasons["new"]["reason"]) == (
        "gate:banned_import",
        "gate:syntax",
    )
    assert data["added"] == ["fib-memo"] and data["removed"] == [REMOVED]
    assert data["counts"]["unchanged"] == 12


def test_diff_pass_at_k_deltas(runs):
    old, new = runs
    data = json.loads(CliRunner().invoke(diff, [str(old), str(new), "--json", "-k", "1,3"]).output)
    by = {(d["task"], d["k"]): d for d in data["passk"]}
    assert by[("mean", 1)]["old"] == pytest.approx(1 / 3) and by[("mean", 1)]["new"] == 0.0
    assert by[("dedupe", 1)]["delta"] == pytest.approx(1 / 3)
    assert by[("split_pair", 3)]["old"] == 1.0 and by[("split_pair", 3)]["new"] is None
    assert by[("split_pair", 3)]["delta"] is None  # 2 samples left: pass@3 is undefined
    assert by[(None, 1)]["delta"] == pytest.approx(by[(None, 1)]["new"] - by[(None, 1)]["old"])


def test_diff_table_is_readable(runs):
    old, new = runs
    res = CliRunner().invoke(diff, [str(old), str(new)])
    assert res.exit_code == 1
    out = res.output
    assert "newly failing 1   newly passing 1   failing on other cases 1" in out
    assert "NEWLY FAILING (1)" in out
    assert "mean-good" in out and "pass (ok)" in out and "fail (hidden_tests)" in out
    assert "- -> 0,1,2" in out
    assert "FAILING ON OTHER CASES (1)" in out and "0,1,2,3 -> 0,1,2" in out
    assert "ADDED (1)" in out and "REMOVED (1)" in out
    assert "mean over tasks" in out


def test_means_over_different_task_sets_say_so(runs):
    old, new = runs
    res = CliRunner().invoke(diff, [str(old), str(new), "-k", "3"])
    assert "(over 5 -> 4 tasks: not the same set)" in res.output
    data = json.loads(CliRunner().invoke(diff, [str(old), str(new), "-k", "3", "--json"]).output)
    mean = data["passk"][0]
    assert mean["task"] is None and (mean["old_tasks"], mean["new_tasks"]) == (5, 4)


def test_same_run_twice_exits_0(runs):
    old, _ = runs
    res = CliRunner().invoke(diff, [str(old), str(old)])
    assert res.exit_code == 0, res.output
    assert "unchanged 17" in res.output


def test_fixing_only_exits_0(runs):
    old, new = runs  # new -> old: mean-good passes again, dedupe-set-order fails again
    res = CliRunner().invoke(diff, [str(new), str(old), "--json"])
    data = json.loads(res.output)
    assert res.exit_code == 1 and [c["id"] for c in data["newly_failing"]] == ["dedupe-set-order"]


def test_bad_input_in_either_file_exits_2_with_file_and_line(tmp_path, runs):
    old, _ = runs
    bad = tmp_path / "bad.jsonl"
    bad.write_text(old.read_text().splitlines()[0] + "\n" + '{"id": "x", "fn": "f"}\n')
    res = CliRunner().invoke(diff, [str(bad), str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2
    assert f"{bad}:2: " in res.stderr and "'pass' is a required property" in res.stderr
    assert f"{tmp_path / 'missing.jsonl'}: no such file" in res.stderr


def test_help_has_an_example():
    res = CliRunner().invoke(diff, ["--help"])
    assert res.exit_code == 0 and "gradebox diff runs/yesterday/results.jsonl" in res.output
    assert "\\b" not in res.output


# --- rules on small rows ---------------------------------------------------------------


def _row(sid, verdict, reason, outcomes, fn="f"):
    return {"id": sid, "fn": fn, "pass": verdict == "pass", "verdict": verdict,
            "reason": reason, "outcomes": outcomes}  # fmt: skip


def test_pass_to_needs_review_is_a_change_not_a_regression():
    d = diff_runs(
        [_row("a", "pass", "ok", ["ok"])], [_row("a", "needs_review", "judge:mismatch", ["ok"])]
    )
    assert not d.regressed and [c.id for c in d.changed_reasons] == ["a"]


def test_needs_review_to_fail_is_newly_failing():
    d = diff_runs(
        [_row("a", "needs_review", "infra_error", [])],
        [_row("a", "fail", "hidden_tests", ["wrong"])],
    )
    assert d.regressed and [c.id for c in d.newly_failing] == ["a"]


def test_not_run_is_not_a_failing_case():
    assert failing_cases(
        _row("a", "fail", "hidden_tests", ["ok", "timeout", "not_run", "crash"])
    ) == (1, 3)


def test_a_changed_case_count_is_warned_about():
    d = diff_runs([_row("a", "fail", "hidden_tests", ["ok", "wrong"])],
                  [_row("a", "fail", "hidden_tests", ["ok", "wrong", "ok"])])  # fmt: skip
    assert d.unchanged == 1 and "2 hidden cases in the old run and 3" in d.warnings[0]


def test_control_characters_in_ids_are_escaped_in_the_table():
    d = diff_runs(
        [_row("a\x1b[2J", "pass", "ok", ["ok"])],
        [_row("a\x1b[2J", "fail", "hidden_tests", ["wrong"])],
    )
    table = format_diff(d)
    assert "\x1b" not in table and "a\\x1b[2J" in table
