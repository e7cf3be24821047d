"""pass@k: the estimator against exact binomials, its invariants, per-task figures, the CLI."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from gradebox.cli.passk import passk
from gradebox.runs.passk import estimate, format_passk, parse_ks, pass_at_k


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


# (n, c, k, expected) worked out by hand.
HAND = [
    (1, 0, 1, 0.0),
    (1, 1, 1, 1.0),
    (2, 1, 1, 0.5),
    (2, 1, 2, 1.0),  # both samples drawn: the passing one is among them
    (3, 1, 2, 2 / 3),  # 1 - C(2,2)/C(3,2) = 1 - 1/3
    (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    (10, 3, 5, 11 / 12),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
    (10, 0, 10, 0.0),
    (10, 10, 3, 1.0),
    (200, 1, 1, 0.005),
    (200, 1, 100, 0.5),  # half of the samples drawn
]


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"), HAND, ids=[f"n{n}-c{c}-k{k}" for n, c, k, _ in HAND]
)
def test_hand_made_cases(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    assert float(exact(n, c, k)) == pytest.approx(expected, abs=1e-12)


def test_k_above_n_is_undefined_never_one():
    assert pass_at_k(3, 3, 4) is None
    assert pass_at_k(3, 0, 10) is None
    assert pass_at_k(0, 0, 1) is None


def test_large_n_needs_no_huge_binomials():
    # C(100000, 50000) has ~30000 digits; the product form stays a float computation.
    value = pass_at_k(100_000, 1000, 50_000)
    assert value is not None and 0.99 < value <= 1.0
    assert pass_at_k(100_000, 1, 1) == 1e-5


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (-1, 0, 1)])
def test_invalid_arguments_raise(n, c, k):
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)


@st.composite
def nck(draw, max_n=400):
    n = draw(st.integers(1, max_n))
    c = draw(st.integers(0, n))
    k = draw(st.integers(1, n))
    return n, c, k


@given(nck())
def test_bounds(args):
    value = pass_at_k(*args)
    assert value is not None and 0.0 <= value <= 1.0


@given(nck())
def test_monotonic_non_decreasing_in_k(args):
    n, c, k = args
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k)


@given(nck())
def test_monotonic_non_decreasing_in_c(args):
    n, c, k = args
    if c < n:
        assert pass_at_k(n, c + 1, k) >= pass_at_k(n, c, k)


@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_k1_equals_c_over_n(n_c):
    n, c = n_c
    assert pass_at_k(n, c, 1) == c / n


@given(nck(max_n=60))
def test_matches_exact_binomials_on_small_n(args):
    assert pass_at_k(*args) == pytest.approx(float(exact(*args)), abs=1e-12)


def _rows(spec):
    """spec: {fn: [(pass, timeout, infra), ...]} -> results rows."""
    rows = []
    for fn, samples in spec.items():
        for i, (ok, timeout, infra) in enumerate(samples):
            rows.append(
                {
                    "id": f"{fn}-{i}",
                    "fn": fn,
                    "pass": ok,
                    "verdict": "pass" if ok else ("needs_review" if infra else "fail"),
                    "reason": "ok" if ok else ("infra_error" if infra else "hidden_tests"),
                    "outcomes": ["ok"] if ok else ["timeout" if timeout else "wrong"],
                    "timeouts": [0] if timeout else [],
                    "infra_error": "worker died" if infra else None,
                }
            )
    return rows


SPEC = {
    "a": [(True, False, False), (False, True, False), (False, False, True), (True, False, False)],
    "b": [(False, False, False), (True, False, False)],
    "c": [(False, True, False)] * 6,
}


def test_per_task_and_mean_with_coverage():
    report = estimate(_rows(SPEC), [1, 3, 5])
    tasks = {t.task: t for t in report.tasks}
    assert (tasks["a"].n, tasks["a"].c, tasks["a"].timeouts, tasks["a"].infra_errors) == (
        4,
        2,
        1,
        1,
    )
    assert tasks["a"].pass_at[1] == 0.5
    assert tasks["a"].pass_at[3] == pytest.approx(1.0)
    assert tasks["a"].pass_at[5] is None
    assert tasks["b"].pass_at[3] is None
    assert tasks["c"].pass_at[5] == 0.0
    assert (report.mean[1].value, report.mean[1].tasks, report.mean[1].of) == (
        pytest.approx((0.5 + 0.5 + 0.0) / 3),
        3,
        3,
    )
    assert report.mean[5].tasks == 1 and report.mean[5].value == 0.0


def test_exclude_infra_removes_infra_samples_from_n_but_still_counts_them():
    report = estimate(_rows(SPEC), [1], exclude_infra=True)
    a = next(t for t in report.tasks if t.task == "a")
    assert (a.n, a.c, a.infra_errors, a.excluded) == (3, 2, 1, 1)
    assert a.pass_at[1] == pytest.approx(2 / 3)


def test_undefined_is_null_in_json_and_na_in_the_table():
    report = estimate(_rows(SPEC), [1, 5])
    data = report.to_json()
    assert data["tasks"]["b"]["pass@5"] is None
    assert data["mean"]["pass@5"] == {"value": 0.0, "tasks": 1, "of": 3}
    table = format_passk(report)
    assert "n/a" in table and "1/3" in table


@given(st.permutations(_rows(SPEC)))
def test_order_of_rows_does_not_matter(rows):
    assert estimate(rows, [1, 2]).to_json() == estimate(_rows(SPEC), [1, 2]).to_json()


@pytest.mark.parametrize(
    ("text", "ks"), [("1", (1,)), ("10,1,5", (1, 5, 10)), (" 1 , 5,5,", (1, 5))]
)
def test_parse_ks(text, ks):
    assert parse_ks(text) == ks


@pytest.mark.parametrize("text", ["", "0", "1,x", "-1", "1.5"])
def test_parse_ks_rejects(text):
    with pytest.raises(ValueError):
        parse_ks(text)


# --- the command -----------------------------------------------------------------------


def _write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_table(tmp_path):
    path = _write_rows(tmp_path / "results.jsonl", _rows(SPEC))
    res = CliRunner().invoke(passk, [str(path), "-k", "1,5,10"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[1].split() == [
        "task",
        "n",
        "c",
        "timeouts",
        "infra",
        "pass@1",
        "pass@5",
        "pass@10",
    ]
    assert lines[2].split() == ["a", "4", "2", "1", "1", "0.500", "n/a", "n/a"]
    assert "tasks covered" in res.output and "0/3" in res.output


def test_cli_json_and_exclude_infra(tmp_path):
    path = _write_rows(tmp_path / "results.jsonl", _rows(SPEC))
    res = CliRunner().invoke(passk, [str(path), "-k", "1,5", "--json", "--exclude-infra"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["k"] == [1, 5] and data["exclude_infra"] is True
    assert data["tasks"]["a"]["n"] == 3 and data["tasks"]["a"]["pass@5"] is None


def test_cli_reads_a_run_directory(tmp_path):
    _write_rows(tmp_path / "results.jsonl", _rows(SPEC))
    res = CliRunner().invoke(passk, [str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["samples"] == 12


def test_cli_bad_lines_exit_2_with_file_and_line(tmp_path):
    rows = _rows(SPEC)[:2]
    path = tmp_path / "results.jsonl"
    text = (
        json.dumps(rows[0]) + "\n{not json\n" + json.dumps({**rows[1], "verdict": "maybe"}) + "\n"
    )
    path.write_text(text + json.dumps(rows[0]) + "\n")
    res = CliRunner().invoke(passk, [str(path)])
    assert res.exit_code == 2
    assert f"{path}:2: invalid JSON" in res.stderr
    assert f"{path}:3: verdict" in res.stderr
    assert f"{path}:4: id: sample id 'a-0' already has a row on line 1" in res.stderr


def test_cli_missing_file_and_bad_k_exit_2(tmp_path):
    res = CliRunner().invoke(passk, [str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.stderr
    path = _write_rows(tmp_path / "results.jsonl", _rows(SPEC))
    res = CliRunner().invoke(passk, [str(path), "-k", "0"])
    assert res.exit_code == 2 and "k must be an integer >= 1" in res.output


def test_cli_help_has_an_example():
    res = CliRunner().invoke(passk, ["--help"])
    assert res.exit_code == 0 and "gradebox passk results.jsonl -k 1,5,10" in res.output
    assert "\\b" not in res.output, "click's no-rewrap marker must not show"


def test_random_runs_match_exact_mean():
    rng = random.Random(7)
    spec = {
        f"t{i}": [(rng.random() < 0.4, False, False) for _ in range(rng.randint(1, 12))]
        for i in range(20)
    }
    rows = _rows(spec)
    report = estimate(rows, [3])
    expected = [float(exact(t.n, t.c, 3)) for t in report.tasks if t.n >= 3]
    assert report.mean[3].value == pytest.approx(sum(expected) / len(expected), abs=1e-12)
    assert report.mean[3].tasks == len(expected)
