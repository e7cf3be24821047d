"""People's labels against the judge: reading labels.jsonl, the figures, `gradebox judge agree`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradebox.cli import cli
from gradebox.errors import BadInput
from gradebox.grade import GateReport, Grade, TestsReport
from gradebox.judging.labels import Label, compare, read_labels
from gradebox.verdict import Verdict
from judge.types import JudgeResult

# The textbook table (kappa 0.4), judge as rows, people as columns:
#                  people match  people mismatch
#   judge match         20              5
#   judge mismatch      10             15
CELLS = [("match", "match", 20), ("match", "mismatch", 5), ("mismatch", "match", 10)]
CELLS += [("mismatch", "mismatch", 15)]


def _row(sid: str, judge: JudgeResult | None) -> dict:
    tests = TestsReport(("ok",), GateReport("ok", (), "ok"), "none", 1.0)
    return Grade(sid, "f", Verdict("pass", "ok"), tests, None, judge).to_row()


def _scored(verdict: str, score: int) -> JudgeResult:
    return JudgeResult(status="scored", verdict=verdict, scores={"INT001": score}, rubric="d@1")


def _fixture() -> tuple[list[dict], list[Label]]:
    rows, labels = [], []
    for judge_says, people_say, count in CELLS:
        for _ in range(count):
            sid = f"s{len(rows)}"
            # scores: the judge gives 4 or 2, people agree but for every fifth item (off by one)
            judge_score = 4 if judge_says == "match" else 2
            people_score = judge_score + (1 if len(rows) % 5 == 0 else 0)
            rows.append(_row(sid, _scored(judge_says, judge_score)))
            labels.append(Label(sid, people_say, {"INT001": people_score}))
    return rows, labels


def test_compare_gives_the_table_kappa_pi_leniency_and_per_criterion_figures():
    rows, labels = _fixture()
    rows.append(_row("unjudged", JudgeResult(status="unavailable", reason_code="timeout")))
    labels += [Label("unjudged", "match"), Label("ghost", "match")]
    found = compare(labels, rows)
    assert found.verdicts.table == ((20, 5), (10, 15))
    assert found.verdicts.kappa == pytest.approx(0.4)
    assert found.verdicts.pi == pytest.approx(0.195 / 0.495)
    assert 0.4 in found.verdicts.kappa_ci
    assert (found.leniency.k, found.leniency.n) == (5, 20)  # judge match | people mismatch
    assert (found.strictness.k, found.strictness.n) == (10, 30)
    assert (found.unscored, found.unknown_ids, found.labels) == (1, ("ghost",), 52)
    (criterion,) = found.criteria
    assert criterion.criterion == "INT001" and criterion.n == 50
    assert criterion.exact.k == 40  # one in five is off by one
    # quadratic-weighted kappa computed another way: 1 - E[(a-b)^2] / E over independent
    # pairs [(a_i - b_j)^2] (the (k-1)^2 scaling cancels)
    pairs = [
        (r["judge"]["scores"]["INT001"], lb.scores["INT001"])
        for r, lb in zip(rows[:50], labels[:50], strict=True)
    ]
    observed = sum((a - b) ** 2 for a, b in pairs) / 50
    expected = sum((a - b) ** 2 for a, _ in pairs for _, b in pairs) / 50**2
    assert criterion.weighted_kappa == pytest.approx(1 - observed / expected)
    assert criterion.weighted_kappa in criterion.interval


def test_too_few_labels_give_a_note_not_a_number():
    rows = [_row(f"s{i}", _scored("match", 4)) for i in range(4)]
    labels = [Label(f"s{i}", "match", {"INT001": 4}) for i in range(4)]
    found = compare(labels, rows)
    assert found.verdicts.kappa is None and found.verdicts.note == "too few items (n=4 < 10)"
    assert found.criteria[0].weighted_kappa is None and found.criteria[0].exact.k == 4


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_bad_label_lines_are_reported_with_file_and_line(tmp_path):
    path = _write(
        tmp_path / "labels.jsonl",
        [
            '{"id": "s1", "verdict": "match"}',
            "{nope",
            '{"id": "s2", "verdict": "maybe"}',
            '{"id": "s3"}',
            '{"id": "s4", "scores": {"INT001": 4.5}}',
            '{"id": "s1", "verdict": "mismatch"}',
            '{"id": "s5", "verdict": "match", "score": 3}',
            "[1, 2]",
        ],
    )
    with pytest.raises(BadInput) as info:
        read_labels(path)
    problems = info.value.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7, 8)]
    assert "not JSON" in problems[0] and "'match' or 'mismatch'" in problems[1]
    assert "needs a 'verdict' or 'scores'" in problems[2] and "integer" in problems[3]
    assert "already labelled on line 1" in problems[4] and "unknown field" in problems[5]


def _results(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _labels_file(tmp_path: Path, labels: list[Label]) -> Path:
    return _write(
        tmp_path / "labels.jsonl",
        [
            json.dumps({"id": lb.sample_id, "verdict": lb.verdict, "scores": lb.scores})
            for lb in labels
        ],
    )


def test_judge_agree_command_prints_json_and_text(tmp_path):
    rows, labels = _fixture()
    results, labels_path = _results(tmp_path, rows), _labels_file(tmp_path, labels)
    runner = CliRunner()
    out = runner.invoke(
        cli, ["judge", "agree", "--labels", str(labels_path), str(results), "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["verdicts"]["table"] == [[20, 5], [10, 15]] and data["verdicts"]["kappa"] == 0.4
    text = runner.invoke(cli, ["judge", "agree", "--labels", str(labels_path), str(results)])
    assert (
        "kappa 0.40 [" in text.output
        and "leniency P(judge match | people: mismatch) 5/20" in text.output
    )
    assert "INT001" in text.output


def test_judge_agree_min_kappa_is_a_check(tmp_path):
    rows, labels = _fixture()
    args = [
        "judge",
        "agree",
        "--labels",
        str(_labels_file(tmp_path, labels)),
        str(_results(tmp_path, rows)),
    ]
    assert CliRunner().invoke(cli, [*args, "--min-kappa", "0.3"]).exit_code == 0
    assert CliRunner().invoke(cli, [*args, "--min-kappa", "0.5"]).exit_code == 1


def test_judge_agree_bad_input_exits_2_naming_the_line(tmp_path):
    rows, _ = _fixture()
    labels = _write(tmp_path / "labels.jsonl", ['{"id": "s0", "verdict": "yes"}'])
    out = CliRunner().invoke(
        cli, ["judge", "agree", "--labels", str(labels), str(_results(tmp_path, rows))]
    )
    assert out.exit_code == 2 and f"{labels}:1: 'verdict' must be" in out.output
    help_text = CliRunner().invoke(cli, ["judge", "agree", "--help"]).output
    assert "Example:" in help_text and "--min-kappa" in help_text
