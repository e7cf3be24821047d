"""A self-contained HTML report of a run: one file, no network, candidate text inert.

Sections: summary cards (pass@k, verdicts, hidden cases with not-run apart
from failed, timeouts and infra errors, judge reliability, static findings), a
chart of the pass rate per task (inline SVG), a per-task table, and a
drill-down per sample (:mod:`gradebox.reports.html_samples`: outcomes in words,
every sample that did not pass open). A small inline script filters the
samples; without it everything is still shown.

Candidate code and everything derived from it is hostile. Every piece of text
is HTML-escaped (:func:`html.escape` with quotes) and nothing from a row is
ever placed inside ``<script>`` or ``<style>``. As a second wall, a
Content-Security-Policy allows only the report's own inline script and style
(by hash) and no network at all, so even a missed escape could not run code
or load anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gradebox.grade import Grade
from gradebox.judging.agreement import FlipRates, TestsAgreement, flip_rates, tests_agreement
from gradebox.reports.assets import CSS as _CSS
from gradebox.reports.assets import JS as _JS
from gradebox.reports.html_samples import escape as _e
from gradebox.reports.html_samples import samples_section
from gradebox.reports.words import REASON_WORDS
from gradebox.runs.passk import PassKReport, Tally, estimate_tallies, format_value
from gradebox.runs.private import private_text
from sandbox.types import CaseOutcome

__all__ = ["MAX_SAMPLES", "render_html", "write_html"]

MAX_SAMPLES = 2000
"""Samples a report embeds at most (each ~2-5 KB of HTML): a report of 100,000 still opens."""

_NOT_FAILED: frozenset[CaseOutcome] = frozenset({"ok", "timeout", "not_run"})
"""Outcomes that are not failures: ``timeout`` is counted apart (as the row's
``timeouts``) and ``not_run`` says nothing of the candidate."""
_SEVERITIES = ("high", "medium", "low", "info")
_CHART_TASKS = 60


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def render_html(
    grades: Iterable[Grade],
    summary: Mapping[str, Any] | None = None,
    *,
    title: str = "gradebox report",
    sources: Mapping[str, str] | None = None,
    case_names: Mapping[str, Sequence[str | None]] | None = None,
    ks: Sequence[int] = (1, 5, 10),
    max_samples: int | None = None,
) -> str:
    """Render the report as one HTML document.

    The grades are read once (they may come from a file): cards, chart and task
    table count every sample; the drill-down embeds at most ``max_samples``,
    those that did not pass first, in input order.

    Args:
        grades: The graded samples.
        summary: The run summary (``gradebox.runs.summary.summarize``); shown as JSON
            at the end. The cards are computed from the grades.
        title: The page title.
        sources: Code by sample id (rows carry no code).
        case_names: Hidden case names per task (by case index; ``None`` for unnamed).
        ks: pass@k values; a k that no task has enough samples for is noted, not carded.
        max_samples: Samples embedded in the drill-down (default :data:`MAX_SAMPLES`).

    Returns:
        The document (UTF-8 text; no external resource).
    """
    seen = _Overview(max_samples)
    for grade in grades:
        seen.add(grade)
    report = estimate_tallies(seen.tallies, ks)
    rows = seen.embedded()
    codes = {g.id: None if sources is None else sources.get(g.id) for g in rows}
    csp = (
        f"default-src 'none'; style-src '{_csp_hash(_CSS)}'; script-src '{_csp_hash(_JS)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    tasks = len(report.tasks)
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{seen.n} samples \u00b7 {tasks} tasks</p>',
        _cards(seen, report),
        "<h2>Pass rate per task</h2>",
        f'<div class="panel">{_chart(seen.per_task)}</div>',
        "<h2>Tasks</h2>",
        _task_table(seen.per_task, report),
        samples_section(rows, codes, case_names or {}, of=seen.n),
        _summary_json(summary),
        "<footer>Self-contained report written by gradebox: no network, no external files. "
        "Hidden cases are named by index (and name, where the hidden file gives one); "
        "arguments and values only for runs graded with --explain.</footer>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body><main>\n"
        + "\n".join(body)
        + f"\n</main><script>{_JS}</script></body></html>\n"
    )


def write_html(
    grades: Iterable[Grade],
    summary: Mapping[str, Any] | None,
    path: Path,
    *,
    title: str = "gradebox report",
    sources: Mapping[str, str] | None = None,
    case_names: Mapping[str, Sequence[str | None]] | None = None,
    ks: Sequence[int] = (1, 5, 10),
    max_samples: int | None = None,
) -> None:
    """Write the report to ``path``; see :func:`render_html` for the arguments."""
    text = render_html(
        grades,
        summary,
        title=title,
        sources=sources,
        case_names=case_names,
        ks=ks,
        max_samples=max_samples,
    )
    with private_text(Path(path)) as fh:  # per-case outcomes and code: the owner's only
        fh.write(text)


# --- cards -----------------------------------------------------------------------------


def _card(title: str, big: str, *lines: str) -> str:
    more = "".join(f"<p>{line}</p>" for line in lines)
    return f'<div class="card"><h3>{_e(title)}</h3><div class="big">{big}</div>{more}</div>'


class _Overview:
    """Everything the cards, chart and table count, one grade at a time; the embedded samples."""

    def __init__(self, max_samples: int | None) -> None:
        self.cap = MAX_SAMPLES if max_samples is None else max(0, max_samples)
        self.n = self.timed_out = self.cases = self.infra = 0
        self.outcomes: Counter[CaseOutcome] = Counter()  # every hidden case of every sample
        self.verdicts: Counter[str] = Counter()
        self.tallies: list[Tally] = []
        self._same: dict[Tally, Tally] = {}  # one object per distinct tally
        self.per_task: dict[str, Counter[str]] = {}
        self.judged = self.cache_hits = 0
        self.repeats: list[dict[str, Any]] = []  # what the flip rates read, per repeated item
        self.status: Counter[str] = Counter()
        self.table: Counter[tuple[str, str]] = Counter()
        self.checked = self.tool_errors = 0
        self.severities: Counter[str] = Counter()
        self.effects: Counter[str] = Counter()
        self._failing: list[tuple[int, Grade]] = []
        self._passing: list[tuple[int, Grade]] = []

    def add(self, g: Grade) -> None:
        verdict = g.verdict.verdict
        tally = Tally(g.task, g.passed, bool(g.tests.timeouts), g.infra)
        self.tallies.append(self._same.setdefault(tally, tally))
        self.verdicts[verdict] += 1
        self.timed_out += bool(g.tests.timeouts)
        self.cases += len(g.tests.timeouts)
        self.infra += g.infra
        self.outcomes.update(g.tests.outcomes)
        counts = self.per_task.setdefault(g.task, Counter())
        counts["n"] += 1
        counts[verdict] += 1
        counts["timeouts"] += bool(g.tests.timeouts)
        counts["infra"] += g.infra
        if verdict != "pass":
            counts["reason:" + REASON_WORDS[g.verdict.reason]] += 1
        self._judge(g)
        if g.static is not None:
            self.checked += 1
            self.severities.update(f.severity for f in g.static.findings)
            self.effects[g.static.effect] += 1
            self.tool_errors += bool(g.static.infra_error)
        # At most ``cap`` grades held in all: failures first, then the earliest passes.
        if verdict != "pass" and len(self._failing) < self.cap:
            self._failing.append((self.n, g))
            if len(self._failing) + len(self._passing) > self.cap:
                self._passing.pop()
        elif verdict == "pass" and len(self._failing) + len(self._passing) < self.cap:
            self._passing.append((self.n, g))
        self.n += 1

    def _judge(self, g: Grade) -> None:
        j = g.judge
        if j is None:
            return
        self.judged += 1
        if j.status == "skipped":
            return
        self.status[str(j.status)] += 1
        self.cache_hits += j.cache_hit
        if j.repeat is not None:
            judge = {"repeat": j.repeat.to_json(), "scores": dict.fromkeys(j.scores)}
            self.repeats.append({"id": g.id, "judge": judge})
        if j.status == "scored" and j.verdict in ("match", "mismatch"):
            self.table[(str(j.verdict), "pass" if _tests_passed(g) else "fail")] += 1

    def embedded(self) -> list[Grade]:
        """The samples to embed: those that did not pass first, up to the cap, in input order."""
        chosen = self._failing + self._passing
        return [g for _, g in sorted(chosen, key=lambda item: item[0])]


def _cards(seen: _Overview, report: PassKReport) -> str:
    cards = []
    missing = []
    for k, mean in report.mean.items():
        if mean.tasks == 0 and k != 1:
            missing.append(f"pass@{k}")
            continue
        cover = f"mean over <b>{mean.tasks}</b> of {mean.of} tasks"
        cards.append(_card(f"pass@{k}", _e(format_value(mean.value)), cover))
    verdicts = seen.verdicts
    cards.append(
        _card(
            "verdicts",
            f"{verdicts['pass']} / {seen.n}",
            f"pass <b>{verdicts['pass']}</b> \u00b7 fail <b>{verdicts['fail']}</b> \u00b7 "
            f"needs review <b>{verdicts['needs_review']}</b>",
            _verdict_bar(verdicts, seen.n),
        )
    )
    cards.append(
        _card(
            "timeouts",
            str(seen.timed_out),
            f"samples with a timeout \u00b7 <b>{seen.cases}</b> cases timed out",
            f"infrastructure errors <b>{seen.infra}</b>",
        )
    )
    cards.append(_cases_card(seen.outcomes))
    cards.append(_judge_card(seen))
    cards.append(_static_card(seen))
    html_ = f'<div class="cards">{"".join(cards)}</div>'
    if missing:
        html_ += (
            f'<p class="note">{_e(", ".join(missing))}: no task has that many samples '
            "(undefined, not 1.0).</p>"
        )
    return html_


def _cases_card(outcomes: Counter[CaseOutcome]) -> str:
    """Hidden cases over the run: ok, failed, timed out, and not run apart from failures."""
    failed = sum(n for o, n in outcomes.items() if o not in _NOT_FAILED)
    total = sum(outcomes.values())
    return _card(
        "hidden cases",
        f"{outcomes['ok']} / {total}",
        f"ok <b>{outcomes['ok']}</b> \u00b7 failed <b>{failed}</b> \u00b7 "
        f"timed out <b>{outcomes['timeout']}</b>",
        f"not run <b>{outcomes['not_run']}</b> (stopped before them: not failures)",
    )


def _verdict_bar(verdicts: Counter[str], total: int) -> str:
    bar = _stack(verdicts, total, 0, 0, 170, 8)
    return f'<svg width="170" height="8" role="img" aria-label="verdict shares">{bar}</svg>'


def _stack(counts: Counter[str], total: int, x: float, y: int, width: int, height: int) -> str:
    """SVG rects: a grey track, then pass, needs-review and fail shares, left to right."""
    out = [f'<rect x="{x}" y="{y}" width="{width}" height="{height}" fill="#e4e8ec"/>']
    for name, color in (("pass", "#1a7f37"), ("needs_review", "#bf8700"), ("fail", "#cf222e")):
        w = width * counts[name] / total if total else 0.0
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{height}" fill="{color}"/>')
        x += w
    return "".join(out)


def _judge_card(seen: _Overview) -> str:
    asked = sum(seen.status.values())
    if not asked:
        return _card(
            "judge",
            "\u2014",
            "not run for this report"
            if not seen.judged
            else f"skipped on all {seen.judged} samples",
        )
    status, table = seen.status, seen.table
    # The one implementation of the summary's figures (gradebox.judging), not a copy.
    pairs = [
        (verdict, "match" if tests == "pass" else "mismatch")
        for (verdict, tests), count in table.items()
        for _ in range(count)
    ]
    found = tests_agreement(pairs)
    kappa = found.agreement.kappa
    agree = table[("match", "pass")] + table[("mismatch", "fail")]
    scored = sum(table.values())
    return _card(
        "judge reliability",
        _e("n/a" if kappa is None else f"\u03ba {kappa:.2f}"),
        f"agrees with hidden tests on <b>{agree}</b> of {scored} scored",
        _e(_figures(found)),
        f"scored <b>{status['scored']}</b> \u00b7 unscored <b>{status['needs_review']}</b> "
        f"\u00b7 unavailable <b>{status['unavailable']}</b>",
        f"cache hits <b>{seen.cache_hits}</b>",
        *_flip_lines(flip_rates(seen.repeats)),
    )


def _flip_lines(flips: FlipRates | None) -> list[str]:
    """The two verdict flip rates of ``--judge-repeat``, each named for what it counts."""
    if flips is None:
        return []
    lines = []
    for rate, what in (
        (flips.per_judgement, "verdict flip rate per judgement (minority votes / all votes)"),
        (flips.verdict, "per item (items whose repeated verdicts disagree / items)"),
    ):
        if rate is not None:
            lines.append(
                f"{_e(what)} <b>{rate.k}/{rate.n}</b> {rate.value:.2f} "
                f"[{rate.interval.low:.2f}, {rate.interval.high:.2f}]"
            )
    return lines


def _figures(found: TestsAgreement) -> str:
    """\u03ba and \u03c0 with their intervals, leniency and strictness (or why not)."""
    a = found.agreement
    if a.kappa is None:
        return a.note or "n/a"
    parts = [
        f"\u03ba {a.kappa:.2f}"
        + (f" [{a.kappa_ci.low:.2f}, {a.kappa_ci.high:.2f}]" if a.kappa_ci else "")
    ]
    if a.pi is not None:
        parts.append(
            f"\u03c0 {a.pi:.2f}" + (f" [{a.pi_ci.low:.2f}, {a.pi_ci.high:.2f}]" if a.pi_ci else "")
        )
    for name, r in (("lenient", found.leniency), ("strict", found.strictness)):
        if r is not None:
            parts.append(f"{name} {r.k}/{r.n}")
    return " \u00b7 ".join(parts)


def _tests_passed(grade: Grade) -> bool:
    outcomes = grade.tests.outcomes
    return bool(outcomes) and all(o == "ok" for o in outcomes)


def _static_card(seen: _Overview) -> str:
    if not seen.checked:
        return _card("static findings", "\u2014", "static layers not run")
    sev, effects = seen.severities, seen.effects
    return _card(
        "static findings",
        str(sum(sev.values())),
        " \u00b7 ".join(f"{k} <b>{sev[k]}</b>" for k in _SEVERITIES),
        f"policy fail <b>{effects['fail']}</b> \u00b7 review <b>{effects['review']}</b> "
        f"\u00b7 tool errors <b>{seen.tool_errors}</b>",
    )


# --- chart and task table --------------------------------------------------------------


def _chart(per: Mapping[str, Counter[str]]) -> str:
    order = sorted(per, key=lambda fn: (per[fn]["pass"] / per[fn]["n"], fn))
    shown = order[:_CHART_TASKS]
    left, width, step = 190, 790, 26
    height = 26 + step * len(shown)
    out = [
        f'<svg class="chart" viewBox="0 0 {left + width + 120} {height}" role="img" '
        'aria-label="pass rate per task">'
    ]
    for pct in (0, 25, 50, 75, 100):
        x = left + width * pct / 100
        out.append(
            f'<line x1="{x}" y1="18" x2="{x}" y2="{height - 4}" stroke="#d1d9e0"/>'
            f'<text class="tick" x="{x}" y="12" text-anchor="middle">{pct}%</text>'
        )
    for i, fn in enumerate(shown):
        out.append(_bar(fn, per[fn], left, width, 22 + i * step))
    out.append("</svg>")
    caption = "Sorted by pass rate, lowest first; green pass, amber needs review, red fail."
    if len(order) > len(shown):
        caption += f" Showing the {len(shown)} lowest of {len(order)} tasks."
    return "".join(out) + f'<p class="note">{_e(caption)}</p>'


def _bar(fn: str, c: Counter[str], left: int, width: int, y: int) -> str:
    n = c["n"]
    label = fn if len(fn) <= 26 else fn[:25] + "\u2026"
    tip = f"{fn}: {c['pass']} of {n} pass ({100 * c['pass'] / n:.0f}%)"
    return (
        f"<g><title>{_e(tip)}</title>"
        f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{_e(label)}</text>'
        + _stack(c, n, left, y, width, 18)
        + f'<text x="{left + width + 8}" y="{y + 13}">{c["pass"]}/{n} \u00b7 '
        f"{100 * c['pass'] / n:.0f}%</text></g>"
    )


def _task_table(per: Mapping[str, Counter[str]], report: PassKReport) -> str:
    ks = [k for k, m in report.mean.items() if m.tasks or k == 1]
    head = "".join(f'<th class="num">pass@{k}</th>' for k in ks)
    out = [
        '<table><thead><tr><th>task</th><th class="num">n</th><th class="num">pass</th>'
        '<th class="num">fail</th><th class="num">review</th><th class="num">timeouts</th>'
        f'<th class="num">infra</th>{head}<th>why not passing</th></tr></thead><tbody>'
    ]
    for t in report.tasks:
        c = per[t.task]
        reasons = sorted((k[7:], v) for k, v in c.items() if k.startswith("reason:"))
        why = ", ".join(f"{r} {v}" for r, v in reasons) or "\u2014"
        cells = "".join(f'<td class="num">{_e(format_value(t.pass_at[k]))}</td>' for k in ks)
        out.append(
            f'<tr><td><a href="#samples" data-task="{_e(t.task)}">{_e(t.task)}</a></td>'
            + "".join(
                f'<td class="num">{c[key]}</td>'
                for key in ("n", "pass", "fail", "needs_review", "timeouts", "infra")
            )
            + f"{cells}<td>{_e(why)}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _summary_json(summary: Mapping[str, Any] | None) -> str:
    if not summary:
        return ""
    text = json.dumps(summary, indent=1, ensure_ascii=False, default=str)
    return (
        '<h2>Run summary</h2><details class="panel"><summary>summary.json</summary>'
        f"<pre><span>{_e(text)}</span></pre></details>"
    )
