"""The gate's Markdown report: one renderer for ``--comment`` and for what GitHub shows.

:func:`report` is the one place a gate's Markdown is written: ``gradebox gate
--comment`` writes it as is, :mod:`gradebox.github.render` puts it in the
sticky comment, the check run's summary and the job summary.

Text that came from a patch, a repository, a sandbox or a rule file (gate ids,
test ids, paths, protected lines, details, finding messages, tamper notes, rule
sources) is **untrusted**: it only ever appears through :func:`code`, one line,
bounded, inside an inline code span, with backticks and angle brackets replaced
and control and format characters (bidirectional overrides and zero-width
characters included) removed. Inside a code span a Markdown renderer makes no
link, image, HTML, mention, heading or emphasis, so untrusted text cannot add
any or close the report's structure. Everything outside the code spans is
gradebox's own words and closed vocabularies (verdicts, reasons, categories).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Literal

from gradebox.patches.model import ApplyReport, GateRow, TestsPart

__all__ = ["Conclusion", "code", "conclusion", "plain", "report", "title"]

Conclusion = Literal["success", "failure", "neutral"]
"""A check run's conclusion: every gate passed, one failed, else one needs review."""

_OK_F2P = ("F2P", "P2P", "S2P", "N2P")
_ICON = {"pass": "✅", "fail": "❌", "needs_review": "⚠️"}
_TRIPWIRES = {
    "ok": "ok (the planted failures were seen at base and head)",
    "tripped": "**tripped**: the planted failures were not seen, the test outcomes cannot be "
    "believed",
    "unavailable": "unavailable (none ran)",
}
_SHOWN = 10


def plain(text: str, limit: int) -> str:
    """One line of ``text``: control and format characters dropped, cut to ``limit``."""
    kept = "".join(c if unicodedata.category(c)[0] != "C" else " " for c in text)
    one = " ".join(kept.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def code(text: str, limit: int = 200) -> str:
    """Untrusted ``text`` as an inline code span that nothing can break out of."""
    inner = plain(text, limit).replace("`", "'").replace("<", "\u2039").replace(">", "\u203a")
    return f"`{inner}`" if inner.strip() else "`(empty)`"


def conclusion(rows: Sequence[GateRow]) -> Conclusion:
    """``failure`` if any gate failed, else ``neutral`` if any needs review, else ``success``."""
    if any(r.verdict == "fail" for r in rows):
        return "failure"
    if any(r.verdict != "pass" for r in rows):
        return "neutral"
    return "success"


def title(rows: Sequence[GateRow]) -> str:
    """The counts, as one line (the check run's title)."""
    n = {v: sum(r.verdict == v for r in rows) for v in ("pass", "fail", "needs_review")}
    return f"gradebox gate: {n['pass']} pass, {n['fail']} fail, {n['needs_review']} needs review"


def report(rows: Sequence[GateRow], *, commit: str | None = None) -> str:
    """The Markdown report: a heading with the counts, one section per gate.

    Args:
        rows: The gates.
        commit: The commit the report is about (a footer line), if known.
    """
    icon = {"success": "✅", "failure": "❌", "neutral": "⚠️"}[conclusion(rows)]
    out = [f"## {icon} {title(rows)}", ""]
    for row in rows:
        out += _section(row)
    if commit:
        out.append(f"<sub>gradebox · commit {code(commit[:12])}</sub>")
    return "\n".join(out) + "\n"


def _section(row: GateRow) -> list[str]:
    out = [f"### {_ICON.get(row.verdict, '')} {code(row.id, 120)}: **{row.verdict}** "
           f"({row.reason})"]  # fmt: skip
    if row.detail:
        out.append(f"- why: {code(row.detail, 300)}")
    if row.infra_error:
        out.append(f"- infrastructure: {code(row.infra_error, 300)}")
    if row.apply is not None:
        out += _apply(row.apply)
    out += _tests(row)
    out += _static(row)
    if row.diff is not None:
        d = row.diff.to_json()
        out.append(f"- diff: {d['files']} file(s), +{d['added']} -{d['removed']}")
    out += [
        f"- tamper risk: {code(f'{h.path}:{h.line}', 160)} {code(h.rule, 10)} {code(h.what, 160)}"
        for h in row.tamper[:_SHOWN]
    ]
    out += _more(len(row.tamper), "  - and {} more")
    if row.rules:
        shown = "; ".join(
            f"{code(rule, 40)} from {code(source, 200)}" for rule, source in row.rules
        )
        out.append(f"- rules: {shown}")
    return [*out, ""]


def _paths(paths: Sequence[str]) -> str:
    shown = ", ".join(code(p, 120) for p in paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")


def _more(n: int, text: str, shown: int = _SHOWN) -> list[str]:
    return [text.format(n - shown)] if n > shown else []


def _apply(a: ApplyReport) -> list[str]:
    out = [f"- applied with {code(a.strategy, 20)}"] if a.strategy else []
    if a.protected or a.protected_lines:
        out.append(f"- protected paths changed: {_paths(a.protected)}")
        out += [f"  - {code(line, 200)}" for line in a.protected_lines[:20]]
        out += _more(len(a.protected_lines), "  - and {} more lines", 20)
    if a.stripped:
        out.append(f"- **stripped** from the patch (`--protect-mode strip`), never graded: "
                   f"{_paths(a.stripped)}")  # fmt: skip
    if a.added_tests:
        out.append(f"- test files the patch adds or extends (run at head, reported): "
                   f"{_paths(a.added_tests)}")  # fmt: skip
    if a.restored:
        out.append(f"- restored from base before the hidden tests: {_paths(a.restored)}")
    if a.test_patch != "none":
        out.append(f"- hidden tests: {a.test_patch}")
    return out


def _tests(row: GateRow) -> list[str]:
    t = row.tests
    if t is None:
        return []
    f2p_ok = sum(c in _OK_F2P for c in t.fail_to_pass.values())
    regressed = sorted((i, c) for i, c in t.pass_to_pass.items() if c != "P2P")
    failing = sorted((i, c) for i, c in t.fail_to_pass.items() if c not in _OK_F2P)
    out = [f"- FAIL_TO_PASS: {f2p_ok}/{len(t.fail_to_pass)} pass"]
    out += [f"  - still failing: {code(i, 200)} ({c})" for i, c in failing[:_SHOWN]]
    out += _more(len(failing), "  - and {} more")
    out.append(f"- PASS_TO_PASS: {len(t.pass_to_pass) - len(regressed)}/{len(t.pass_to_pass)} "
               "still pass")  # fmt: skip
    out += [f"  - regressed: {code(i, 200)} ({c})" for i, c in regressed[:_SHOWN]]
    out += _more(len(regressed), "  - and {} more")
    out += _added(t)
    if t.quarantined:
        out.append(f"- quarantined (flaky at base, never deciding): {len(t.quarantined)}")
    out.append(f"- tripwires: {_TRIPWIRES.get(t.tripwires, 'unavailable')}")
    if t.head_problems:
        out.append(f"- the head run cannot be believed: {code('; '.join(t.head_problems), 300)}")
    return out


def _added(t: TestsPart) -> list[str]:
    if not t.added:
        return []
    passing = sum(c in _OK_F2P for c in t.added.values())
    out = [f"- tests the patch adds: {passing}/{len(t.added)} pass at head (reported, "
           "deciding only where FAIL_TO_PASS or PASS_TO_PASS names them)"]  # fmt: skip
    out += [f"  - {code(i, 200)} ({c})" for i, c in sorted(t.added.items())[:_SHOWN]]
    return out + _more(len(t.added), "  - and {} more")


def _static(row: GateRow) -> list[str]:
    s = row.static
    if s is None:
        return []
    new = [x for x in s.findings if x.state == "new"]
    fixed = sum(x.state == "fixed" for x in s.findings)
    out = [f"- static ({s.filter_mode}): {len(new)} new, {len(s.counted)} counted, "
           f"{fixed} fixed → {s.effect}"]  # fmt: skip
    for x in list(s.counted)[:_SHOWN]:
        f = x.finding
        out.append(f"  - {code(f'{x.path}:{f.line}', 160)} {code(f.rule, 40)} ({f.severity}) "
                   f"{code(f.message, 160)}")  # fmt: skip
    out += _more(len(s.counted), "  - and {} more (annotations on the changed lines)")
    if s.tool_errors:
        out.append(f"- static tools failed: {code('; '.join(s.tool_errors), 300)}")
    return out
