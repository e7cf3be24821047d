"""Tasks (admin): ``PUT /v1/tasks/{task}`` registers or replaces one, ``GET`` reads it.

A task id may hold a slash (``HumanEval/85``, sent as is or as ``%2F``), hence
``{task:path}``. Hidden cases are write-only: nothing returns them.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Path, Request

from gradebox.service.api.bodies import off_loop
from gradebox.service.api.checks import checked_task
from gradebox.service.api.deps import Admin, State, body
from gradebox.service.api.openapi_bodies import TASK_BODY, TASK_ID
from gradebox.service.api.responses import ADMIN, BODY, errors
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject

__all__ = ["router"]

_log = logging.getLogger("gradebox.service")

router = APIRouter(tags=["tasks"])

TaskId = Annotated[str, Path(json_schema_extra=TASK_ID)]
"""A task id in the path (documented here, checked by the engine)."""


@router.put(
    "/v1/tasks/{task:path}",
    openapi_extra=TASK_BODY,
    responses=errors(*ADMIN, *BODY),
)
async def put_task(task: TaskId, request: Request, _who: Admin, state: State) -> JsonObject:
    """Register or replace a task by its id. Hidden cases are write-only: nothing returns them.

    The entry point is ``public.fn`` (default: the id, when it is a Python name).
    """
    raw = await body(request, state)
    checked = await off_loop(checked_task, state, task, raw, limiter=state.parsers)
    revision = state.store.put_task(
        task, checked.public, checked.hidden, checked.limits, checked.disclosure, checked.static
    )
    _log.info("task %s: revision %d (%d hidden cases)", task, revision, len(checked.hidden))
    fn = checked.public["fn"]
    return {"task": task, "fn": fn, "revision": revision, "cases": len(checked.hidden)}


@router.get("/v1/tasks/{task:path}", responses=errors(*ADMIN, 404))
async def get_task(task: TaskId, _who: Admin, state: State) -> JsonObject:
    """The public part of a task and how many hidden cases it has (never the cases)."""
    info = state.store.task_summary(task)
    if info is None:
        raise ApiError(404, "not found")
    return info
