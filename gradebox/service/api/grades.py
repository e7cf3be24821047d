"""Synchronous grades: ``POST /v1/grade`` grades one sample now, ``GET /v1/grades/{id}`` again.

The body is the sample, plus optionally ``"static": true|false`` (default: true
when the server runs the static layers) and ``"judge": "wait"|"defer"|"off"``
(default: ``serve --judge-default``, itself ``off``). Grade slots are taken only
once the body is read and checked, so a slow body never holds one.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any

from fastapi import APIRouter, Request

from gradebox.model import task_of
from gradebox.service.api.checks import one_sample, ready
from gradebox.service.api.deps import State, Who, WhoStateRoute, body
from gradebox.service.api.openapi_bodies import GRADE_BODY
from gradebox.service.api.responses import BODY, WHO, errors
from gradebox.service.config import Layers
from gradebox.service.engine.auth import Principal
from gradebox.service.engine.state import ServiceState
from gradebox.service.engine.sync import Admission, submit_grade
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject, StoredGrade, shown

__all__ = ["router"]

router = APIRouter(tags=["grade"])


async def grade(request: Request, who: Who, state: State) -> JsonObject:
    """Grade one sample now and return its row, as far as the task's disclosure allows."""
    grading = ready(state)
    raw = await body(request, state)
    grade_id = secrets.token_hex(12)
    # One thread checks the body, then grades it (off the loop, one hop).
    admit = partial(_admit, state, raw, who)
    future, admission = submit_grade(state, grading, grade_id, who.token_id, admit)
    row = await _graded(future, admission, state.config.grade_deadline_s)
    return _with_id(shown(row, admin=who.is_admin), grade_id)


def _admit(state: ServiceState, raw: bytes, who: Principal) -> tuple[dict[str, Any], Layers]:
    """In the grading thread: the body parsed and checked, then the rate and a grade slot."""
    sample, layers = one_sample(state, raw, who)
    wanted = {task_of(sample): 1}
    state.rate.take(who.token_id, wanted)
    try:
        state.slots.acquire(who.token_id)  # only now: a slow body never holds a slot
    except ApiError:
        state.rate.give_back(who.token_id, wanted)
        raise
    return sample, layers


async def _graded(
    future: Future[StoredGrade], admission: Admission, deadline_s: float
) -> StoredGrade:
    """The grade; 504 once ``deadline_s`` passed since its admission (checking not counted)."""
    waiting = asyncio.wrap_future(future)
    timeout = deadline_s
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=timeout)
            if done:
                return waiting.result()  # or the 413, 422 or 429 of the check
            if admission.at is not None:  # else: still checked (within its own budget)
                timeout = admission.at + deadline_s - time.monotonic()
                if timeout <= 0:
                    raise ApiError(504, "grading did not finish within the deadline")
    finally:
        waiting.cancel()  # not started yet: never starts (the grade itself goes on)


# The hot path: served without the dependency solver (same answers, same document).
router.add_api_route(
    "/v1/grade",
    grade,
    methods=["POST"],
    openapi_extra=GRADE_BODY,
    responses=errors(*WHO, *BODY, 429, 503, 504),
    route_class_override=WhoStateRoute,
)


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
