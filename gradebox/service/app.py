"""The HTTP API of ``gradebox serve`` (FastAPI).

Endpoints (all JSON; ``Authorization: Bearer <token>`` except the probes):

- ``PUT /v1/tasks/{task}`` (admin): register or replace a task (by its id, ``HumanEval/85``
  included); hidden cases are write-only.
- ``GET /v1/tasks/{task}`` (admin): the public part, the number of hidden cases, the revision.
- ``POST /v1/grade``: grade one sample now, within a deadline; returns its row.
  The body is the sample, plus optionally ``"static": true|false`` (default: true
  when the server runs the static layers) and ``"judge": "wait"|"defer"|"off"``
  (default: ``serve --judge-default``, itself ``off``).
- ``GET /v1/grades/{id}``: a synchronous grade's row again (with a deferred judgement
  once it finished).
- ``POST /v1/runs``: submit samples (JSON array or JSON Lines); returns the run id at once.
  Layers as query parameters: ``?static=true|false&judge=wait|defer|off``.
- ``GET /v1/runs/{id}``, ``GET /v1/runs/{id}/results``, ``GET /v1/runs/{a}/diff/{b}``,
  ``DELETE /v1/runs/{id}``: status and summary, results.jsonl, comparison, cancel. A
  cancelled run says why (``reason``: ``cancelled on request``, or ``token revoked`` /
  ``token expired`` when its token stopped working: no new sample of it starts).
- ``GET /healthz`` (the process answers) and ``GET /readyz`` (the sandbox passed its
  self-check; 503 until then and whenever it did not: fail closed).
- ``PUT/GET /v1/rubrics/{name}``, ``POST/GET /v1/tokens``, ``DELETE /v1/tokens/{id}``
  (admin): rubrics as data and tokens (:mod:`.admin`).
- ``POST /v1/grades/{id}/feedback``, ``POST /v1/runs/{id}/samples/{sample_id}/feedback``,
  ``GET /v1/stats``: outcome feedback and acceptance rates (:mod:`.feedback`).
- ``PUT/GET /v1/repos/{name}`` (admin), ``POST /v1/gates``, ``GET /v1/gates/{id}``: patch
  gates as async jobs on registered repositories (:mod:`.gates`).
- ``GET /metrics`` (admin): Prometheus text format (:mod:`.metrics`). Admin only,
  because it shows every token's traffic, verdicts and queue, and its per-stage
  timings pool all tenants' grades: a grader token sees only its own work.

A grader token sees only its own runs: another token's run is 404, exactly as
a run that does not exist. Of its rows it sees what the task's disclosure
allows (:mod:`.rows`), and it may have graded at most so many samples per task
and minute (:mod:`.quota`). Bodies are read within a time limit and parsed off
the event loop within a budget (:mod:`.bodies`); grade slots and queue places
are taken only once a body is read and checked. Every response carries an
``X-Request-ID``, and every log line written while serving it the same id
(:mod:`.logs`).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from gradebox.model import task_of
from gradebox.runs.diff import diff_runs
from gradebox.runs.summary import summarize
from gradebox.service.admin import admin_routes
from gradebox.service.auth import Principal
from gradebox.service.bodies import Budget, off_loop, parse_json, parse_samples_body
from gradebox.service.config import JUDGE_MODES, JudgeMode, Layers, ServiceConfig
from gradebox.service.deps import Admin, Who, body
from gradebox.service.feedback import feedback_routes
from gradebox.service.gates import gate_routes
from gradebox.service.grading import GradingService, Outcome
from gradebox.service.logs import RequestIds
from gradebox.service.metrics import CONTENT_TYPE, RequestMetrics
from gradebox.service.openapi_bodies import GRADE_BODY, RUN_BODY, TASK_BODY
from gradebox.service.problems import ApiError, Problem
from gradebox.service.rows import shown
from gradebox.service.rubricdata import loader_problem, rubric_name_ok
from gradebox.service.state import ServiceState
from gradebox.service.store import QuotaExceeded, RunInfo
from gradebox.service.validate import CheckedTask, check_samples, check_task, sample_from_json
from sandbox.runner import Sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage
    from gradebox.service.static import StaticService

__all__ = ["create_app"]

_log = logging.getLogger("gradebox.service")


def create_app(
    config: ServiceConfig,
    *,
    sandbox: Sandbox | None = None,
    static: StaticService | None = None,
    judge: JudgeStage | None = None,
) -> FastAPI:
    """Build the service's ASGI app.

    Nothing is opened until the app starts (its lifespan): then the SQLite
    store opens, unfinished runs resume, and the sandbox starts and checks its
    isolation in the background (``/readyz`` is 503 until it passed).

    Args:
        config: The service's options.
        sandbox: A ready sandbox to use (the caller closes it); by default the app
            opens its own from ``config``.
        static: Warm static sessions to use (the caller closes them); by default the
            app starts ``config.static_sessions`` of its own (none: static is off).
        judge: The judge stage, configured at the CLI boundary (the caller closes
            it); ``None``: the judge is off on this server.

    Returns:
        The FastAPI application.
    """
    state = ServiceState(config, sandbox, static=static, judge=judge)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.open()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(state.close)

    app = FastAPI(
        title="gradebox",
        version="1",
        summary="Grade AI-generated Python code against hidden tests in a sandbox.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = state
    app.add_middleware(RequestMetrics, metrics=state.metrics)
    app.add_middleware(RequestIds)  # outermost: the id covers every line of the request
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal_error)
    _probe_routes(app, state)
    _task_routes(app, state)
    _grade_routes(app, state)
    _run_routes(app, state)
    admin_routes(app, state)
    feedback_routes(app, state)
    gate_routes(app, state)
    return app


async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.to_json(), status_code=exc.status, headers=exc.headers)


async def _internal_error(_request: Request, exc: Exception) -> JSONResponse:
    _log.error("internal error: %s", type(exc).__name__)
    return JSONResponse({"detail": "internal error"}, status_code=500)


async def _body(request: Request, state: ServiceState) -> bytes:
    return await body(request, state)


def _ready(state: ServiceState) -> GradingService:
    grading = state.grading
    if grading is None:
        raise ApiError(503, "not ready", headers={"Retry-After": "5"})
    return grading


# ---------------------------------------------------------------------- probes


def _probe_routes(app: FastAPI, state: ServiceState) -> None:
    @app.get("/healthz", tags=["probes"])
    async def healthz() -> dict[str, str]:
        """The process is up (says nothing about the sandbox: see /readyz)."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["probes"], responses={503: {"description": "Not ready"}})
    async def readyz() -> JSONResponse:
        """Ready only once the sandbox passed its isolation self-check (fail closed)."""
        if state.grading is None:
            return JSONResponse({"ready": False}, status_code=503)
        return JSONResponse({"ready": True, "isolation": state.backend})

    @app.get(
        "/metrics",
        tags=["probes"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {}}, "description": "Metrics"}},
    )
    async def metrics(_who: Admin) -> Response:
        """Prometheus text format (admin token: it shows every token's traffic)."""
        body = await anyio.to_thread.run_sync(state.metrics.render, limiter=state.parsers)
        return Response(body, media_type=CONTENT_TYPE)


# ----------------------------------------------------------------------- tasks


def _task_routes(app: FastAPI, state: ServiceState) -> None:
    # ``:path``: a task id may hold a slash (``HumanEval/85``, sent as is or as %2F).
    @app.put("/v1/tasks/{task:path}", tags=["tasks"], openapi_extra=TASK_BODY)
    async def put_task(task: str, request: Request, _who: Admin) -> dict[str, Any]:
        """Register or replace a task by its id. Hidden cases are write-only: nothing returns them.

        The entry point is ``public.fn`` (default: the id, when it is a Python name).
        """
        raw = await _body(request, state)
        checked = await off_loop(_checked_task, state, task, raw, limiter=state.parsers)
        revision = state.store.put_task(
            task, checked.public, checked.hidden, checked.limits, checked.disclosure, checked.static
        )
        _log.info("task %s: revision %d (%d hidden cases)", task, revision, len(checked.hidden))
        fn = checked.public["fn"]
        return {"task": task, "fn": fn, "revision": revision, "cases": len(checked.hidden)}

    @app.get("/v1/tasks/{task:path}", tags=["tasks"])
    async def get_task(task: str, _who: Admin) -> dict[str, Any]:
        """The public part of a task and how many hidden cases it has (never the cases)."""
        info = state.store.task_summary(task)
        if info is None:
            raise ApiError(404, "not found")
        return info


# ----------------------------------------------------------------------- grade


def _grade_routes(app: FastAPI, state: ServiceState) -> None:
    @app.post(
        "/v1/grade",
        tags=["grade"],
        openapi_extra=GRADE_BODY,
        responses={408: {"description": "Body too slow"}, 429: {"description": "Rate limit"}},
    )
    async def grade(request: Request, who: Who) -> dict[str, Any]:
        """Grade one sample now and return its row, as far as the task's disclosure allows."""
        grading = _ready(state)
        raw = await _body(request, state)
        sample, layers = await off_loop(_one_sample, state, raw, who, limiter=state.parsers)
        wanted = {task_of(sample): 1}
        state.rate.take(who.token_id, wanted)
        try:
            state.slots.acquire(who.token_id)  # only now: a slow body never holds a slot
        except ApiError:
            state.rate.give_back(who.token_id, wanted)
            raise
        grade_id = secrets.token_hex(12)
        job = partial(_grade_and_store, state, grading, grade_id, who.token_id)
        context = contextvars.copy_context()  # the request id follows into the thread
        future = state.pool.submit(context.run, job, sample_from_json(sample), layers)
        future.add_done_callback(lambda _f: state.slots.release(who.token_id))
        try:
            row: dict[str, Any] = await asyncio.wait_for(
                asyncio.wrap_future(future), state.config.grade_deadline_s
            )
        except TimeoutError as exc:
            raise ApiError(504, "grading did not finish within the deadline") from exc
        return _with_id(shown(row, admin=who.is_admin), grade_id)

    @app.get("/v1/grades/{grade_id}", tags=["grade"])
    async def get_grade(grade_id: str, who: Who) -> dict[str, Any]:
        """A synchronous grade's row again; a deferred judgement shows once it finished."""
        found = state.store.grade(grade_id) if len(grade_id) <= 64 else None
        if found is None or not (who.is_admin or found[0] == who.token_id):
            raise ApiError(404, "not found")  # never confirm another token's grade exists
        return _with_id(shown(found[1], admin=who.is_admin), grade_id)


def _with_id(row: dict[str, Any], grade_id: str) -> dict[str, Any]:
    """The row with its grade id (``GET /v1/grades/{grade_id}``) first."""
    return {"grade_id": grade_id, **row}


def _grade_and_store(
    state: ServiceState,
    grading: GradingService,
    grade_id: str,
    owner: str,
    sample: Any,
    layers: Layers,
) -> dict[str, Any]:
    """Grade (in a worker thread), store the row, start a deferred judgement."""
    outcome: Outcome = grading.grade(sample, layers, owner=owner)
    state.store.put_grade(grade_id, owner, outcome.row)
    if outcome.later is not None:
        outcome.later(lambda row: state.store.update_grade(grade_id, row))
    return outcome.row


def _layers(state: ServiceState, static: Any, judge: Any, where: str) -> Layers:
    """The layers a request asks for, its defaults filled in; 422 for what this server lacks."""
    problems = []
    if static is None:
        static = state.has_static
    elif not isinstance(static, bool):
        problems.append(Problem(f"{where}static", "must be true or false"))
    elif static and not state.has_static:
        problems.append(Problem(f"{where}static", "the static layers are off on this server"))
    if judge is None:
        judge = state.config.judge_default if state.has_judge else "off"
    elif judge not in JUDGE_MODES:
        problems.append(Problem(f"{where}judge", "must be one of " + ", ".join(JUDGE_MODES)))
    elif judge != "off" and not state.has_judge:
        problems.append(Problem(f"{where}judge", "no judge is configured on this server"))
    if problems:
        raise ApiError(422, "invalid layers", problems)
    return Layers(static=static is True, judge=judge)


def _checked_task(state: ServiceState, task: str, raw: bytes) -> CheckedTask:
    c = state.config
    body = parse_json(raw, Budget(c.parse_budget_s))
    checked = check_task(task, body, max_cases=c.max_cases_per_task, server=c.limits)
    _rubric_loads(state, checked.public.get("rubric"))
    return checked


def _rubric_loads(state: ServiceState, name: Any) -> None:
    """A task's rubric must be a built-in or stored one, and load now, not fail grades later."""
    if name is None:
        return
    if not isinstance(name, str) or not rubric_name_ok(name) or not state.rubrics.known(name):
        message = "no rubric of this name: a built-in one or one stored with PUT /v1/rubrics"
        raise ApiError(422, "invalid task", [Problem("/public/rubric", message)])
    if state.judge_stage is None:
        return
    from rubrics import RubricError  # noqa: PLC0415 - with the judge only

    try:
        state.judge_stage.judge.rubric(state.rubrics.path(name))
    except RubricError as exc:
        problems = [Problem("/public/rubric", loader_problem(p).message) for p in exc.problems]
        raise ApiError(422, "invalid task", problems) from exc


def _one_sample(state: ServiceState, raw: bytes, who: Principal) -> tuple[dict[str, Any], Layers]:
    """Parse and check a grade body (in a worker thread): the sample and its layers."""
    body = parse_json(raw, Budget(state.config.parse_budget_s))
    layers = None
    if isinstance(body, dict):
        layers = _layers(state, body.pop("static", None), body.pop("judge", None), "/")
    [sample] = check_samples([body], numbered=False)
    _known_tasks(state, [sample], who, numbered=False)
    _short_enough(state, [sample], numbered=False)
    assert layers is not None  # noqa: S101 - check_samples refused anything but an object
    return sample, layers


def _run_samples(state: ServiceState, raw: bytes, who: Principal) -> list[dict[str, Any]]:
    """Parse and check a run body (in a worker thread), stopping one sample past the cap."""
    c = state.config
    budget = Budget(c.parse_budget_s)
    items = parse_samples_body(raw, max_items=c.max_samples_per_run, budget=budget)
    if not items:
        raise ApiError(422, "no samples", [Problem("", "must hold at least one sample")])
    samples = check_samples(items, numbered=True, tick=budget.tick)
    _known_tasks(state, samples, who, numbered=True)
    _short_enough(state, samples, numbered=True)
    return samples


def _short_enough(state: ServiceState, samples: list[dict[str, Any]], *, numbered: bool) -> None:
    most = state.config.max_code_chars
    problems = [
        Problem(f"/{i}/{key}" if numbered else f"/{key}", f"longer than {most} characters")
        for i, s in enumerate(samples)
        for key in ("reply", "code")
        if len(s.get(key) or "") > most
    ]
    if problems:
        raise ApiError(422, "sample too long", problems)


def _known_tasks(
    state: ServiceState, samples: list[dict[str, Any]], who: Principal, *, numbered: bool
) -> None:
    """422 for a task that is not registered or that this token may not use.

    Both answer the same, so a scoped token cannot tell which tasks exist.
    """
    found = state.store.task_names({task_of(s) for s in samples})
    known = {t: fn for t, fn in found.items() if who.may_use(t)}
    problems = []
    for i, s in enumerate(samples):
        where = f"/{i}/" if numbered else "/"
        task = task_of(s)
        if task not in known:
            field = "task" if "task" in s else "fn"
            problems.append(Problem(where + field, "no task of this name is registered"))
        elif "task" in s and "fn" in s and s["fn"] != known[task]:
            problems.append(Problem(where + "fn", "is not the entry point of this task"))
    if problems:
        raise ApiError(422, "unknown task", problems)


# ------------------------------------------------------------------------ runs


def _run_routes(app: FastAPI, state: ServiceState) -> None:
    def visible(run_id: str, who: Principal) -> RunInfo:
        info = state.store.run(run_id) if len(run_id) <= 64 else None
        if info is None or not (who.is_admin or info.owner == who.token_id):
            raise ApiError(404, "not found")  # never confirm another token's run exists
        return info

    @app.post(
        "/v1/runs",
        tags=["runs"],
        status_code=202,
        openapi_extra=RUN_BODY,
        responses={408: {"description": "Body too slow"}, 429: {"description": "Quota"}},
    )
    async def submit(
        request: Request,
        who: Who,
        static: Annotated[
            bool | None,
            Query(description="Run the static layers (default: true when the server runs them)."),
        ] = None,
        judge: Annotated[
            JudgeMode | None,
            Query(description="wait, defer or off (default: serve --judge-default, itself off)."),
        ] = None,
    ) -> dict[str, Any]:
        """Queue a batch (JSON array or JSON Lines); returns the run id at once."""
        _ready(state)
        layers = _layers(state, static, judge, "?")
        _queue_space(state, who.token_id)  # before reading: a full queue costs no parsing
        raw = await _body(request, state)
        samples = await off_loop(_run_samples, state, raw, who, limiter=state.parsers)
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

    @app.get("/v1/runs/{run_id}", tags=["runs"])
    async def status(run_id: str, who: Who) -> dict[str, Any]:
        """Status, progress and (over the results so far) the summary."""
        info = visible(run_id, who)
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

    @app.get("/v1/runs/{run_id}/results", tags=["runs"])
    async def results(run_id: str, who: Who) -> StreamingResponse:
        """The finished rows so far, in sample order, as JSON Lines (results.jsonl)."""
        visible(run_id, who)
        rows = _jsonl(state, run_id, admin=who.is_admin)
        return StreamingResponse(rows, media_type="application/jsonl")

    @app.get("/v1/runs/{old}/diff/{new}", tags=["runs"])
    async def diff(old: str, new: str, who: Who) -> dict[str, Any]:
        """What newly fails, newly passes or changed from run ``old`` to run ``new``."""
        visible(old, who)
        visible(new, who)
        return await off_loop(_diff, state, old, new, who, limiter=state.parsers)

    @app.delete("/v1/runs/{run_id}", tags=["runs"])
    async def cancel(run_id: str, who: Who) -> dict[str, Any]:
        """Cancel a queued or running run; finished results stay."""
        visible(run_id, who)
        if not state.store.set_status(run_id, "cancelled", reason="cancelled on request"):
            raise ApiError(409, "the run has already finished")
        info = state.store.run(run_id)
        assert info is not None  # noqa: S101 - it was just updated
        return _run_json(info)


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


def _rows(state: ServiceState, run_id: str, who: Principal) -> list[dict[str, Any]]:
    return [shown(row, admin=who.is_admin) for row in state.store.results(run_id)]


_PER_CASE_SUMMARY = ("with_timeouts", "with_errors", "with_crashes")


def _summary(state: ServiceState, run_id: str, who: Principal) -> dict[str, Any] | None:
    rows = _rows(state, run_id, who)
    if not rows:
        return None
    if all("outcomes" in r for r in rows):
        return summarize(rows)
    # Some rows withhold their cases: summarise verdicts only, and say so with nulls.
    blank: dict[str, Any] = {"outcomes": [], "timeouts": []}
    summary = summarize([blank | r for r in rows])
    return summary | dict.fromkeys(_PER_CASE_SUMMARY)


def _diff(state: ServiceState, old: str, new: str, who: Principal) -> dict[str, Any]:
    result: dict[str, Any] = diff_runs(_rows(state, old, who), _rows(state, new, who)).to_json()
    return result


def _run_json(info: RunInfo) -> dict[str, Any]:
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
