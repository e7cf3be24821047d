"""What a reviewer reads: the sticky comment, the check run's output and annotations.

Everything here is built from typed :class:`~gradebox.patches.GateRow` records.
Text that came from a patch, a repository or a sandbox (gate ids, test ids,
paths, details, finding messages, tamper notes) is **untrusted**: it only ever
appears through :func:`code`, one line, bounded, inside an inline code span,
with backticks and angle brackets replaced and control and format characters
(bidirectional overrides included) removed. Inside a code span GitHub renders
no link, image, HTML, mention or emphasis, so untrusted text cannot add any,
close the comment's structure, or write the hidden marker (``<`` never
survives). The marker is written once, as the body's first line, by
:func:`comment_body`; :func:`is_ours` recognises it only there.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from gradebox.patches import GateRow

__all__ = [
    "MARKER",
    "SUMMARY_LIMIT",
    "Annotation",
    "Conclusion",
    "code",
    "comment_body",
    "conclusion",
    "fit",
    "is_ours",
    "line_annotations",
    "report",
    "title",
]

MARKER = "<!-- gradebox:gate -->"
"""The hidden first line of the sticky comment."""
SUMMARY_LIMIT = 65535
"""GitHub's limit on a check run's summary (and, near enough, a comment's body)."""
_OK_F2P = ("F2P", "P2P", "S2P", "N2P")
_LEVEL: dict[str, AnnotationLevel] = {
    "high": "failure", "medium": "warning", "low": "notice", "info": "notice",
}  # fmt: skip
_ICON = {"pass": "✅", "fail": "❌", "needs_review": "⚠️"}

Conclusion = Literal["success", "failure", "neutral"]
"""A check run's conclusion: every gate passed, one failed, else one needs review."""
AnnotationLevel = Literal["notice", "warning", "failure"]


@dataclass(frozen=True, slots=True)
class Annotation:
    """One check-run annotation on a changed line."""

    path: str
    """File, relative to the repository."""
    line: int
    """1-based line at head."""
    level: AnnotationLevel
    """``failure`` (high), ``warning`` (medium, tamper risk), ``notice``."""
    title: str
    """Rule and what kind of finding (bounded)."""
    message: str
    """Plain text (bounded, control characters removed)."""

    def scrubbed(self, secret: str) -> Annotation:
        """This annotation with ``secret`` replaced in its texts."""
        return replace(self, title=self.title.replace(secret, "***"),
                       message=self.message.replace(secret, "***"))  # fmt: skip

    def to_json(self) -> dict[str, object]:
        """The API's annotation object."""
        return {
            "path": self.path, "start_line": self.line, "end_line": self.line,
            "annotation_level": self.level, "title": self.title, "message": self.message,
        }  # fmt: skip


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
    """The check run's title: the counts."""
    n = {v: sum(r.verdict == v for r in rows) for v in ("pass", "fail", "needs_review")}
    return f"gradebox gate: {n['pass']} pass, {n['fail']} fail, {n['needs_review']} needs review"


def report(rows: Sequence[GateRow], *, commit: str | None = None) -> str:
    """The Markdown report (the comment without its marker, the summary, the job summary)."""
    icon = {"success": "✅", "failure": "❌", "neutral": "⚠️"}[conclusion(rows)]
    out = [f"## {icon} {title(rows)}", ""]
    for row in rows:
        out += _section(row)
    if commit:
        out.append(f"<sub>gradebox · commit {code(commit[:12])}</sub>")
    return "\n".join(out) + "\n"


def comment_body(rows: Sequence[GateRow], *, commit: str | None = None) -> str:
    """The sticky comment: the marker line, then the report, within the limit."""
    return fit(MARKER + "\n" + report(rows, commit=commit), SUMMARY_LIMIT)


def is_ours(body: object) -> bool:
    """Whether a comment body is a gradebox gate comment (the marker as its first line)."""
    return isinstance(body, str) and body.split("\n", 1)[0].strip() == MARKER


def fit(text: str, limit: int, note: str | None = None) -> str:
    """``text`` cut at a line boundary to at most ``limit`` characters, with a note if cut."""
    if len(text) <= limit:
        return text
    note = note or (
        f"\n\n**… truncated**: {len(text)} characters, GitHub shows at most {limit}; "
        "the full report is in the job's artifacts (gate.jsonl, comment.md).\n"
    )
    room = max(0, limit - len(note))
    cut = text.rfind("\n", 0, room)
    return text[: cut if cut > 0 else room] + note


def _section(row: GateRow) -> list[str]:
    out = [f"### {_ICON.get(row.verdict, '')} {code(row.id, 120)}: **{row.verdict}** "
           f"({row.reason})"]  # fmt: skip
    if row.detail:
        out.append(f"- why: {code(row.detail, 300)}")
    if row.infra_error:
        out.append(f"- infrastructure: {code(row.infra_error, 300)}")
    if row.apply is not None and row.apply.strategy:
        out.append(f"- applied with `{row.apply.strategy}`")
    if row.apply is not None and row.apply.protected:
        shown = ", ".join(code(p, 120) for p in row.apply.protected[:10])
        out.append(f"- protected paths: {shown}")
    out += _tests(row)
    out += _static(row)
    if row.diff is not None:
        d = row.diff.to_json()
        out.append(f"- diff: {d['files']} file(s), +{d['added']} -{d['removed']}")
    out += [
        f"- tamper risk: {code(f'{h.path}:{h.line}', 160)} {code(h.rule, 10)} {code(h.what, 160)}"
        for h in row.tamper[:10]
    ]
    if len(row.tamper) > 10:
        out.append(f"  - and {len(row.tamper) - 10} more")
    return [*out, ""]


def _tests(row: GateRow) -> list[str]:
    t = row.tests
    if t is None:
        return []
    f2p_ok = sum(c in _OK_F2P for c in t.fail_to_pass.values())
    regressed = sorted((i, c) for i, c in t.pass_to_pass.items() if c != "P2P")
    failing = sorted((i, c) for i, c in t.fail_to_pass.items() if c not in _OK_F2P)
    out = [f"- FAIL_TO_PASS: {f2p_ok}/{len(t.fail_to_pass)} pass"]
    out += [f"  - still failing: {code(i, 200)} ({c})" for i, c in failing[:10]]
    out.append(f"- PASS_TO_PASS: {len(t.pass_to_pass) - len(regressed)}/{len(t.pass_to_pass)} "
               "still pass")  # fmt: skip
    out += [f"  - regressed: {code(i, 200)} ({c})" for i, c in regressed[:10]]
    if len(regressed) > 10:
        out.append(f"  - and {len(regressed) - 10} more")
    if t.quarantined:
        out.append(f"- quarantined (flaky at base, never deciding): {len(t.quarantined)}")
    if t.head_problems:
        out.append(f"- the head run cannot be believed: {code('; '.join(t.head_problems), 300)}")
    return out


def _static(row: GateRow) -> list[str]:
    s = row.static
    if s is None:
        return []
    new = [x for x in s.findings if x.state == "new"]
    fixed = sum(x.state == "fixed" for x in s.findings)
    out = [f"- static ({s.filter_mode}): {len(new)} new, {len(s.counted)} counted, "
           f"{fixed} fixed → {s.effect}"]  # fmt: skip
    for x in list(s.counted)[:10]:
        f = x.finding
        out.append(f"  - {code(f'{x.path}:{f.line}', 160)} {code(f.rule, 40)} ({f.severity}) "
                   f"{code(f.message, 160)}")  # fmt: skip
    if len(s.counted) > 10:
        out.append(f"  - and {len(s.counted) - 10} more (annotations on the changed lines)")
    if s.tool_errors:
        out.append(f"- static tools failed: {code('; '.join(s.tool_errors), 300)}")
    return out


def line_annotations(rows: Sequence[GateRow]) -> list[Annotation]:
    """Annotations on changed lines: counted new findings and tamper risks, in row order."""
    out: list[Annotation] = []
    for row in rows:
        if row.static is not None:
            for x in row.static.counted:
                f = x.finding
                out.append(Annotation(
                    x.path, max(f.line, 1), _LEVEL.get(f.severity, "notice"),
                    plain(f"{f.rule} ({f.layer}, new, {f.severity})", 200), plain(f.message, 1000),
                ))  # fmt: skip
        out += [
            Annotation(h.path, max(h.line, 1), "warning", plain(f"{h.rule} tamper risk", 200),
                       plain(f"{h.what}: reaches into the test machinery; review by hand", 1000))
            for h in row.tamper
        ]  # fmt: skip
    return [a for a in out if _safe_path(a.path)]


def _safe_path(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and ".." not in parts and len(path) < 1024
