"""People's labels against the judge: ``gradebox judge agree --labels labels.jsonl RESULTS``.

labels.jsonl, one object a line::

    {"id": "s1", "verdict": "match"}
    {"id": "s2", "verdict": "mismatch", "scores": {"INT001": 2, "QUA001": 4}}
    {"id": "s3", "scores": {"INT001": 5}}

``id`` is a sample id of RESULTS; ``verdict`` (``match`` / ``mismatch``) and
``scores`` (criterion id to an integer on the rubric's scale) are each optional,
but a line must have one of them. A bad line is ``file:line: what is wrong`` and
nothing is computed.

The judge is the first rater, people the second: a confusion table, Cohen's
kappa and Scott's pi with bootstrap intervals, the judge's leniency
P(judge match | people say mismatch) and strictness P(judge mismatch | people
say match); per criterion, exact agreement and quadratic-weighted kappa over the
ordinal scale (categories from the lowest to the highest score either side gave).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from gradebox.errors import BadInput
from gradebox.judging.agreement import MIN_ITEMS, Agreement, Rate, agreement, rate
from gradebox.judging.stats import Interval, bootstrap_interval, weighted_kappa

__all__ = [
    "CriterionAgreement",
    "HumanAgreement",
    "Label",
    "compare",
    "read_labels",
]

LabelVerdict = Literal["match", "mismatch"]
"""A person's intent verdict."""


@dataclass(frozen=True, slots=True)
class Label:
    """One person's label of one sample."""

    sample_id: str
    """The sample's id in RESULTS."""
    verdict: LabelVerdict | None
    """Their intent verdict, if they gave one."""
    scores: dict[str, int] = field(default_factory=dict)
    """Their score per criterion id, if they gave any."""


def read_labels(path: Path) -> list[Label]:
    """Read labels.jsonl.

    Args:
        path: The file.

    Returns:
        One label per line, in file order.

    Raises:
        BadInput: The file cannot be read, or a line is bad (every bad line is listed).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput([f"{path}: cannot read: {exc}"]) from exc
    labels: list[Label] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            label = _label(line)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if label.sample_id in seen:
            problems.append(
                f"{where}: id {label.sample_id!r} already labelled on line {seen[label.sample_id]}"
            )
            continue
        seen[label.sample_id] = number
        labels.append(label)
    if problems:
        raise BadInput(problems)
    return labels


def _label(line: str) -> Label:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if type(obj) is not dict:
        raise ValueError("not a JSON object")
    unknown = sorted(set(obj) - {"id", "verdict", "scores"})
    if unknown:
        raise ValueError(f"unknown field(s) {unknown}; a label has id, verdict, scores")
    sample_id = obj.get("id")
    if type(sample_id) is not str or not sample_id:
        raise ValueError("'id' must be a non-empty string")
    verdict = obj.get("verdict")
    if verdict is not None and verdict not in ("match", "mismatch"):
        raise ValueError(f"'verdict' must be 'match' or 'mismatch', got {verdict!r}")
    scores = obj.get("scores", {})
    if type(scores) is not dict or not all(
        type(k) is str and type(v) is int for k, v in scores.items()
    ):
        raise ValueError("'scores' must be an object of criterion id to integer")
    if verdict is None and not scores:
        raise ValueError("a label needs a 'verdict' or 'scores'")
    return Label(sample_id, cast(LabelVerdict | None, verdict), dict(scores))


@dataclass(frozen=True, slots=True)
class CriterionAgreement:
    """Judge and people on one criterion's ordinal scores."""

    criterion: str
    """The criterion id."""
    n: int
    """Items both scored."""
    exact: Rate | None
    """Items where the scores are equal."""
    weighted_kappa: float | None
    """Quadratic-weighted kappa; ``None`` when undefined or with too few items."""
    interval: Interval | None
    """Its bootstrap 95 % interval."""
    note: str | None
    """Why a figure is missing."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "criterion": self.criterion,
            "n": self.n,
            "exact": None if self.exact is None else self.exact.to_json(),
            "weighted_kappa": None
            if self.weighted_kappa is None
            else round(self.weighted_kappa, 4),
            "weighted_kappa_ci": None if self.interval is None else self.interval.to_json(),
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class HumanAgreement:
    """Everything ``gradebox judge agree`` reports."""

    labels: int
    """Labels read."""
    unknown_ids: tuple[str, ...]
    """Labelled ids that are not in RESULTS (the first 20)."""
    unscored: int
    """Labelled samples whose judge did not score (skipped, unavailable, needs_review)."""
    verdicts: Agreement
    """Judge (first rater) against people, categories ``match``, ``mismatch``."""
    leniency: Rate | None
    """P(judge match | people say mismatch)."""
    strictness: Rate | None
    """P(judge mismatch | people say match)."""
    criteria: tuple[CriterionAgreement, ...]
    """Per criterion, sorted by id."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``--json``)."""
        return {
            "labels": self.labels,
            "unknown_ids": list(self.unknown_ids),
            "unscored": self.unscored,
            "verdicts": self.verdicts.to_json(),
            "leniency": None if self.leniency is None else self.leniency.to_json(),
            "strictness": None if self.strictness is None else self.strictness.to_json(),
            "criteria": [c.to_json() for c in self.criteria],
        }


def compare(labels: Sequence[Label], rows: Iterable[Mapping[str, Any]]) -> HumanAgreement:
    """The judge's scored annotations in ``rows`` against people's ``labels``.

    Args:
        labels: From :func:`read_labels`.
        rows: results.jsonl rows (a repeated judgement counts by its majority).

    Returns:
        The figures.
    """
    judged: dict[str, Mapping[str, Any] | None] = {}
    for row in rows:
        judge = row.get("judge")
        judged[str(row.get("id"))] = judge if isinstance(judge, Mapping) else None
    unknown = [label.sample_id for label in labels if label.sample_id not in judged]
    pairs: list[tuple[str, str]] = []
    scores: dict[str, list[tuple[int, int]]] = {}
    unscored = 0
    for label in labels:
        if label.sample_id not in judged:
            continue
        judge = judged[label.sample_id]
        if judge is None or judge.get("status") != "scored":
            unscored += 1
            continue
        verdict = judge.get("verdict")
        if label.verdict is not None and verdict in ("match", "mismatch"):
            pairs.append((str(verdict), label.verdict))
        theirs = judge.get("scores") or {}
        for cid, value in label.scores.items():
            if type(theirs.get(cid)) is int:
                scores.setdefault(cid, []).append((int(theirs[cid]), value))
    verdicts = agreement(pairs, ("match", "mismatch"))
    (mm, mx), (xm, xx) = verdicts.table
    return HumanAgreement(
        labels=len(labels),
        unknown_ids=tuple(unknown[:20]),
        unscored=unscored,
        verdicts=verdicts,
        leniency=rate(mx, mx + xx),
        strictness=rate(xm, xm + mm),
        criteria=tuple(_criterion(cid, scores[cid]) for cid in sorted(scores)),
    )


def _criterion(cid: str, pairs: list[tuple[int, int]]) -> CriterionAgreement:
    n = len(pairs)
    exact = rate(sum(a == b for a, b in pairs), n)
    if n < MIN_ITEMS:
        note = f"too few items (n={n} < {MIN_ITEMS})"
        return CriterionAgreement(cid, n, exact, None, None, note)
    low = min(min(a, b) for a, b in pairs)
    high = max(max(a, b) for a, b in pairs)
    k = high - low + 1
    table = [[0] * k for _ in range(k)]
    for a, b in pairs:
        table[a - low][b - low] += 1
    value = weighted_kappa(table)
    if value is None:
        return CriterionAgreement(cid, n, exact, None, None, "undefined: one score only")
    interval = bootstrap_interval(table, weighted_kappa)
    return CriterionAgreement(cid, n, exact, value, interval, None)
