"""The admin API for rubrics and tokens (every route here needs an admin token; 403 else).

- ``PUT /v1/rubrics/{name}``: store or replace a rubric; the body is the text of a
  rubric file (TOML), checked exactly as a file is (:mod:`.rubricdata`).
- ``GET /v1/rubrics/{name}``: its text, revision, digest and criterion ids
  (built-in rubrics too).
- ``POST /v1/tokens``: ``{"role": "grader", "expires_in_s": 86400, "tasks": ["is_even"]}``
  (only ``role`` is required) creates a token and returns it, once.
- ``GET /v1/tokens``: every token's id, role, creation, expiry and task scope; never a
  secret or a hash.
- ``DELETE /v1/tokens/{id}``: revoke; the token's very next request is a 401, and its
  queued runs are cancelled (``reason: "token revoked"``; samples in flight finish).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import FastAPI, Request

from gradebox.model import task_id_problem
from gradebox.service.auth import MAX_EXPIRY_S, ROLES, create_token
from gradebox.service.bodies import Budget, off_loop, parse_json
from gradebox.service.deps import Admin, body
from gradebox.service.problems import ApiError, Problem
from gradebox.service.state import ServiceState
from gradebox.service.store import iso_time

__all__ = ["admin_routes", "check_token_request"]

_log = logging.getLogger("gradebox.service")

_TOKEN_KEYS = ("role", "expires_in_s", "tasks")
_MAX_SCOPE = 1000


def admin_routes(app: FastAPI, state: ServiceState) -> None:
    """Add the rubric and token routes to ``app``."""
    _rubric_routes(app, state)
    _token_routes(app, state)


def _rubric_routes(app: FastAPI, state: ServiceState) -> None:
    @app.put(
        "/v1/rubrics/{name}",
        tags=["rubrics"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "The text of a rubric file (see rubrics/*.toml).",
                "content": {"application/toml": {"schema": {"type": "string"}}},
            }
        },
    )
    async def put_rubric(name: str, request: Request, _who: Admin) -> dict[str, Any]:
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

    @app.get("/v1/rubrics/{name}", tags=["rubrics"])
    async def get_rubric(name: str, _who: Admin) -> dict[str, Any]:
        """A rubric's text, revision, digest and criteria (built-in ones too)."""
        found = await off_loop(state.rubrics.describe, name, limiter=state.parsers)
        if found is None:
            raise ApiError(404, "not found")
        return found


def _token_routes(app: FastAPI, state: ServiceState) -> None:
    @app.post("/v1/tokens", tags=["tokens"], status_code=201)
    async def new_token(request: Request, _who: Admin) -> dict[str, Any]:
        """Create a token (optionally expiring, optionally for some tasks only); shown once."""
        raw = await body(request, state)
        parsed = parse_json(raw, Budget(state.config.parse_budget_s))
        role, expires, tasks = check_token_request(parsed, now=time.time())
        token = create_token(state.store, role, expires=expires, tasks=tasks)
        token_id = token.split("_")[1]
        _log.info("token %s created (role %s)", token_id, role)
        return {
            "id": token_id,
            "token": token,
            "role": role,
            "expires": None if expires is None else iso_time(expires),
            "tasks": None if tasks is None else sorted(tasks),
        }

    @app.get("/v1/tokens", tags=["tokens"])
    async def list_tokens(_who: Admin) -> dict[str, Any]:
        """Every token's id, role, creation, expiry and task scope (never a secret)."""
        return {"tokens": [t.to_json() for t in state.store.tokens()]}

    @app.delete("/v1/tokens/{token_id}", tags=["tokens"])
    async def revoke_token(token_id: str, _who: Admin) -> dict[str, Any]:
        """Revoke a token: its next request is a 401; its queued runs are cancelled."""
        if len(token_id) > 64 or not state.store.revoke_token(token_id):
            raise ApiError(404, "not found")
        state.wake_worker()  # its queued runs are cancelled now, not at the next turn
        _log.info("token %s revoked", token_id)
        return {"id": token_id, "revoked": True}


def check_token_request(
    parsed: Any, *, now: float
) -> tuple[str, float | None, frozenset[str] | None]:
    """``(role, expires, tasks)`` of a ``POST /v1/tokens`` body.

    Raises:
        ApiError: 422 with every problem.
    """
    if not isinstance(parsed, dict):
        raise ApiError(422, "invalid token request", [Problem("", "must be an object")])
    problems = [
        Problem(f"/{key}"[:80], "unknown property; known: " + ", ".join(_TOKEN_KEYS))
        for key in parsed
        if key not in _TOKEN_KEYS
    ]
    role = parsed.get("role")
    if role not in ROLES:
        problems.append(Problem("/role", "must be one of " + ", ".join(ROLES)))
    expires = None
    seconds = parsed.get("expires_in_s")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            problems.append(Problem("/expires_in_s", "must be a number of seconds"))
        elif not 0 < seconds <= MAX_EXPIRY_S:
            problems.append(Problem("/expires_in_s", f"must be above 0 and at most {MAX_EXPIRY_S}"))
        else:
            expires = now + float(seconds)
    tasks = _scope(parsed.get("tasks"), problems)
    if problems:
        raise ApiError(422, "invalid token request", problems)
    return str(role), expires, tasks


def _scope(value: Any, problems: list[Problem]) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > _MAX_SCOPE:
        problems.append(Problem("/tasks", f"must be a list of at most {_MAX_SCOPE} task ids"))
        return None
    bad = [
        i
        for i, task in enumerate(value)
        if not isinstance(task, str) or task_id_problem(task) is not None
    ]
    problems.extend(Problem(f"/tasks/{i}", "must be a task id") for i in bad[:50])
    return frozenset(value) if not bad else None
