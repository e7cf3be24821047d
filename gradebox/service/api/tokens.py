"""Tokens (admin).

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

from fastapi import APIRouter, Request

from gradebox.model import task_id_problem
from gradebox.service.api.bodies import Budget, parse_json
from gradebox.service.api.deps import Admin, State, body
from gradebox.service.api.openapi_bodies import TASK_ID, json_body
from gradebox.service.api.responses import ADMIN, BODY, errors
from gradebox.service.engine.auth import MAX_EXPIRY_S, ROLES, create_token
from gradebox.service.problems import ApiError, Problem
from gradebox.service.rows import JsonObject
from gradebox.service.store import iso_time

__all__ = ["check_token_request", "router"]

_log = logging.getLogger("gradebox.service")

_TOKEN_KEYS = ("role", "expires_in_s", "tasks")
_MAX_SCOPE = 1000

router = APIRouter(tags=["tokens"])

_BODY = json_body(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["role"],
        "properties": {
            "role": {"enum": list(ROLES)},
            "expires_in_s": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "maximum": MAX_EXPIRY_S,
                "description": "Seconds until it expires (default: never).",
            },
            "tasks": {
                "type": ["array", "null"],
                "maxItems": _MAX_SCOPE,
                "items": TASK_ID,
                "description": "The only tasks it may grade (default: all).",
            },
        },
    }
)


@router.post(
    "/v1/tokens",
    status_code=201,
    openapi_extra=_BODY,
    responses=errors(*ADMIN, *BODY),
)
async def new_token(request: Request, _who: Admin, state: State) -> JsonObject:
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


@router.get("/v1/tokens", responses=errors(*ADMIN))
async def list_tokens(_who: Admin, state: State) -> JsonObject:
    """Every token's id, role, creation, expiry and task scope (never a secret)."""
    return {"tokens": [t.to_json() for t in state.store.tokens()]}


@router.delete("/v1/tokens/{token_id}", responses=errors(*ADMIN, 404))
async def revoke_token(token_id: str, _who: Admin, state: State) -> JsonObject:
    """Revoke a token: its next request is a 401; its queued runs are cancelled."""
    if len(token_id) > 64 or not state.store.revoke_token(token_id):
        raise ApiError(404, "not found")
    state.wake_worker()  # its queued runs are cancelled now, not at the next turn
    _log.info("token %s revoked", token_id)
    return {"id": token_id, "revoked": True}


def check_token_request(
    parsed: object, *, now: float
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


def _scope(value: object, problems: list[Problem]) -> frozenset[str] | None:
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
