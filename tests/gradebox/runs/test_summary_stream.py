"""The summary's judge figures are counted row by row and keep only the rows they count."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from gradebox.judging import flip_rates, invariance, panel, versus_tests
from gradebox.runs import summary as summary_module
from gradebox.runs.summary import summarize

GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"


def _judged_rows() -> list[dict]:
    base = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    judges = [
        {"status": "skipped", "verdict": None, "scores": {}, "cache_hit": False, "attempts": 0},
        {"status": "scored", "verdict": "match", "scores": {"c1": 1}, "cache_hit": True,
         "attempts": 1, "system_fingerprint": "fp1"},
        {"status": "scored", "verdict": "mismatch", "scores": {"c1": 0, "c2": 1},
         "attempts": 3, "system_fingerprint": "fp2",
         "repeat": {"scored": 3, "verdicts": ["match", "mismatch"], "flipped": True,
                    "criteria_flipped": ["c2"]}},
        {"status": "needs_review", "verdict": None, "scores": {"c1": 1},
         "repeat": {"scored": 2, "verdicts": [None], "flipped": False}},
        {"status": "scored", "verdict": "match", "scores": {"c1": 1},
         "panel": [{"model": "m1", "verdict": "match"}, {"model": "m2", "verdict": "mismatch"}],
         "invariance": [{"probe": "rename", "status": "scored", "verdict": "mismatch",
                         "flipped": True}]},
        {"status": "unavailable", "verdict": None, "attempts": 2},
    ]  # fmt: skip
    rows = []
    for k in range(60):
        row = base[k % len(base)] | {"id": f"s{k}"}
        row["judge"] = judges[k % len(judges)] | {"rationale": "x" * 50}
        rows.append(row)
    return rows


def _reference(rows: list[dict]) -> dict:
    """The judge figures as they were computed: every judged row kept whole."""
    judged = [r for r in rows if r.get("judge")]
    js = [r["judge"] for r in judged]
    statuses = Counter(j["status"] for j in js)
    flips = flip_rates(judged)
    return {
        "rows": len(js),
        **{k: statuses.get(k, 0) for k in ("scored", "needs_review", "unavailable", "skipped")},
        "cache_hits": sum(1 for j in js if j.get("cache_hit")),
        "retries": sum(max(0, (j.get("attempts") or 0) - 1) for j in js),
        "mismatches": sum(1 for j in js if j["status"] == "scored" and j["verdict"] == "mismatch"),
        "agreement": versus_tests(judged).to_json(),
        "flips": None if flips is None else flips.to_json(),
        "invariance": {p: f.to_json() for p, f in invariance(judged).items()},
        "panel": {m: v.to_json() for m, v in panel(judged).items()},
        "fingerprints": dict(
            Counter(
                str(j["system_fingerprint"])
                for j in js
                if j.get("system_fingerprint") and not j.get("cache_hit")
            )
        ),
    }


def test_judge_figures_match_those_of_every_row_kept_whole() -> None:
    rows = _judged_rows()
    got = summarize(iter(rows))["judge"]
    want = _reference(rows)
    assert got == want
    assert want["flips"] is not None and want["panel"] and want["invariance"]
    assert want["agreement"]["n"] > 0


def test_a_skipped_judge_keeps_no_row() -> None:
    tally = summary_module._JudgeTally()
    for row in _judged_rows():
        if row["judge"]["status"] in ("skipped", "unavailable"):
            tally.add(row)
    assert tally.rows == 20 and tally.kept == []
