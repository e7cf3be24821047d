"""Outcome feedback: did the person (or tool) that saw a graded suggestion accept it?

- ``POST /v1/grades/{grade_id}/feedback`` and
  ``POST /v1/runs/{run_id}/samples/{sample_id}/feedback``, body
  ``{"accepted": true, "reviewer": "ana", "note": "kept it"}`` (``reviewer`` at
  most 200 characters, ``note`` at most 2,000; nothing else). One feedback per
  graded sample: sending again replaces it.
- ``GET /v1/stats?since=2026-12-01T00:00:00Z&task=is_even``: acceptance rates by
  verdict, by judge verdict and by static effect, each with its count and a
  Wilson 95% interval, and how often a ``pass`` was rejected and a ``fail``
  accepted. The rows are read as they are now (a deferred judgement that has
  since finished counts with its final verdict).

Feedback is per token as runs are: a grader token sends feedback on its own
grades only (another token's grade or run is the same 404 as a missing one),
and its stats count its own feedback; an admin's count everyone's. Reviewer
names and notes are stored and never returned, logged or counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request

from gradebox.judging.stats import wilson
from gradebox.service.bodies import Budget, parse_json
from gradebox.service.deps import Who, body
from gradebox.service.problems import ApiError, Problem
from gradebox.service.state import ServiceState
from gradebox.service.store import Store, iso_time

__all__ = [
    "MAX_NOTE",
    "MAX_REVIEWER",
    "Feedback",
    "Rate",
    "Stats",
    "check_feedback",
    "feedback_routes",
    "stats",
]

MAX_REVIEWER = 200
"""Longest ``reviewer`` (characters)."""
MAX_NOTE = 2000
"""Longest ``note`` (characters)."""
"""The standard normal quantile for a two-sided 95% interval."""
_KEYS = ("accepted", "reviewer", "note")
Target = Literal["grade", "run"]


@dataclass(frozen=True, slots=True)
class Feedback:
    """One person's (or tool's) outcome for one graded sample."""

    accepted: bool
    """Whether the suggestion was accepted."""
    reviewer: str | None
    """Who saw it (free text, bounded); never returned."""
    note: str | None
    """Why (free text, bounded); never returned."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``hits`` of ``n``, with a Wilson 95% interval."""

    n: int
    """How many feedbacks count here."""
    hits: int
    """How many of them were the event counted (accepted, rejected...)."""

    def to_json(self, hits_name: str = "accepted") -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
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


def check_feedback(parsed: Any) -> Feedback:
    """A feedback body, checked.

    Raises:
        ApiError: 422 with every problem (values are never repeated).
    """
    if not isinstance(parsed, dict):
        raise ApiError(422, "invalid feedback", [Problem("", "must be an object")])
    problems = [
        Problem("/" + str(key)[:80], "unknown property; known: " + ", ".join(_KEYS))
        for key in parsed
        if key not in _KEYS
    ]
    accepted = parsed.get("accepted")
    if not isinstance(accepted, bool):
        problems.append(Problem("/accepted", "must be true or false"))
    texts = {}
    for key, most in (("reviewer", MAX_REVIEWER), ("note", MAX_NOTE)):
        value = parsed.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > most):
            problems.append(Problem(f"/{key}", f"must be a string of at most {most} characters"))
        texts[key] = value if isinstance(value, str) else None
    if problems:
        raise ApiError(422, "invalid feedback", problems)
    return Feedback(accepted is True, texts["reviewer"], texts["note"])


# ------------------------------------------------------------------- storage


def _put(store: Store, kind: Target, key: str, idx: int, owner: str, fb: Feedback) -> float:
    now = time.time()
    store.write_fast(
        "INSERT OR REPLACE INTO feedback "
        "(kind, key, idx, owner, accepted, reviewer, note, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (kind, key, idx, owner, int(fb.accepted), fb.reviewer, fb.note, now),
    )
    return now


_SELECT = """
SELECT json_extract(r.row, '$.verdict'),
       coalesce(json_extract(r.row, '$.judge.verdict'), json_extract(r.row, '$.judge.status'),
                'off'),
       coalesce(json_extract(r.row, '$.static.effect'), 'off'),
       f.accepted, count(*)
FROM feedback f JOIN {table} r ON {join}
WHERE f.created >= ? AND (? IS NULL OR f.owner = ?)
  AND (? IS NULL OR coalesce(json_extract(r.row, '$.task'), json_extract(r.row, '$.fn')) = ?)
GROUP BY 1, 2, 3, 4
"""
_ROWS = (
    _SELECT.format(table="grades", join="f.kind = 'grade' AND r.id = f.key")
    + "UNION ALL"
    + _SELECT.format(table="samples", join="f.kind = 'run' AND r.run_id = f.key AND r.idx = f.idx")
)
"""Feedback joined to the rows it is about (each by its primary key), grouped."""


def stats(store: Store, *, owner: str | None, since: float, task: str | None) -> Stats:
    """Acceptance over the feedback of ``owner`` (``None``: everyone's) since ``since``."""
    args = (since, owner, owner, task, task)
    groups = store.fetch_all(_ROWS, args + args)
    return _aggregate((str(v), str(j), str(s), bool(a), int(c)) for v, j, s, a, c in groups)


def _aggregate(groups: Iterable[tuple[str, str, str, bool, int]]) -> Stats:
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


# -------------------------------------------------------------------- routes


def feedback_routes(app: FastAPI, state: ServiceState) -> None:
    """Add the feedback and stats routes to ``app``."""

    @app.post("/v1/grades/{grade_id}/feedback", tags=["feedback"])
    async def grade_feedback(grade_id: str, request: Request, who: Who) -> dict[str, Any]:
        """Say whether a synchronous grade's sample was accepted (sending again replaces it)."""
        found = state.store.grade(grade_id) if len(grade_id) <= 64 else None
        if found is None or not (who.is_admin or found[0] == who.token_id):
            raise ApiError(404, "not found")  # never confirm another token's grade exists
        fb = await _feedback(state, request)
        when = _put(state.store, "grade", grade_id, -1, found[0], fb)
        return {"grade_id": grade_id, "accepted": fb.accepted, "recorded": iso_time(when)}

    @app.post("/v1/runs/{run_id}/samples/{sample_id}/feedback", tags=["feedback"])
    async def run_feedback(
        run_id: str, sample_id: str, request: Request, who: Who
    ) -> dict[str, Any]:
        """The same for one sample of a run, by the sample's ``id``."""
        info = state.store.run(run_id) if len(run_id) <= 64 else None
        if info is None or not (who.is_admin or info.owner == who.token_id):
            raise ApiError(404, "not found")
        idx = _sample_index(state.store, run_id, sample_id)
        if idx is None:
            raise ApiError(404, "no graded sample with this id in the run")
        fb = await _feedback(state, request)
        when = _put(state.store, "run", run_id, idx, info.owner, fb)
        return {
            "run_id": run_id,
            "id": sample_id,
            "accepted": fb.accepted,
            "recorded": iso_time(when),
        }

    @app.get("/v1/stats", tags=["feedback"])
    async def get_stats(
        who: Who,
        since: Annotated[
            str | None, Query(description="ISO 8601 time or Unix seconds (default: all).")
        ] = None,
        task: Annotated[str | None, Query(description="Only this task's samples.")] = None,
    ) -> dict[str, Any]:
        """Acceptance rates by verdict, judge verdict and static effect (own feedback only)."""
        start = _since(since)
        if task is not None and len(task) > 200:
            raise ApiError(422, "invalid query", [Problem("task", "too long", "query")])
        owner = None if who.is_admin else who.token_id
        found = stats(state.store, owner=owner, since=start, task=task)
        return {"since": iso_time(start) if start else None, "task": task} | found.to_json()


async def _feedback(state: ServiceState, request: Request) -> Feedback:
    raw = await body(request, state)
    return check_feedback(parse_json(raw, Budget(state.config.parse_budget_s)))


def _sample_index(store: Store, run_id: str, sample_id: str) -> int | None:
    row = store.fetch_one(
        "SELECT idx FROM samples WHERE run_id = ? AND json_extract(sample, '$.id') = ? "
        "AND row IS NOT NULL",
        (run_id, sample_id),
    )
    return None if row is None else int(row[0])


def _since(text: str | None) -> float:
    if text is None:
        return 0.0
    try:
        return float(text) if text.replace(".", "", 1).isdigit() else _iso(text)
    except ValueError as exc:
        message = "must be an ISO 8601 time (2026-12-01T00:00:00Z) or Unix seconds"
        raise ApiError(422, "invalid query", [Problem("since", message, "query")]) from exc


def _iso(text: str) -> float:
    when = datetime.fromisoformat(text[:64])
    if when.tzinfo is None:
        raise ValueError("no time zone")
    return when.timestamp()
