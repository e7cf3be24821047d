"""The HTML report's drill-down: one ``<details>`` per sample, in words, hostile text inert.

Each sample that did not pass is open (what a reviewer came to read); passes
are closed. A sample shows its hidden cases by index with their outcomes in
words, grouped (not-run cases apart: they are not failures), the cases
``--explain`` explains (calls, expected and actual values as Python prints
them), gate and claim facts, static findings with code excerpts, the judge's
annotation and the code. Every text from a row is escaped and bounded.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, get_args

from gradebox.grade import Grade
from gradebox.reports.words import (
    OUTCOME_WORDS,
    REASON_WORDS,
    VALUE_CAP,
    expected_words,
    got_words,
    value_words,
)
from sandbox.types import CaseOutcome

__all__ = ["TEXT_CAP", "bounded", "escape", "samples_section"]

TEXT_CAP = 2_000
"""Longest free text shown from a row (a judge's rationale, an issue, a finding)."""

_OUTCOMES: tuple[CaseOutcome, ...] = get_args(CaseOutcome)
_CODE_CAP = 20_000
_MINI_CASES = 40
_OPEN_CODE_LINES = 30
_ITEMS = 50  # judge issues and scores listed per sample
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")


def escape(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(_BAD_CHARS.sub("\ufffd", str(value)), quote=True)


def bounded(value: Any, cap: int = TEXT_CAP) -> str:
    """Escape free text from a row (hostile, maybe huge), cut at ``cap`` characters."""
    text = str(value)
    if len(text) > cap:
        text = text[:cap] + f"\u2026 ({len(text) - cap} more characters)"
    return escape(text)


_e, _t = escape, bounded  # short names for the many f-strings below


def samples_section(
    rows: Sequence[Grade],
    codes: Mapping[str, str | None],
    names: Mapping[str, Sequence[str | None]],
    *,
    of: int,
) -> str:
    """The drill-down: filters, the outcome legend in words, then one ``<details>`` per row.

    Args:
        rows: The samples embedded, in input order.
        codes: Code by sample id (``None`` where it is not known).
        names: Hidden case names per task, by case index.
        of: Samples in the run (a note says when fewer are embedded).
    """
    counts: Counter[str] = Counter(r.verdict.verdict for r in rows)
    buttons = "".join(
        f'<button type="button" data-filter="{v}" aria-pressed="{str(v == "all").lower()}">'
        f"{label} ({len(rows) if v == 'all' else counts[v]})</button>"
        for v, label in (
            ("all", "all"),
            ("pass", "pass"),
            ("fail", "fail"),
            ("needs_review", "needs review"),
        )
    )
    legend = "".join(
        f'<span><i class="case o-{o}"></i>{_e(OUTCOME_WORDS[o])}</span>' for o in _OUTCOMES
    )
    return (
        '<h2 id="samples">Samples</h2><div class="controls">'
        f"{buttons}"
        '<input id="q" type="search" placeholder="filter by id, task or reason" '
        'aria-label="filter samples">'
        '<button type="button" id="expand">expand / collapse all</button>'
        f'<span class="kv">showing <b id="shown">{len(rows)}</b></span></div>'
        f'<div class="legend">hidden case outcomes: {legend}</div>'
        '<p class="note">Every sample that did not pass is open; passes are closed. '
        "Click a line to open or close it.</p>"
        + _capped(len(rows), of)
        + "".join(_sample(r, codes.get(r.id), names.get(r.task, ())) for r in rows)
    )


def _capped(shown: int, of: int) -> str:
    if shown == of:
        return ""
    return (
        f'<p class="note">This report embeds {shown} of {of} samples (those that did not '
        "pass first, in input order); every sample is in results.jsonl.</p>"
    )


def _sample(row: Grade, code: str | None, names: Sequence[str | None] = ()) -> str:
    """One sample as a ``<details>`` line: open when it did not pass (what a reviewer reads)."""
    verdict = row.verdict.verdict
    why = _why(row)
    search = f"{row.id} {row.task} {row.fn} {verdict} {row.verdict.reason} {why}".lower()
    left = _outcomes(row, names) + _explain(row, names) + _facts(row) + _judge(row)
    right = _findings(row, code) + _code_block(code, _finding_lines(row))
    return (
        f'<details class="sample"{"" if verdict == "pass" else " open"} '
        f'data-verdict="{_e(verdict)}" '
        f'data-search="{_e(search)}">'
        f'<summary><span class="badge v-{_e(verdict)}">{_e(verdict.replace("_", " "))}</span>'
        f'<span class="id">{_e(row.id)}</span><span class="fn">{_e(_task_label(row))}</span>'
        f'<span class="why">{_e(why)}</span>{_mini(row)}</summary>'
        f'<div class="body"><div>{left}</div><div>{right}</div></div></details>'
    )


def _why(row: Grade) -> str:
    """Why the sample has its verdict, in words: ``hidden cases failed: 3 of 5 ok, 1 timed out``."""
    t, reason = row.tests, row.verdict.reason
    words = REASON_WORDS[reason]
    if reason == "hidden_tests" and t.outcomes:
        counts = Counter(t.outcomes)
        parts = [f"{counts['ok']} of {len(t.outcomes)} ok"]
        parts += [f"{counts[o]} {OUTCOME_WORDS[o]}" for o in _OUTCOMES if o != "ok" and counts[o]]
        return f"{words}: {', '.join(parts)}"
    if reason == "gate:banned_import" and t.gate is not None and t.gate.banned:
        return f"{words}: {', '.join(t.gate.banned)}"
    explained = reason in ("contract", "gate:syntax", "claim_false")  # what ``detail`` says
    more = t.infra_error if reason == "infra_error" else t.detail if explained else None
    return f"{words}: {more}" if more else words


def _task_label(row: Grade) -> str:
    """The task's id, and its entry point when that is another name (``HumanEval/85 (add)``)."""
    return row.task if row.task == row.fn else f"{row.task} ({row.fn})"


def _mini(row: Grade) -> str:
    """A strip of small squares, one per hidden case, for the collapsed line."""
    outcomes = row.tests.outcomes
    cells = "".join(
        f'<i class="o-{o}" title="case {i}: {_e(OUTCOME_WORDS[o])}"></i>'
        for i, o in enumerate(outcomes[:_MINI_CASES])
    )
    more = len(outcomes) - _MINI_CASES
    extra = f"<b>+{more}</b>" if more > 0 else ""
    return f'<span class="mini" aria-hidden="true">{cells}{extra}</span>'


def _case_label(i: int, names: Sequence[str | None]) -> str:
    name = names[i] if i < len(names) else None
    return f"case {i} ({name})" if name else f"case {i}"


def _outcomes(row: Grade, names: Sequence[str | None] = ()) -> str:
    """Every hidden case as a cell, then the cases that were not ok grouped by outcome, in words.

    Not-run cases are a group of their own, never counted as failed: the
    candidate was stopped before them (at the gate, or after a timeout or crash).
    """
    outcomes = row.tests.outcomes
    if not outcomes:
        return '<h4>Hidden cases</h4><p class="note">no case outcomes on this row</p>'
    cells = "".join(
        f'<span class="case o-{o}" title="{_e(_case_label(i, names))}: {_e(OUTCOME_WORDS[o])}">'
        f"{i}</span>"
        for i, o in enumerate(outcomes)
    )
    counts = Counter(outcomes)
    failed = len(row.tests.failed)
    head = [f"{counts['ok']} of {len(outcomes)} ok", f"{failed} failed"]
    head += [f"{counts[o]} {OUTCOME_WORDS[o]}" for o in ("timeout", "not_run") if counts[o]]
    heading = " \u00b7 ".join(head)
    groups = "".join(_group(o, outcomes, names) for o in _OUTCOMES if o != "ok" and counts[o])
    note = ""
    if counts["not_run"] == len(outcomes):
        note = f'<p class="note">No hidden case ran: {_e(REASON_WORDS[row.verdict.reason])}.</p>'
    return (
        f"<h4>Hidden cases ({_e(heading)})</h4>{note}"
        f'<div class="cases">{cells}</div><ul class="groups">{groups}</ul>'
    )


def _group(
    outcome: CaseOutcome, outcomes: Sequence[CaseOutcome], names: Sequence[str | None]
) -> str:
    """One outcome's cases, by label (at most :data:`_MINI_CASES` listed)."""
    cases = [i for i, o in enumerate(outcomes) if o == outcome]
    labels = ", ".join(_case_label(i, names) for i in cases[:_MINI_CASES])
    if len(cases) > _MINI_CASES:
        labels += f" and {len(cases) - _MINI_CASES} more"
    aside = " (not failures)" if outcome == "not_run" else ""
    return (
        f'<li data-outcome="{outcome}"><b>{_e(OUTCOME_WORDS[outcome])}</b>{aside} '
        f"({len(cases)}): {_t(labels)}</li>"
    )


def _explain(row: Grade, names: Sequence[str | None] = ()) -> str:
    """Arguments, expected and actual values of failed cases (rows graded with --explain).

    Not-run cases are left out (nothing ran, so nothing is explained) and counted apart.
    """
    explain = row.tests.explain
    entries = [e for e in explain if isinstance(e, Mapping)] if isinstance(explain, list) else []
    ran = [e for e in entries if e.get("outcome") != "not_run"]
    skipped = len(entries) - len(ran)
    out = []
    if ran:
        out += [f"<h4>Cases not ok, explained ({len(ran)})</h4>", '<table class="explain">']
        out.append("<tr><th>case</th><th>call</th><th>expected</th><th>actual</th></tr>")
        out += [_explained(e, row.fn, names) for e in ran]
        out.append("</table>")
    if skipped:
        out.append(
            f'<p class="note">{skipped} not-run case{"s" * (skipped != 1)} not explained: '
            "the candidate was stopped before reaching them (not failures).</p>"
        )
    if isinstance(ce := row.tests.counterexample, Mapping):
        out.append(
            f'<p class="kv">smallest counterexample: case {_t(ce.get("case"), 40)} with '
            f"<code>{_e(_call(row.fn, ce.get('args'), None))}</code>, expected "
            f"<code>{_e(expected_words(ce.get('expect')))}</code></p>"
        )
    return "".join(out)


def _explained(e: Mapping[str, Any], fn: str, names: Sequence[str | None]) -> str:
    """One explained case as a table row: label and outcome in words, call, expected, actual."""
    i = e.get("case")
    label = _case_label(i, names) if isinstance(i, int) else "case ?"
    if e.get("name") and not (isinstance(i, int) and i < len(names) and names[i]):
        label += f" ({e['name']})"
    outcome = e.get("outcome")
    known = outcome if outcome in OUTCOME_WORDS else None
    words = OUTCOME_WORDS[known] if known is not None else "unknown outcome"
    got = got_words(e.get("got"), known) if known is not None else value_words(e.get("got"))
    return (
        f"<tr><td>{_t(label, 200)}<br><b>{_e(words)}</b></td>"
        f"<td><code>{_e(_call(fn, e.get('args'), e.get('kwargs')))}</code></td>"
        f"<td><code>{_e(expected_words(e.get('expect')))}</code></td>"
        f"<td><code>{_e(got)}</code></td></tr>"
    )


def _call(fn: str, args: Any, kwargs: Any) -> str:
    """Arguments as Python writes a call: ``split('a,b', sep=',')``, each value bounded."""
    parts = [value_words(a) for a in args] if isinstance(args, list) else [value_words(args)]
    if isinstance(kwargs, Mapping):
        parts += [f"{k}={value_words(v)}" for k, v in kwargs.items()]
    text = f"{fn}({', '.join(parts)})"
    return text if len(text) <= 2 * VALUE_CAP else text[: 2 * VALUE_CAP - 1] + "\u2026"


def _finding_lines(row: Grade) -> set[int]:
    return {f.line for f in row.static.findings} if row.static is not None else set()


def _facts(row: Grade) -> str:
    t, gate, dash = row.tests, row.tests.gate, "\u2014"
    facts = [
        ("verdict", f"{row.verdict.verdict} ({REASON_WORDS[row.verdict.reason]})"),
        ("syntax", gate.syntax if gate else dash),
        ("contract", gate.contract if gate else dash),
        ("banned imports", (", ".join(gate.banned) if gate else "") or "none"),
        ("O(1) claim", t.claim),
        ("latency", f"{t.latency_ms} ms"),
    ]
    line = " \u00b7 ".join(f"{_e(k)} <b>{_e(v)}</b>" for k, v in facts)
    more = ""
    for label, text in (("detail", t.detail), ("infra error", t.infra_error)):
        if text:
            more += f'<p class="kv">{label}: {_t(text, 600)}</p>'
    return f'<p class="kv">{line}</p>{more}'


def _findings(row: Grade, code: str | None) -> str:
    if row.static is None:
        return '<h4>Static findings</h4><p class="note">static layers did not run</p>'
    findings = row.static.findings
    if not findings:
        return '<h4>Static findings</h4><p class="note">none</p>'
    lines = code.splitlines() if code is not None else None
    out = [f"<h4>Static findings ({len(findings)})</h4>"]
    if lines is None:
        out.append('<p class="note">code is not on the row: no excerpts</p>')
    for f in findings:
        out.append(
            f'<p><span class="sev-{_e(f.severity)}">{_e(f.severity)}</span> '
            f"<b>{_e(f.layer)}/{_t(f.rule, 100)}</b> line {_e(f.line)}: {_t(f.message, 600)}</p>"
        )
        if lines is not None:
            out.append(_excerpt(lines, f.line))
    return "".join(out)


def _excerpt(lines: Sequence[str], line: int) -> str:
    if not 1 <= line <= len(lines):
        return ""
    spans = "".join(
        f"<span{' class=hit' if n == line else ''}><i>{n}</i>{_e(lines[n - 1][:400])}</span>"
        for n in range(max(1, line - 2), min(len(lines), line + 2) + 1)
    )
    return f"<pre>{spans}</pre>"


def _judge(row: Grade) -> str:
    j = row.judge
    if j is None or j.status == "skipped":
        why = j.reason if j is not None else None
        return f'<h4>Judge</h4><p class="note">not judged{": " + _e(why) if why else ""}</p>'
    dash = "\u2014"
    head = [("status", j.status), ("verdict", j.verdict or dash)]
    if j.weighted is not None:
        head.append(("weighted score", f"{j.weighted:.2f}"))
    head += [("model", j.model or dash), ("rubric", j.rubric or dash)]
    out = ["<h4>Judge</h4>", '<p class="kv">']
    out.append(" \u00b7 ".join(f"{_e(k)} <b>{_e(v)}</b>" for k, v in head) + "</p>")
    if j.reason:
        out.append(f'<p class="kv">reason: <b>{_t(j.reason, 600)}</b></p>')
    if j.rationale:
        out.append(f"<p>{_t(j.rationale)}</p>")
    if j.scores:
        scores = list(j.scores.items())
        out.append(
            '<p class="kv">scores: '
            + " \u00b7 ".join(f"{_t(k, 100)} <b>{_t(v, 40)}</b>" for k, v in scores[:_ITEMS])
            + "</p>"
        )
    items = [f"line {_e(i.line or dash)} [{_e(i.severity)}] {_t(i.message, 600)}" for i in j.issues]
    items += [f"unmet: {_t(u, 600)}" for u in j.unmet_requirements]
    if len(items) > _ITEMS:
        items[_ITEMS:] = [f"and {len(items) - _ITEMS} more"]
    if items:
        out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    return "".join(out)


def _code_block(code: str | None, marked: set[int] | None = None) -> str:
    if code is None:
        return ""
    cut = code[:_CODE_CAP]
    hits = marked or set()
    spans = "".join(
        f"<span{' class=hit' if n in hits else ''}><i>{n}</i>{_e(text)}</span>"
        for n, text in enumerate(cut.splitlines(), 1)
    )
    note = f" (first {_CODE_CAP} characters)" if len(code) > _CODE_CAP else ""
    opened = " open" if code.count("\n") < _OPEN_CODE_LINES else ""
    return f"<details{opened}><summary>Code{_e(note)}</summary><pre>{spans}</pre></details>"
