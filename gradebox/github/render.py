"""What a reviewer reads: the sticky comment, the check run's output and annotations.

Everything here is built from typed :class:`~gradebox.patches.GateRow` records.
The Markdown is :func:`gradebox.patches.markdown.report`, the same renderer
``gradebox gate --comment`` writes with: text that came from a patch, a
repository or a sandbox (gate ids, test ids, paths, details, finding messages,
tamper notes) only ever appears through :func:`code`, one line, bounded, inside
an inline code span, with backticks and angle brackets replaced and control and
format characters (bidirectional overrides included) removed. Inside a code
span GitHub renders no link, image, HTML, mention or emphasis, so untrusted
text cannot add any, close the comment's structure, or write the hidden marker
(``<`` never survives). The marker is written once, as the body's first line,
by :func:`comment_body`; :func:`is_ours` recognises it only there. Annotations
are plain text (:func:`plain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from gradebox.patches import GateRow
from gradebox.patches.markdown import Conclusion, code, conclusion, plain, report, title

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
    "plain",
    "report",
    "title",
]

MARKER = "<!-- gradebox:gate -->"
"""The hidden first line of the sticky comment."""
SUMMARY_LIMIT = 65535
"""GitHub's limit on a check run's summary (and, near enough, a comment's body)."""
_LEVEL: dict[str, AnnotationLevel] = {
    "high": "failure", "medium": "warning", "low": "notice", "info": "notice",
}  # fmt: skip

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
