"""Acceptance rates over outcome feedback (``GET /v1/stats``), with Wilson intervals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gradebox.judging.stats import wilson
from gradebox.service.rows import JsonObject
from gradebox.service.store import FeedbackGroup, Store

__all__ = ["Rate", "Stats", "stats"]


@dataclass(frozen=True, slots=True)
class Rate:
    """``hits`` of ``n``, with a Wilson 95% interval."""

    n: int
    """How many feedbacks count here."""
    hits: int
    """How many of them were the event counted (accepted, rejected...)."""

    def to_json(self, hits_name: str = "accepted") -> JsonObject:
        """``{"n", <hits_name>, "rate", "ci95"}``; rate and interval ``null`` when ``n`` is 0."""
        interval = wilson(self.hits, self.n)
        return {
            "n": self.n,
            hits_name: self.hits,
            "rate": round(self.hits / self.n, 4) if self.n else None,
            "ci95": None if interval is None else interval.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Stats:
    """What ``GET /v1/stats`` answers."""

    total: Rate
    """Every feedback counted; hits: accepted."""
    by_verdict: dict[str, Rate]
    """Acceptance per row verdict (``pass``, ``fail``, ``needs_review``, ``infra_error``)."""
    by_judge: dict[str, Rate]
    """Acceptance per judge verdict (``match``, ``mismatch``), else per judge status
    (``pending``, ``unavailable``, ``needs_review``, ``skipped``), ``off`` without a judge."""
    by_static: dict[str, Rate]
    """Acceptance per static effect (``pass``, ``review``, ``fail``), ``off`` without static."""
    pass_rejected: Rate
    """Of rows that passed, how many were rejected."""
    fail_accepted: Rate
    """Of rows that failed, how many were accepted."""

    def to_json(self) -> JsonObject:
        """Plain JSON."""
        return {
            "feedback": self.total.n,
            "accepted": self.total.hits,
            "acceptance": self.total.to_json(),
            "by_verdict": {k: r.to_json() for k, r in sorted(self.by_verdict.items())},
            "by_judge_verdict": {k: r.to_json() for k, r in sorted(self.by_judge.items())},
            "by_static_effect": {k: r.to_json() for k, r in sorted(self.by_static.items())},
            "pass_rejected": self.pass_rejected.to_json("rejected"),
            "fail_accepted": self.fail_accepted.to_json("accepted"),
        }


def stats(store: Store, *, owner: str | None, since: float, task: str | None) -> Stats:
    """Acceptance over the feedback of ``owner`` (``None``: everyone's) since ``since``."""
    return _aggregate(store.feedback_groups(owner=owner, since=since, task=task))


def _aggregate(groups: Iterable[FeedbackGroup]) -> Stats:
    counts: dict[tuple[str, str], list[int]] = {}
    for verdict, judge, static, accepted, count in groups:
        for dimension in (("verdict", verdict), ("judge", judge), ("static", static)):
            n_hits = counts.setdefault(dimension, [0, 0])
            n_hits[0] += count
            n_hits[1] += count if accepted else 0

    def by(name: str) -> dict[str, Rate]:
        return {v: Rate(n, h) for (d, v), (n, h) in counts.items() if d == name}

    verdicts = by("verdict")
    passed = verdicts.get("pass", Rate(0, 0))
    failed = verdicts.get("fail", Rate(0, 0))
    total = Rate(sum(r.n for r in verdicts.values()), sum(r.hits for r in verdicts.values()))
    return Stats(
        total=total,
        by_verdict=verdicts,
        by_judge=by("judge"),
        by_static=by("static"),
        pass_rejected=Rate(passed.n, passed.n - passed.hits),
        fail_accepted=failed,
    )
