"""--judge-repeat: N judgements per item, the majority on the row, flip rates with intervals.

The flipping server is real (``Flipper`` in conftest: a seeded random 20 % of items
answer ``mismatch`` once in three), and the flip rate is measured from the rows by
the same function the summary uses.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

import rubrics
from gradebox.grade import GateReport, Grade, TestsReport
from gradebox.judging import flip_rates
from gradebox.verdict import Verdict, decide
from judge.repeat import combine
from judge.types import JudgeResult, Repeat


def _items(item, n):
    return [
        item(sample_id=f"s{i}", code=f"def is_even(n):\n    return n % 2 == 0 or {i} < 0\n")
        for i in range(n)
    ]


def test_a_server_flipping_20_percent_is_measured_at_its_rate(server, make_judge, item, quirks):
    flipper = quirks.Flipper(share=0.2, seed=15)
    server.responder = flipper
    results = make_judge(repeat=3, concurrency=8).judge_many(_items(item, 200))
    assert len(server.requests) == 600
    rows = [{"id": f"s{i}", "judge": r.to_row()} for i, r in enumerate(results)]
    flips = flip_rates(rows)
    assert flips is not None and flips.verdict is not None
    # what was measured is exactly what the server did, and 0.2 is inside the interval
    assert flips.verdict.k == len(flipper.flipping) and flips.verdict.n == 200
    assert 0.2 in flips.verdict.interval
    low, high = flips.verdict.interval.low, flips.verdict.interval.high
    assert 0.13 < low < 0.2 < high < 0.28  # Wilson, n=200: about +-0.055
    assert flips.to_json()["verdict"]["ci"] == [round(low, 4), round(high, 4)]
    # per judgement: each flipping item has one minority vote of three
    assert (flips.per_judgement.k, flips.per_judgement.n) == (len(flipper.flipping), 600)
    # every flipped item carries the majority and the agreement; the rest are unanimous
    flipped = [r for r in results if r.repeat is not None and r.repeat.flipped]
    assert len(flipped) == flips.verdict.k
    for r in flipped:
        assert r.verdict == "match" and r.repeat.agreement == pytest.approx(2 / 3)
        assert sorted(r.repeat.verdicts) == ["match", "match", "mismatch"]
        assert r.unscored and not r.mismatch  # a passing sample goes to needs_review
    assert all(r.repeat.agreement == 1.0 for r in results if not r.repeat.flipped)


def test_a_server_flipping_20_percent_of_judgements_measures_0_2_per_judgement(
    server, make_judge, item, quirks
):
    flipper = quirks.JudgementFlipper(share=0.2, seed=27)
    server.responder = flipper
    n, repeats = 60, 5
    results = make_judge(repeat=repeats, concurrency=8).judge_many(_items(item, n))
    rows = [{"id": f"s{i}", "judge": r.to_row()} for i, r in enumerate(results)]
    flips = flip_rates(rows)
    per_judgement, per_item = flips.per_judgement, flips.verdict
    # What was measured is what the server did: an item's minority is its flips, or its
    # non-flips where flips won.
    minority = sum(min(k, repeats - k) for k in flipper.flips.values())
    assert (per_judgement.k, per_judgement.n) == (minority, n * repeats)
    assert 0.2 in per_judgement.interval, per_judgement
    # Per item is another question: with 5 repeats most items see at least one flip.
    assert per_item.n == n and 0.2 not in per_item.interval and per_item.value > 0.6, per_item
    data = flips.to_json()
    assert data["verdict_flip_rate_per_item"] == data["verdict"] == per_item.to_json()
    assert data["verdict_flip_rate_per_judgement"] == per_judgement.to_json()
    from gradebox.runs.summary import format_summary, summarize

    summary = summarize(
        [{**_graded(r), "id": f"s{i}", "fn": "is_even"} for i, r in enumerate(results)]
    )
    text = format_summary(summary, seconds=1.0, backend="none")
    assert f"per judgement (minority votes/all votes) {minority}/{n * repeats}" in text
    assert f"per item (items whose verdicts disagree/items) {per_item.k}/{n}" in text


def _graded(result):
    grade = Grade("x", "is_even", Verdict("pass", "ok"), _tests_report(["ok"]), None, result)
    return grade.to_row()


def test_repeats_bypass_the_cache_which_keeps_all_n(server, make_judge, item, tmp_path):
    cache = tmp_path / "j.sqlite"
    items = _items(item, 2)
    first = make_judge(repeat=3, cache_path=cache).judge_many(items)
    again = make_judge(repeat=3, cache_path=cache).judge_many(items)
    assert len(server.requests) == 12  # asked again: a repeat never comes from the cache
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 6
    assert not any(r.cache_hit for r in [*first, *again])
    assert first[0].attempts == 3 and first[0].repeat.n == 3
    # a single judgement later is the same request as repeat 0: its stored reply serves
    single = make_judge(cache_path=cache).judge_one(items[0])
    assert single.cache_hit and single.repeat is None and len(server.requests) == 12


def _scored(verdict, scores, **kw):
    return JudgeResult(status="scored", verdict=verdict, scores=scores, rubric="default@1", **kw)


def test_combine_takes_the_majority_and_the_low_median():
    rubric = rubrics.load("default")
    ids = list(rubric.criterion_ids)
    a = _scored("match", dict.fromkeys(ids, 5), attempts=1, latency_ms=10.0)
    b = _scored("match", dict.fromkeys(ids, 4), attempts=2, latency_ms=20.0)
    c = _scored("mismatch", dict.fromkeys(ids, 1), attempts=1, latency_ms=5.0)
    out = combine([a, c, b], rubric)
    assert out.verdict == "match" and out.scores == dict.fromkeys(ids, 4)
    assert out.weighted == rubric.weighted(out.scores)
    assert out.repeat == Repeat(("match", "mismatch", "match"), 3, 2 / 3, True, tuple(ids))
    assert (out.attempts, out.latency_ms) == (4, 35.0)


def test_a_tie_is_a_mismatch_and_flipped():
    rubric = rubrics.load("default")
    scores = dict.fromkeys(rubric.criterion_ids, 3)
    out = combine([_scored("match", scores), _scored("mismatch", scores)], rubric)
    assert out.verdict == "mismatch" and out.repeat.flipped and out.repeat.agreement == 0.5
    assert out.repeat.criteria_flipped == ()


def test_no_scored_repeat_keeps_the_protocol_break():
    rubric = rubrics.load("default")
    broke = JudgeResult(status="needs_review", reason_code="parse_failure", raw="prose")
    down = JudgeResult(status="unavailable", reason_code="timeout")
    out = combine([down, broke, down], rubric)
    assert out.status == "needs_review" and out.raw == "prose"
    assert out.repeat == Repeat((None, None, None), 0, None, False)


def _tests_report(outcomes):
    return TestsReport(
        outcomes=tuple(outcomes), gate=GateReport("ok", (), "ok"), claim="none", latency_ms=1.0
    )


def test_a_flip_sends_a_pass_to_review_and_never_rescues_a_failure():
    flipped = replace(
        _scored("match", {"INT001": 5}),
        repeat=Repeat(("match", "mismatch", "match"), 3, 2 / 3, True),
    )
    steady = replace(flipped, repeat=Repeat(("match",) * 3, 3, 1.0, False))
    assert decide(_tests_report(["ok"]), None, flipped) == Verdict("needs_review", "judge:unscored")
    assert decide(_tests_report(["ok"]), None, steady) == Verdict("pass", "ok")
    assert decide(_tests_report(["wrong"]), None, flipped).verdict == "fail"


def test_rows_round_trip_with_and_without_repeat():
    base = _scored("match", {"INT001": 5})
    for judge in (base, replace(base, repeat=Repeat(("match", None), 1, 1.0, False, ("INT001",)))):
        grade = Grade("s1", "f", Verdict("pass", "ok"), _tests_report(["ok"]), None, judge)
        row = grade.to_row()
        assert ("repeat" in row["judge"]) is (judge.repeat is not None)
        assert Grade.from_row(row).to_row() == row


@pytest.mark.parametrize(
    "bad",
    [
        {"n": 2, "verdicts": ["match"], "scored": 1, "agreement": 1.0, "flipped": False},
        {"n": 1, "verdicts": ["maybe"], "scored": 1, "agreement": 1.0, "flipped": False},
        {"n": 1, "verdicts": ["match"], "scored": 1, "agreement": "all", "flipped": False},
        {"n": 1, "verdicts": ["match"], "scored": 1, "agreement": 1.0, "flipped": 0},
        "three",
    ],
)
def test_a_malformed_repeat_on_a_row_is_refused(bad):
    row = _scored("match", {"INT001": 5}).to_row()
    if isinstance(bad, dict):
        bad = {"criteria_flipped": [], **bad}
    row["repeat"] = bad
    with pytest.raises(ValueError):
        JudgeResult.from_row(row)


# -- a panel of models ----------------------------------------------------------------------------


def test_a_panel_keeps_the_majority_and_a_split_is_unscored():
    from judge.repeat import combine_panel
    from judge.types import PanelVote

    rubric = rubrics.load("default")
    scores = dict.fromkeys(rubric.criterion_ids, 4)
    votes = [("a", _scored("match", scores)), ("b", _scored("match", scores))]
    unanimous = combine_panel(votes, rubric)
    assert unanimous.verdict == "match" and not unanimous.split and not unanimous.unscored
    assert unanimous.model == "a,b" and unanimous.repeat is None
    split = combine_panel([*votes, ("c", _scored("mismatch", scores))], rubric)
    assert split.verdict == "match" and split.split and split.unscored
    assert split.panel[2] == PanelVote("c", "scored", "mismatch", False)
    wobbly = replace(votes[1][1], repeat=Repeat(("match", "mismatch", "match"), 3, 2 / 3, True))
    assert combine_panel([votes[0], ("b", wobbly)], rubric).split  # a member's own flip
    down = JudgeResult(status="unavailable", reason_code="timeout")
    partial = combine_panel([*votes, ("c", down)], rubric)
    assert not partial.split and partial.panel[2].verdict is None
    row = partial.to_row()
    assert JudgeResult.from_row(row).to_row() == row


def _repeated_rows():
    rubric = rubrics.load("default")
    scores = dict.fromkeys(rubric.criterion_ids, 4)
    wobbly = combine(
        [_scored("match", scores), _scored("mismatch", scores), _scored("match", scores)], rubric
    )
    steady = combine([_scored("match", scores)] * 3, rubric)
    return [
        Grade(
            f"s{i}",
            "is_even",
            decide(_tests_report(["ok"]), None, j),
            _tests_report(["ok"]),
            None,
            j,
        )
        for i, j in enumerate([wobbly, steady])
    ]


def test_both_flip_rates_are_in_the_html_report_and_judge_agree(tmp_path):
    import json

    from click.testing import CliRunner

    from gradebox.cli import cli
    from gradebox.reports.html import render_html

    grades = _repeated_rows()
    page = render_html(grades, None)
    assert "verdict flip rate per judgement (minority votes / all votes) <b>1/6</b>" in page
    assert "per item (items whose repeated verdicts disagree / items) <b>1/2</b>" in page
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(g.to_row()) + "\n" for g in grades))
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "s0", "verdict": "match"}\n{"id": "s1", "verdict": "match"}\n')
    args = ["judge", "agree", "--labels", str(labels), str(results)]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "verdict flip rate per judgement (minority/all votes) 1/6 0.17" in text.output
    assert "verdict flip rate per item (items that flipped/items) 1/2 0.50" in text.output
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert data["flips"]["verdict_flip_rate_per_judgement"]["k"] == 1
    assert data["flips"]["verdict_flip_rate_per_item"]["n"] == 2
