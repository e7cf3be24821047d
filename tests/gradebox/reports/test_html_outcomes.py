"""The HTML report in words: every outcome tag, not-run apart from failed, every failure open.

The explained cases here come from the grader's own code (``judge_case`` and the
pipeline's ``--explain`` builder) over one observation of every status the
sandbox can report, so a new status or outcome without words fails here.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import get_args

import pytest

from gradebox.grade import Grade
from gradebox.pipeline.tests import _explain
from gradebox.reports.html import render_html
from gradebox.reports.words import (
    OBSERVED_WORDS,
    OUTCOME_WORDS,
    REASON_WORDS,
    VALUE_CAP,
    got_words,
    value_words,
)
from gradebox.verdict import Reason
from judge.types import Issue, JudgeResult
from sandbox.types import (
    CaseOutcome,
    Observation,
    ObservationStatus,
    RaisedInfo,
    RunResult,
    make_case,
)

GOLDEN = Path(__file__).resolve().parents[2] / "cases" / "golden" / "results.jsonl"
PAYLOAD = "</script><img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def golden():
    rows = {}
    for line in GOLDEN.read_text().splitlines():
        row = json.loads(line)
        rows.setdefault(row["id"], row)
    return rows


def _observation(status: ObservationStatus, text: str = "x") -> Observation:
    """One observation of ``status`` as the sandbox reports it."""
    if status == "returned":
        return Observation("returned", value=text)
    if status == "raised":
        return Observation("raised", raised=RaisedInfo("builtins.KeyError", (), text))
    return Observation(status, detail="" if status == "not_run" else "detail")


def _every_tag(text: str = "x"):
    """Cases and observations giving every outcome, through the grader's comparison."""
    cases, observations = [], []
    for status in get_args(ObservationStatus):
        for case in (make_case("f", 1, expect=2), make_case("f", 1, error="ValueError")):
            cases.append(case)
            observations.append(_observation(status, text))
    return cases, RunResult(tuple(observations))


def _row(base, entries, *, id="tags", **more):
    outcomes = [e["outcome"] for e in entries] + ["ok"]
    failed = [i for i, o in enumerate(outcomes) if o not in ("ok", "timeout", "not_run")]
    timeouts = [i for i, o in enumerate(outcomes) if o == "timeout"]
    row = base | {"id": id, "outcomes": outcomes, "failed": failed, "timeouts": timeouts}
    row |= {"pass": False, "verdict": "fail", "reason": "hidden_tests", "explain": entries}
    return row | more


class _Text(HTMLParser):
    """What a reader sees: text, and titles (hover) — not class names."""

    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_starttag(self, tag, attrs):
        self.parts += [v for k, v in attrs if k in ("title", "aria-label") and v]

    def handle_data(self, data):
        self.parts.append(data)


def _seen(html):
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def _sample(text, sample_id):
    start = text.index(f'<span class="id">{sample_id}</span>')
    return text[start : text.index("</details>", text.index('<div class="body">', start))]


def test_every_vocabulary_has_words_for_every_tag():
    assert set(OUTCOME_WORDS) == set(get_args(CaseOutcome))
    assert set(OBSERVED_WORDS) == set(get_args(ObservationStatus))
    assert set(REASON_WORDS) == set(get_args(Reason))
    for words in (*OUTCOME_WORDS.values(), *REASON_WORDS.values()):
        assert "_" not in words and ":" not in words


def test_every_outcome_the_grader_emits_is_shown_in_words(golden):
    cases, run = _every_tag()
    entries = _explain(cases, run)
    emitted = {e["outcome"] for e in entries} | {"ok"}
    assert emitted == set(get_args(CaseOutcome)), "a new outcome needs an observation here"
    text = render_html([Grade.from_row(_row(golden["dedupe-hangs"], entries))], None)
    body = _sample(text, "tags")
    cells = re.findall(r'<span class="case o-(\w+)" title="case \d+: ([^"]+)">', body)
    assert {o: OUTCOME_WORDS[o] for o, _ in cells} == dict(cells)
    assert {o for o, _ in cells} == emitted
    seen = _seen(body)
    for outcome in emitted - {"ok"}:
        assert f"{OUTCOME_WORDS[outcome]} (" in seen, outcome  # its group: words and count
    raw = {o for o in emitted if OUTCOME_WORDS[o] != o} | {"unserializable"}
    # No tag appears raw, and no tagged JSON ({"timeout": ...}, {"raised": ...}) either.
    rest = seen
    for words in sorted(OUTCOME_WORDS.values(), key=len, reverse=True):
        rest = rest.replace(words, "")  # "wrong answer" holds the tag "wrong" as a word
    assert [t for t in raw if re.search(rf"\b{t}\b", rest)] == []
    assert '{"' not in seen and "builtins." not in seen
    assert "raised KeyError: x" in seen and "raises ValueError" in seen
    assert "timed out (detail)" in seen and "returned 'x'" in seen


def test_a_value_that_looks_like_an_observation_reads_as_a_value():
    assert got_words({"timeout": "case time limit"}, "wrong") == (
        "returned {'timeout': 'case time limit'}"
    )
    assert got_words({"timeout": "case time limit"}, "timeout") == "timed out (case time limit)"
    assert got_words({"$tuple": ["a", 1]}, "wrong") == "returned ('a', 1)"
    assert value_words({"$int": hex(7**20000)}) == f"<int of {(7**20000).bit_length()} bits>"
    assert value_words({"$opaque": "mod.Thing"}) == "<mod.Thing object>"
    assert len(value_words(["y" * 10**6] * 1000)) <= VALUE_CAP


def test_not_run_cases_are_apart_from_failed_ones(golden):
    row = golden["fib-exponential"]  # ok ok ok timeout not_run
    cases = [make_case("fib", n, expect=n) for n in range(5)]
    obs = [Observation("returned", value=n) for n in range(3)]
    obs += [Observation("timeout", detail="case time limit"), Observation("not_run")]
    entries = _explain(cases, RunResult(tuple(obs)))
    gated = golden["fib-syntax-error"]  # every case not run
    text = render_html([Grade.from_row(row | {"explain": entries}), Grade.from_row(gated)], None)
    body = _seen(_sample(text, "fib-exponential"))
    assert "Hidden cases (3 of 5 ok · 0 failed · 1 timed out · 1 not run)" in body
    assert "Cases not ok, explained (1)" in body
    assert "1 not-run case not explained" in body
    assert "not run (not failures) (1): case 4" in body
    gated_body = _seen(_sample(text, "fib-syntax-error"))
    assert "(0 of 5 ok · 0 failed · 5 not run)" in gated_body
    assert "No hidden case ran: syntax error." in gated_body
    card = re.search(r"<h3>hidden cases</h3>(.*?)</div></div>", text).group(1)
    assert "failed <b>0</b>" in card and "timed out <b>1</b>" in card
    assert "not run <b>6</b>" in card


def test_every_sample_that_did_not_pass_is_open_and_passes_are_closed(golden):
    rows = [r for r in golden.values() if not r["id"].endswith("-explained")]
    text = render_html([Grade.from_row(r) for r in rows], None)
    tags = re.findall(r'<details class="sample"( open)? data-verdict="(\w+)"', text)
    assert len(tags) == len(rows) and sum(v != "pass" for _, v in tags) > 1
    assert [bool(opened) for opened, _ in tags] == [v != "pass" for _, v in tags]


def test_hostile_text_from_explained_cases_and_the_judge_is_inert_and_bounded(golden):
    cases, run = _every_tag(PAYLOAD * 20_000)  # ~0.8 MB a value
    entries = [e | {"name": PAYLOAD} for e in _explain(cases, run)]
    judge = JudgeResult(
        status="scored", verdict="mismatch", rationale=PAYLOAD * 20_000,
        issues=tuple(Issue(1, "error", PAYLOAD * 1000) for _ in range(500)),
        unmet_requirements=(PAYLOAD,), scores={PAYLOAD: 1}, reason=PAYLOAD * 1000,
    )  # fmt: skip
    row = _row(golden["dedupe-hangs"], entries, id=PAYLOAD, judge=judge.to_row())
    code = f"def f():\n    return '{PAYLOAD}'\n"
    text = render_html([Grade.from_row(row)], None, sources={PAYLOAD: code})
    assert text.count("<script") == 1 and "<img" not in text
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in text
    assert len(_sample(text, _escaped(PAYLOAD))) < 150_000  # the inputs were ~20 MB


def _escaped(text):
    from html import escape

    return escape(text, quote=True)
