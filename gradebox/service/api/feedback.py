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

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request

from gradebox.service.api.bodies import Budget, parse_json
from gradebox.service.api.deps import State, Who, body
from gradebox.service.api.openapi_bodies import json_body
from gradebox.service.api.responses import BODY, WHO, errors
from gradebox.service.engine.feedback import stats
from gradebox.service.engine.state import ServiceState
from gradebox.service.problems import ApiError, Problem
from gradebox.service.rows import JsonObject
from gradebox.service.store import Target, iso_time

__all__ = [
    "MAX_NOTE",
    "MAX_REVIEWER",
    "Feedback",
    "check_feedback",
    "router",
]

MAX_REVIEWER = 200
"""Longest ``reviewer`` (characters)."""
MAX_NOTE = 2000
"""Longest ``note`` (characters)."""
"""The standard normal quantile for a two-sided 95% interval."""
_KEYS = ("accepted", "reviewer", "note")


@dataclass(frozen=True, slots=True)
class Feedback:
    """One person's (or tool's) outcome for one graded sample."""

    accepted: bool
    """Whether the suggestion was accepted."""
    reviewer: str | None
    """Who saw it (free text, bounded); never returned."""
    note: str | None
    """Why (free text, bounded); never returned."""


def check_feedback(parsed: object) -> Feedback:
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


# -------------------------------------------------------------------- routes


router = APIRouter(tags=["feedback"])

_BODY = json_body(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["accepted"],
        "properties": {
            "accepted": {"type": "boolean"},
            "reviewer": {"type": ["string", "null"], "maxLength": MAX_REVIEWER},
            "note": {"type": ["string", "null"], "maxLength": MAX_NOTE},
        },
    }
)

_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_SINCE = Query(
    description="An RFC 3339 time with its offset, or Unix seconds (default: all).",
    json_schema_extra={
        "anyOf": [
            {"type": "string", "pattern": f"^{_SECONDS.pattern}$"},
            {"type": "string", "format": "date-time", "pattern": f"^{_RFC3339.pattern}$"},
        ]
    },
)
_TASK = Query(description="Only this task's samples.", json_schema_extra={"maxLength": 200})


@router.post(
    "/v1/grades/{grade_id}/feedback",
    openapi_extra=_BODY,
    responses=errors(*WHO, *BODY, 404),
)
async def grade_feedback(grade_id: str, request: Request, who: Who, state: State) -> JsonObject:
    """Say whether a synchronous grade's sample was accepted (sending again replaces it)."""
    found = state.store.grade(grade_id) if len(grade_id) <= 64 else None
    if found is None or not (who.is_admin or found[0] == who.token_id):
        raise ApiError(404, "not found")  # never confirm another token's grade exists
    fb = await _feedback(state, request)
    when = _put(state, "grade", grade_id, -1, found[0], fb)
    return {"grade_id": grade_id, "accepted": fb.accepted, "recorded": iso_time(when)}


@router.post(
    "/v1/runs/{run_id}/samples/{sample_id}/feedback",
    openapi_extra=_BODY,
    responses=errors(*WHO, *BODY, 404),
)
async def run_feedback(
    run_id: str, sample_id: str, request: Request, who: Who, state: State
) -> JsonObject:
    """The same for one sample of a run, by the sample's ``id``."""
    info = state.store.run(run_id) if len(run_id) <= 64 else None
    if info is None or not (who.is_admin or info.owner == who.token_id):
        raise ApiError(404, "not found")
    idx = state.store.sample_index(run_id, sample_id)
    if idx is None:
        raise ApiError(404, "no graded sample with this id in the run")
    fb = await _feedback(state, request)
    when = _put(state, "run", run_id, idx, info.owner, fb)
    return {
        "run_id": run_id,
        "id": sample_id,
        "accepted": fb.accepted,
        "recorded": iso_time(when),
    }


@router.get("/v1/stats", responses=errors(*WHO, 422))
async def get_stats(
    who: Who,
    state: State,
    since: Annotated[str | None, _SINCE] = None,
    task: Annotated[str | None, _TASK] = None,
) -> JsonObject:
    """Acceptance rates by verdict, judge verdict and static effect (own feedback only)."""
    start = _since(since)
    if task is not None and len(task) > 200:
        raise ApiError(422, "invalid query", [Problem("task", "too long", "query")])
    owner = None if who.is_admin else who.token_id
    found = stats(state.store, owner=owner, since=start, task=task)
    return {"since": iso_time(start) if start else None, "task": task} | found.to_json()


def _put(state: ServiceState, kind: Target, key: str, idx: int, owner: str, fb: Feedback) -> float:
    return state.store.put_feedback(
        kind, key, idx, owner, accepted=fb.accepted, reviewer=fb.reviewer, note=fb.note
    )


async def _feedback(state: ServiceState, request: Request) -> Feedback:
    raw = await body(request, state)
    return check_feedback(parse_json(raw, Budget(state.config.parse_budget_s)))


def _since(text: str | None) -> float:
    if text is None:
        return 0.0
    try:
        return float(text) if _SECONDS.fullmatch(text) else _iso(text)
    except ValueError as exc:
        message = "must be an ISO 8601 time (2026-12-01T00:00:00Z) or Unix seconds"
        raise ApiError(422, "invalid query", [Problem("since", message, "query")]) from exc


def _iso(text: str) -> float:
    if not _RFC3339.fullmatch(text):
        raise ValueError("not an RFC 3339 time with its offset")
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError("no time zone")
    return when.timestamp()
