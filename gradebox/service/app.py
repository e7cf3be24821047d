"""The HTTP API of ``gradebox serve`` (FastAPI): the app, put together from one router per resource.

The routers are in :mod:`.api`, the grading engine in :mod:`.engine`, storage in :mod:`.store`.

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
  (admin): rubrics as data and tokens (:mod:`.api.rubrics`, :mod:`.api.tokens`).
- ``POST /v1/grades/{id}/feedback``, ``POST /v1/runs/{id}/samples/{sample_id}/feedback``,
  ``GET /v1/stats``: outcome feedback and acceptance rates (:mod:`.api.feedback`).
- ``PUT/GET /v1/repos/{name}`` (admin), ``POST /v1/gates``, ``GET /v1/gates/{id}``: patch
  gates as async jobs on registered repositories (:mod:`.api.gates`).
- ``GET /metrics`` (admin): Prometheus text format (:mod:`.engine.metrics`). Admin only,
  because it shows every token's traffic, verdicts and queue, and its per-stage
  timings pool all tenants' grades: a grader token sees only its own work.

A grader token sees only its own runs: another token's run is 404, exactly as
a run that does not exist. Of its rows it sees what the task's disclosure
allows (:mod:`.rows`), and it may have graded at most so many samples per task
and minute (:mod:`.engine.quota`). Bodies are read within a time limit and parsed off
the event loop within a budget (:mod:`.api.bodies`); grade slots and queue places
are taken only once a body is read and checked. Every response carries an
``X-Request-ID``, and every log line written while serving it the same id
(:mod:`.logs`).

Every error answer has one body, ``{"detail", "problems"?}``
(:class:`~.problems.ErrorJson`): the handlers here give FastAPI's parameter
checks and routing's 404 and 405 that shape too, and a 405 (``OPTIONS``
included) lists in ``Allow`` every method of the path, not of one route. The
OpenAPI document declares every status a route can answer (:mod:`.api.responses`)
and no schema of FastAPI's own error shape.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match

from gradebox.service.api import feedback, gates, grades, probes, rubrics, runs, tasks, tokens
from gradebox.service.api.middleware import RequestMetrics
from gradebox.service.config import ServiceConfig
from gradebox.service.engine.gates import GateJobs
from gradebox.service.engine.state import ServiceState
from gradebox.service.logs import RequestIds
from gradebox.service.problems import ApiError, ErrorJson, Problem, Where
from sandbox.runner import Sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage
    from gradebox.service.engine.static import StaticService

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
    app = FastAPI(
        title="gradebox",
        version="1",
        summary="Grade AI-generated Python code against hidden tests in a sandbox.",
        lifespan=partial(_lifespan, state),
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = state
    app.add_middleware(RequestMetrics, metrics=state.metrics)
    app.add_middleware(RequestIds)  # outermost: the id covers every line of the request
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid_parameters)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal_error)
    for module in _ROUTERS:
        app.include_router(module.router)
    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]
    app.state.gates = GateJobs(state)
    return app


_ROUTERS = (probes, tasks, grades, runs, rubrics, tokens, feedback, gates)
"""One router per resource, in the order the OpenAPI document lists them."""


@asynccontextmanager
async def _lifespan(state: ServiceState, _app: FastAPI) -> AsyncIterator[None]:
    state.open()
    try:
        yield
    finally:
        await anyio.to_thread.run_sync(state.close)


async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.to_json(), status_code=exc.status, headers=exc.headers)


_WHERE: dict[object, Where] = {"path": "path", "query": "query", "header": "header"}


async def _invalid_parameters(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's parameter checks (``?judge=bogus``), in the service's one error shape."""
    problems = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        where = _WHERE.get(loc[0] if loc else None, "body")
        name = "/".join(str(part) for part in loc[1:])
        problems.append(Problem(name if where != "body" else f"/{name}", str(error["msg"]), where))
    return await _api_error(_request, ApiError(422, "invalid parameters", problems))


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """Routing's answers (404, 405) in the one error shape; a 405 allows the path's methods."""
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_methods_of(request))
    body: ErrorJson = {"detail": str(exc.detail)}
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _methods_of(request: Request) -> list[str]:
    """Every method some route of ``request``'s path answers (Starlette names one route's)."""
    methods: set[str] = set()
    for route in _flat(request.app.router.routes):
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def _flat(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """Every route, also inside included routers (FastAPI keeps those whole, unprefixed here)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is None:
            yield route
        else:
            yield from _flat(inner.routes)


def _openapi(app: FastAPI) -> dict[str, object]:
    """FastAPI's document without its own 422 shape, which this service never sends.

    FastAPI adds a 422 with ``HTTPValidationError`` to a route with parameters that
    declares none; a route that can answer 422 declares it with the service's shape.
    """
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        for operations in schema["paths"].values():
            for operation in operations.values():
                answer = operation["responses"].get("422", {})
                if "HTTPValidationError" in str(answer.get("content")):
                    del operation["responses"]["422"]
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema


async def _internal_error(_request: Request, exc: Exception) -> JSONResponse:
    _log.error("internal error: %s", type(exc).__name__)
    return JSONResponse({"detail": "internal error"}, status_code=500)
