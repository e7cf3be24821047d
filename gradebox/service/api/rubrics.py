"""Rubrics as data (admin): ``PUT /v1/rubrics/{name}`` stores one, ``GET`` reads it.

The body of a PUT is the text of a rubric file (TOML), checked exactly as a file
is (:mod:`gradebox.service.engine.rubricdata`); a GET shows built-in rubrics too.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Path, Request

from gradebox.service.api.bodies import off_loop
from gradebox.service.api.deps import Admin, State, body
from gradebox.service.api.responses import ADMIN, BODY, errors
from gradebox.service.engine.rubricdata import RUBRIC_NAME
from gradebox.service.problems import ApiError
from gradebox.service.rows import JsonObject

__all__ = ["router"]

_log = logging.getLogger("gradebox.service")

router = APIRouter(tags=["rubrics"])

RubricName = Annotated[str, Path(json_schema_extra={"pattern": f"^{RUBRIC_NAME.pattern}$"})]
"""A rubric's name (documented here, checked by the rubric store)."""

_TOML_BODY = {
    "requestBody": {
        "required": True,
        "description": "The text of a rubric file (see rubrics/*.toml).",
        "content": {"application/toml": {"schema": {"type": "string"}}},
    }
}


@router.put(
    "/v1/rubrics/{name}",
    openapi_extra=_TOML_BODY,
    responses=errors(*ADMIN, *BODY, 409, s409="A built-in rubric has this name."),
)
async def put_rubric(name: RubricName, request: Request, _who: Admin, state: State) -> JsonObject:
    """Store or replace a rubric; it is checked exactly as a rubric file is."""
    raw = await body(request, state)
    stored, loaded = await off_loop(state.rubrics.put, name, raw, limiter=state.parsers)
    _log.info("rubric %s: revision %d", name, stored.revision)
    return {
        "name": name,
        "revision": stored.revision,
        "version": loaded.version,
        "digest": loaded.digest,
        "criteria": [c.id for c in loaded.criteria],
    }


@router.get("/v1/rubrics/{name}", responses=errors(*ADMIN, 404))
async def get_rubric(name: RubricName, _who: Admin, state: State) -> JsonObject:
    """A rubric's text, revision, digest and criteria (built-in ones too)."""
    found = await off_loop(state.rubrics.describe, name, limiter=state.parsers)
    if found is None:
        raise ApiError(404, "not found")
    return found
