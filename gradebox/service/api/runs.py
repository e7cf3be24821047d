"""Runs: batches graded behind the response.

``POST /v1/runs`` queues samples (JSON array or JSON Lines) and returns the run
id at once (layers as query parameters: ``?static=true|false&judge=wait|defer|off``);
``GET /v1/runs/{id}``, ``GET /v1/runs/{id}/results``, ``GET /v1/runs/{a}/diff/{b}``
and ``DELETE /v1/runs/{id}``: status and summary, results.jsonl, comparison,
cancel. A cancelled run says why (``reason``). Another token's run is a 404,
exactly as a run that does not exist.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from gradebox.model import task_of
from gradebox.service.api.bodies import off_loop
from gradebox.service.api.checks import layers_of, ready, run_samples
from gradebox.service.api.deps import State, Who, body
from gradebox.service.api.openapi_bodies import RUN_BODY
from gradebox.service.api.responses import BODY, WHO, errors
from gradebox.service.config import JudgeMode, Layers
from gradebox.service.engine.auth import Principal
from gradebox.service.engine.state import ServiceState
from gradebox.service.engine.summaries import diff as diff_rows
from gradebox.service.engine.summaries import summary as summary_of
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject, Row, shown
from gradebox.service.store import QuotaExceeded, RunInfo

__all__ = ["router"]

_log = logging.getLogger("gradebox.service")

router = APIRouter(tags=["runs"])

_STATIC = Query(description="Run the static layers (default: true when the server runs them).")
_JUDGE = Query(description="wait, defer or off (default: serve --judge-default, itself off).")


@router.post(
    "/v1/runs",
    status_code=202,
    openapi_extra=RUN_BODY,
    responses=errors(*WHO, *BODY, 429, 503),
)
async def submit(
    request: Request,
    who: Who,
    state: State,
    static: Annotated[bool | None, _STATIC] = None,
    judge: Annotated[JudgeMode | None, _JUDGE] = None,
) -> JsonObject:
    """Queue a batch (JSON array or JSON Lines); returns the run id at once."""
    ready(state)
    layers = layers_of(state, static, judge, "?")
    _queue_space(state, who.token_id)  # before reading: a full queue costs no parsing
    raw = await body(request, state)
    samples = await off_loop(run_samples, state, raw, who, limiter=state.parsers)
    wanted = Counter(task_of(s) for s in samples)
    state.rate.take(who.token_id, wanted)
    run_id = secrets.token_hex(12)
    try:
        await off_loop(
            _add_run, state, run_id, who.token_id, samples, layers, limiter=state.parsers
        )
    except ApiError:
        state.rate.give_back(who.token_id, wanted)
        raise
    state.wake_worker()
    _log.info("run %s: queued (%d samples)", run_id, len(samples))
    return {"id": run_id, "status": "queued", "total": len(samples)}


@router.get("/v1/runs/{run_id}", responses=errors(*WHO, 404))
async def status(run_id: str, who: Who, state: State) -> JsonObject:
    """Status, progress and (over the results so far) the summary."""
    info = _visible(state, run_id, who)
    summary = None
    if info.done:
        summary = await off_loop(_summary, state, run_id, who, limiter=state.parsers)
    layers = Layers.from_json(state.store.run_options(run_id))
    pending = state.store.judge_pending(run_id) if layers.judge == "defer" else 0
    return _run_json(info) | {
        "summary": summary,
        "layers": layers.to_json(),
        "judge_pending": pending,
    }


@router.get(
    "/v1/runs/{run_id}/results",
    response_class=StreamingResponse,
    responses=errors(
        *WHO,
        404,
        ok={
            "description": "results.jsonl: one row a line, in sample order.",
            "content": {"application/jsonl": {"schema": {"type": "string"}}},
        },
    ),
)
async def results(run_id: str, who: Who, state: State) -> StreamingResponse:
    """The finished rows so far, in sample order, as JSON Lines (results.jsonl)."""
    _visible(state, run_id, who)
    rows = _jsonl(state, run_id, admin=who.is_admin)
    return StreamingResponse(rows, media_type="application/jsonl")


@router.get("/v1/runs/{old}/diff/{new}", responses=errors(*WHO, 404))
async def diff(old: str, new: str, who: Who, state: State) -> JsonObject:
    """What newly fails, newly passes or changed from run ``old`` to run ``new``."""
    _visible(state, old, who)
    _visible(state, new, who)
    return await off_loop(_diff, state, old, new, who, limiter=state.parsers)


@router.delete(
    "/v1/runs/{run_id}",
    responses=errors(*WHO, 404, 409, s409="The run has already finished."),
)
async def cancel(run_id: str, who: Who, state: State) -> JsonObject:
    """Cancel a queued or running run; finished results stay."""
    _visible(state, run_id, who)
    if not state.store.set_status(run_id, "cancelled", reason="cancelled on request"):
        raise ApiError(409, "the run has already finished")
    info = state.store.run(run_id)
    assert info is not None  # noqa: S101 - it was just updated
    return _run_json(info)


def _visible(state: ServiceState, run_id: str, who: Principal) -> RunInfo:
    info = state.store.run(run_id) if len(run_id) <= 64 else None
    if info is None or not (who.is_admin or info.owner == who.token_id):
        raise ApiError(404, "not found")  # never confirm another token's run exists
    return info


def _queue_space(state: ServiceState, token_id: str) -> None:
    c = state.config
    if state.store.unfinished_runs() >= c.queue_size:
        raise _queue_full("the run queue is full", c.run_retry_after_s)
    runs, waiting = state.store.queued_by(token_id)
    if runs >= c.token_queue_runs or waiting >= c.token_queue_samples:
        raise _queue_full("this token's queue quota is full", c.run_retry_after_s)


def _queue_full(detail: str, retry_after: int) -> ApiError:
    return ApiError(429, detail, headers={"Retry-After": str(retry_after)})


def _add_run(
    state: ServiceState, run_id: str, owner: str, samples: list[dict[str, Any]], layers: Layers
) -> None:
    c = state.config
    if state.store.unfinished_runs() >= c.queue_size:  # runs may have come in meanwhile
        raise _queue_full("the run queue is full", c.run_retry_after_s)
    try:
        state.store.add_run(
            run_id,
            owner,
            samples,
            max_runs=c.token_queue_runs,
            max_samples=c.token_queue_samples,
            options=layers.to_json(),
            pin_rubric=state.rubrics.pin if layers.judge != "off" else None,
        )
    except QuotaExceeded as exc:
        raise _queue_full(f"this token's queue quota is full: {exc}", c.run_retry_after_s) from exc


def _rows(state: ServiceState, run_id: str, who: Principal) -> list[Row]:
    return [shown(row, admin=who.is_admin) for row in state.store.results(run_id)]


def _summary(state: ServiceState, run_id: str, who: Principal) -> JsonObject | None:
    return summary_of(_rows(state, run_id, who))


def _diff(state: ServiceState, old: str, new: str, who: Principal) -> JsonObject:
    return diff_rows(_rows(state, old, who), _rows(state, new, who))


def _run_json(info: RunInfo) -> JsonObject:
    return {
        "id": info.id,
        "status": info.status,
        "created": info.created,
        "finished": info.finished,
        "total": info.total,
        "done": info.done,
        "progress": round(info.done / info.total, 4) if info.total else 1.0,
        "reason": info.reason,
    }


def _jsonl(state: ServiceState, run_id: str, *, admin: bool) -> Iterator[str]:
    for row in state.store.results(run_id):  # a sync iterator: Starlette runs it in a thread
        yield json.dumps(shown(row, admin=admin), ensure_ascii=False) + "\n"
