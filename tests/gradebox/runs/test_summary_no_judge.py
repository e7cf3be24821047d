"""A run without a judge gets the judge's figures of no rows without loading them.

``gradebox.runs.summary`` writes those figures out (a tests-only run then never
imports :mod:`gradebox.judging`, ~10 ms of its start): they must stay exactly
what :mod:`gradebox.judging` computes for no rows.
"""

from __future__ import annotations

from typing import Any

from gradebox.judging import flip_rates, invariance, panel, versus_tests
from gradebox.runs.summary import summarize

ROW: dict[str, Any] = {
    "id": "a",
    "fn": "inc",
    "task": "inc",
    "pass": True,
    "verdict": "pass",
    "reason": "ok",
    "outcomes": ["ok"],
    "timeouts": [],
    "static": None,
    "judge": None,
}


def _figures_of_no_rows() -> dict[str, Any]:
    flips = flip_rates([])
    return {
        "agreement": versus_tests([]).to_json(),
        "flips": None if flips is None else flips.to_json(),
        "invariance": {p: f.to_json() for p, f in invariance([]).items()},
        "panel": {m: f.to_json() for m, f in panel([]).items()},
    }


def test_a_run_without_a_judge_has_the_judging_figures_of_no_rows() -> None:
    for rows in ([], [ROW], [ROW, dict(ROW, id="b", judge={"status": "skipped"})]):
        judge = summarize(rows)["judge"]
        assert {k: judge[k] for k in _figures_of_no_rows()} == _figures_of_no_rows()


def test_the_figures_of_one_summary_are_not_shared_with_the_next() -> None:
    first = summarize([ROW])["judge"]
    first["agreement"]["n"] = 99
    first["invariance"]["renamed"] = {}
    assert summarize([ROW])["judge"]["agreement"]["n"] == 0
    assert summarize([ROW])["judge"]["invariance"] == {}
