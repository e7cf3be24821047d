"""Probes and metrics: ``GET /healthz``, ``GET /readyz``, ``GET /metrics`` (admin)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from gradebox.service.api.deps import Admin, State
from gradebox.service.engine.metrics import CONTENT_TYPE

__all__ = ["router"]

router = APIRouter(tags=["probes"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (says nothing about the sandbox: see /readyz)."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Not ready"}})
async def readyz(state: State) -> JSONResponse:
    """Ready only once the sandbox passed its isolation self-check (fail closed)."""
    if state.grading is None:
        return JSONResponse({"ready": False}, status_code=503)
    return JSONResponse({"ready": True, "isolation": state.backend})


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {}}, "description": "Metrics"}},
)
async def metrics(_who: Admin, state: State) -> Response:
    """Prometheus text format (admin token: it shows every token's traffic)."""
    body = await anyio.to_thread.run_sync(state.metrics.render, limiter=state.parsers)
    return Response(body, media_type=CONTENT_TYPE)
