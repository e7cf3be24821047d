"""Result rows: the frozen stored grade, fixed infra messages, size caps, each task's disclosure.

The engine produces a :class:`StoredGrade` (the pipeline's
:class:`~gradebox.grade.Grade`, capped, with a fixed infra message, and what
the service adds: its task's disclosure at grading time, the task and rubric
revisions it used); the store writes it and reads it back as one. Nothing
mutates a row after :meth:`~gradebox.grade.Grade.to_row`: :meth:`StoredGrade.to_row`
is the one place the service's row is written, and it writes the bytes the
service always stored and served. What a grader token is shown is :func:`shown`:
per-case fields only under ``cases``, counts under ``counts``, the verdict alone
under ``verdict``. Admins see stored rows.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from gradebox.grade import MAX_TEXT, Grade, TestsReport
from gradebox.service.config import DISCLOSURES, Disclosure

__all__ = [
    "INFRA_MESSAGE",
    "JsonObject",
    "Row",
    "StoredGrade",
    "public_infra",
    "shown",
]

Row = dict[str, Any]
"""A graded sample as JSON (:meth:`StoredGrade.to_row`), as stored and served."""
JsonObject = dict[str, object]
"""A JSON object made for a response or a file: written, never read back by key."""

_log = logging.getLogger("gradebox.service")

INFRA_MESSAGE = "sandbox infrastructure error; the sample was not graded"
"""What a client reads of any infrastructure failure (the cause goes to the server log)."""

_PER_CASE = ("failed", "timeouts", "outcomes", "explain", "counterexample")
Bulky = Literal["static", "judge", "explain", "counterexample", "failed", "timeouts", "outcomes"]
"""A row field emptied (``null``) first when a row is over the size cap, in this order."""
_BULKY: tuple[Bulky, ...] = get_args(Bulky)
_KEPT = ("id", "task", "fn", "pass", "verdict", "reason")
"""What a row keeps when emptying the bulky fields is not enough."""


@dataclass(frozen=True, slots=True)
class StoredGrade:
    """A graded sample as the service stores and serves it (frozen: built once, never mutated)."""

    grade: Grade
    """The pipeline's record, as stored: infra message fixed, free text cut (see :attr:`cut`)."""
    disclosure: Disclosure
    """What a grader token may see of it: its task's disclosure when it was graded."""
    task_revision: int | None = None
    """The task revision it was graded against (``None``: the task was not registered)."""
    rubric_revision: int | None = None
    """The pinned rubric revision a run's judge used (``0``: built in; ``None``: no pin)."""
    grade_id: str | None = None
    """A synchronous grade's id (``None`` for a run's sample: its key is run and index)."""
    cut: tuple[Bulky, ...] = ()
    """Bulky fields emptied to keep the row under the server's size cap (the row says
    ``truncated``); the grade holds them empty."""
    minimal: bool = False
    """The row kept only id, task, fn, pass, verdict and reason (the cap needed more)."""
    untasked: bool = False
    """A row stored before task ids: it has no ``task`` field and is served so."""

    @classmethod
    def capped(
        cls,
        grade: Grade,
        disclosure: str,
        max_bytes: int,
        *,
        task_revision: int | None = None,
        where: str = "grade",
    ) -> StoredGrade:
        """``grade`` as stored: a fixed infra message, free text cut, under ``max_bytes``.

        A row still too large (it cannot be, with the server's case limit, but the cap
        must hold whatever changes) loses its bulky fields and says ``truncated``.
        """
        grade = _short(_public_infra_grade(grade, where))
        stored = cls(grade, _level(disclosure) or "verdict", task_revision)
        row = grade.to_row()
        if _size(row) <= max_bytes:
            return stored
        for key in _BULKY:
            if row.get(key):
                row[key] = None
                if _size(row | {"truncated": True}) <= max_bytes:
                    return replace(stored, cut=_emptied(row))
        return replace(stored, minimal=True)

    def to_row(self) -> Row:
        """The row as stored and as an admin reads it (field order is part of the format)."""
        row: Row = self.grade.to_row()
        if self.untasked:
            del row["task"]
        if self.minimal:
            row = {k: row[k] for k in _KEPT if k in row} | {"truncated": True}
        elif self.cut:
            row |= dict.fromkeys(self.cut) | {"truncated": True}
        row["disclosure"] = self.disclosure
        if self.task_revision is not None:
            row["task_revision"] = self.task_revision
        if self.rubric_revision is not None:
            row["rubric_revision"] = self.rubric_revision
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, grade_id: str | None = None) -> StoredGrade:
        """Read a row :meth:`to_row` wrote (``from_row(r).to_row() == r``), checking it.

        Raises:
            ValueError: A field is missing, of the wrong type or out of vocabulary.
        """
        full = dict(row)
        cut: tuple[Bulky, ...] = ()
        minimal = bool(row.get("truncated")) and "outcomes" not in row
        if minimal:
            full |= {"failed": [], "timeouts": [], "outcomes": [], "gate": None,
                     "claim": "none", "latency_ms": 0.0, "infra_error": None,
                     "static": None, "judge": None}  # fmt: skip
        elif row.get("truncated"):
            cut = _emptied(row)
            full |= _refilled(full, cut)
        level = _level(row.get("disclosure", "verdict"))
        if level is None:
            raise ValueError(f"disclosure is not one of {DISCLOSURES}")
        return cls(
            Grade.from_row(full),
            level,
            _opt_int(row.get("task_revision"), "task_revision"),
            _opt_int(row.get("rubric_revision"), "rubric_revision"),
            grade_id,
            cut,
            minimal,
            "task" not in row,
        )


def _emptied(row: Mapping[str, object]) -> tuple[Bulky, ...]:
    """The bulky fields a truncated row holds empty (``null``)."""
    return tuple(k for k in _BULKY if k in row and row[k] is None)


def _level(value: object) -> Disclosure | None:
    """``value`` as a disclosure level, or ``None`` when it is none."""
    return next((d for d in DISCLOSURES if d == value), None)


def _refilled(row: Row, cut: tuple[Bulky, ...]) -> Row:
    """Values for emptied fields that :meth:`Grade.from_row` accepts and agree with the rest."""
    out: Row = {k: None for k in cut if k in ("static", "judge", "explain", "counterexample")}
    outcomes = [] if "outcomes" in cut else row["outcomes"]
    if not isinstance(outcomes, list):
        raise ValueError("outcomes is not a list")
    probe = TestsReport(outcomes=tuple(outcomes), gate=None, claim="none", latency_ms=0.0)
    return out | {"outcomes": outcomes, "failed": probe.failed, "timeouts": probe.timeouts}


def _opt_int(value: object, what: str) -> int | None:
    if value is not None and type(value) is not int:
        raise ValueError(f"{what} is not an integer")
    return value


def _short(grade: Grade) -> Grade:
    """``grade`` with each top-level free text of its row cut to :data:`MAX_TEXT`."""
    t = grade.tests
    tests = replace(
        t,
        infra_error=t.infra_error[:MAX_TEXT] if t.infra_error else t.infra_error,
        detail=t.detail[:MAX_TEXT] if t.detail else t.detail,
    )
    return replace(
        grade, id=grade.id[:MAX_TEXT], fn=grade.fn[:MAX_TEXT], task=grade.task[:MAX_TEXT],
        tests=tests,
    )  # fmt: skip


def _public_infra_grade(grade: Grade, where: str) -> Grade:
    """``grade`` with its infra message replaced by :data:`INFRA_MESSAGE`; the real one logged."""
    message = grade.tests.infra_error
    if not message:
        return grade
    text = "".join(c if c.isprintable() else "?" for c in message[:MAX_TEXT])
    _log.warning("%s: sample %.80r: infrastructure error: %s", where, grade.id, text)
    return replace(grade, tests=replace(grade.tests, infra_error=INFRA_MESSAGE))


def public_infra(row: dict[str, Any], where: str) -> dict[str, object]:
    """Replace a row's infra message by :data:`INFRA_MESSAGE`; log the real one, bounded."""
    message = row.get("infra_error")
    if message:
        text = "".join(c if c.isprintable() else "?" for c in str(message)[:MAX_TEXT])
        _log.warning("%s: sample %.80r: infrastructure error: %s", where, row.get("id"), text)
        row["infra_error"] = INFRA_MESSAGE
    return row


def shown(stored: StoredGrade | Row, *, admin: bool) -> Row:
    """The row as the client may see it: all of it for an admin, else by its disclosure."""
    row = stored.to_row() if isinstance(stored, StoredGrade) else stored
    if admin:
        return row
    level: Disclosure = row.get("disclosure", "verdict")
    if level == "cases":
        return row
    out = {k: v for k, v in row.items() if k not in _PER_CASE}
    outcomes = row.get("outcomes") or []
    latency = row.get("latency_ms")
    if level == "counts":
        ok, timeouts = outcomes.count("ok"), outcomes.count("timeout")
        out["counts"] = {
            "passed": ok,
            "failed": len(outcomes) - ok - timeouts,
            "timed_out": timeouts,
        }
        out["latency_ms"] = _coarse(latency)
    else:
        out["latency_ms"] = None
        out.pop("caps_hit", None)  # whether a cap was hit can depend on the hidden arguments
    return out


def _coarse(latency: object) -> float | None:
    """Latency rounded up to the next 100 ms."""
    if not isinstance(latency, int | float):
        return None
    return float(math.ceil(latency / 100) * 100)


def _size(row: dict[str, Any]) -> int:
    return len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
