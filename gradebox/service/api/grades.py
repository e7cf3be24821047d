"""Synchronous grades: ``POST /v1/grade`` grades one sample now, ``GET /v1/grades/{id}`` again.

The body is the sample, plus optionally ``"static": true|false`` (default: true
when the server runs the static layers) and ``"judge": "wait"|"defer"|"off"``
(default: ``serve --judge-default``, itself ``off``). Grade slots are taken only
once the body is read and checked, so a slow body never holds one.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping

from fastapi import APIRouter, Request

from gradebox.model import task_of
from gradebox.service.api.bodies import off_loop
from gradebox.service.api.checks import one_sample, ready
from gradebox.service.api.deps import State, Who, body
from gradebox.service.api.openapi_bodies import GRADE_BODY
from gradebox.service.api.responses import BODY, WHO, errors
from gradebox.service.engine.sync import submit_grade
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject, shown

__all__ = ["router"]

router = APIRouter(tags=["grade"])


@router.post(
    "/v1/grade",
    openapi_extra=GRADE_BODY,
    responses=errors(*WHO, *BODY, 429, 503, 504),
)
async def grade(request: Request, who: Who, state: State) -> JsonObject:
    """Grade one sample now and return its row, as far as the task's disclosure allows."""
    grading = ready(state)
    raw = await body(request, state)
    sample, layers = await off_loop(one_sample, state, raw, who, limiter=state.parsers)
    wanted = {task_of(sample): 1}
    state.rate.take(who.token_id, wanted)
    try:
        state.slots.acquire(who.token_id)  # only now: a slow body never holds a slot
    except ApiError:
        state.rate.give_back(who.token_id, wanted)
        raise
    grade_id = secrets.token_hex(12)
    future = submit_grade(state, grading, grade_id, who.token_id, sample, layers)
    try:
        row = await asyncio.wait_for(asyncio.wrap_future(future), state.config.grade_deadline_s)
    except TimeoutError as exc:
        raise ApiError(504, "grading did not finish within the deadline") from exc
    return _with_id(shown(row, admin=who.is_admin), grade_id)


@router.get("/v1/grades/{grade_id}", responses=errors(*WHO, 404))
async def get_grade(grade_id: str, who: Who, state: State) -> JsonObject:
    """A synchronous grade's row again; a deferred judgement shows once it finished."""
    found = state.store.grade(grade_id) if len(grade_id) <= 64 else None
    if found is None or not (who.is_admin or found[0] == who.token_id):
        raise ApiError(404, "not found")  # never confirm another token's grade exists
    return _with_id(shown(found[1], admin=who.is_admin), grade_id)


def _with_id(row: Mapping[str, object], grade_id: str) -> JsonObject:
    """The row with its grade id (``GET /v1/grades/{grade_id}``) first."""
    return {"grade_id": grade_id, **row}
