"""The statuses each route can answer besides its success, declared for the OpenAPI document.

Every error answer has one body, :class:`~gradebox.service.problems.ErrorJson`
(``{"detail", "problems"?, "more_problems"?}``), whoever raised it: a handler's
:class:`~gradebox.service.problems.ApiError`, FastAPI's parameter checks, or
routing (404, 405). A route lists the statuses it can send with :func:`errors`::

    @router.get("/v1/runs/{run_id}", responses=errors(401, 404))

so the document and the server are read from the same place. Headers an error
carries are declared with it, required where it always carries them
(``WWW-Authenticate`` on 401, ``Retry-After`` on 429).
"""

from __future__ import annotations

from typing import Any

from gradebox.service.problems import ErrorJson

__all__ = ["ADMIN", "BODY", "WHO", "errors"]

WHO = (401,)
"""A route for any valid token."""
ADMIN = (401, 403)
"""A route for admin tokens only."""
BODY = (408, 413, 422)
"""A route that reads a body: too slow, too large (or too costly to parse), not valid."""


def _header(description: str, *, required: bool) -> dict[str, object]:
    return {"description": description, "required": required, "schema": {"type": "string"}}


_WAIT = "Seconds to wait before trying again."

_ERRORS: dict[int, tuple[str, dict[str, object]]] = {
    401: (
        "No valid token: missing, unknown, revoked and expired tokens answer the same.",
        {"WWW-Authenticate": _header("Bearer", required=True)},
    ),
    403: ("An admin token is needed.", {}),
    404: ("Not found: another token's resource answers the same as a missing one.", {}),
    408: ("The body did not arrive within the server's body timeout.", {}),
    409: ("Conflicts with the resource's state.", {}),
    413: (
        "Too large: the body, its samples or cases, or the work of parsing and checking it.",
        {},
    ),
    422: ("Not valid: every problem, each with a JSON pointer or the parameter's name.", {}),
    429: (
        "A quota or rate limit of this token or server is reached.",
        {"Retry-After": _header(_WAIT, required=True)},
    ),
    503: (
        "Not ready: the sandbox has not passed its isolation self-check (or the server is "
        "starting or stopping).",
        {"Retry-After": _header(_WAIT, required=False)},
    ),
    504: ("Grading did not finish within the server's deadline.", {}),
}


def errors(
    *statuses: int, s409: str | None = None, ok: dict[str, Any] | None = None
) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route that can answer ``statuses``, all with the error body.

    Args:
        statuses: HTTP statuses (known ones: see :data:`_ERRORS`).
        s409: The route's own description of its 409 (what conflicts).
        ok: The route's 200 answer, where FastAPI cannot tell it (not JSON).

    Returns:
        FastAPI's ``responses`` mapping.
    """
    out: dict[int | str, dict[str, Any]] = {} if ok is None else {200: ok}
    described = {409: s409} if s409 else {}
    for status in sorted(set(statuses)):
        description, headers = _ERRORS[status]
        entry: dict[str, Any] = {
            "model": ErrorJson,
            "description": described.get(status, description),
        }
        if headers:
            entry["headers"] = headers
        out[status] = entry
    return out
