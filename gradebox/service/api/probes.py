"""Probes and metrics: ``GET /healthz``, ``GET /readyz``, ``GET /metrics`` (admin)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from gradebox.service.api.deps import Admin, State
from gradebox.service.api.responses import ADMIN, errors
from gradebox.service.engine.metrics import CONTENT_TYPE

__all__ = ["router"]

router = APIRouter(tags=["probes"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (says nothing about the sandbox: see /readyz)."""
    return {"status": "ok"}


def _ready(ready: bool, description: str) -> dict[str, object]:
    properties: dict[str, object] = {"ready": {"const": ready}}
    if ready:
        properties["isolation"] = {"type": "string", "description": "The sandbox's backend."}
    schema = {"type": "object", "required": list(properties), "properties": properties}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


@router.get(
    "/readyz",
    response_class=JSONResponse,
    responses={
        200: _ready(True, "Ready: the sandbox passed its isolation self-check."),
        503: _ready(False, "Not ready (fail closed): the self-check has not passed."),
    },
)
async def readyz(state: State) -> JSONResponse:
    """Ready only once the sandbox passed its isolation self-check (fail closed)."""
    if state.grading is None:
        return JSONResponse({"ready": False}, status_code=503)
    return JSONResponse({"ready": True, "isolation": state.backend})


@router.get(
    "/metrics",
    response_class=Response,
    responses=errors(
        *ADMIN,
        ok={
            "content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}},
            "description": "Metrics",
        },
    ),
)
async def metrics(_who: Admin, state: State) -> Response:
    """Prometheus text format (admin token: it shows every token's traffic)."""
    body = await anyio.to_thread.run_sync(state.metrics.render, limiter=state.parsers)
    return Response(body, media_type=CONTENT_TYPE)
