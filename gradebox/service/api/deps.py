"""What request handlers share: the app's state, who is asking, and the body.

``Who`` is any valid token (401 otherwise: unknown, revoked and expired tokens
answer the same); ``Admin`` an admin token (403 for a grader token).

:class:`WhoStateRoute` serves a route whose endpoint takes exactly
``(request, who: Who, state: State)`` without FastAPI's dependency solver: the
same functions resolve the token and the state, in the same order, and the row
is written by the route's own response field, so answers are byte for byte
FastAPI's, and the OpenAPI document (read from the declaration) is unchanged.
It saves the solver's per-request walk, a fifth of the event loop's CPU on
``POST /v1/grade`` (``bench/service.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gradebox.service.api.bodies import read_body
from gradebox.service.engine.auth import Principal, authenticate
from gradebox.service.engine.state import ServiceState
from gradebox.service.problems import ApiError

__all__ = ["Admin", "State", "Who", "WhoStateRoute", "body", "service_state"]

_bearer = HTTPBearer(auto_error=False, description="A token from `gradebox token create`.")


async def service_state(request: Request) -> ServiceState:
    """The app's :class:`ServiceState` (async: FastAPI runs it on the loop, no thread hop)."""
    return _state(request)


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


async def _principal(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    # On the loop, as the handlers' own store reads are: one indexed read (the reader has
    # its own connection and lock, never behind a write's fsync), not a thread hop.
    header = f"Bearer {creds.credentials}" if creds is not None else None
    who = authenticate(_state(request).store, header)
    if who is None:
        raise ApiError(401, "unauthorized", headers={"WWW-Authenticate": "Bearer"})
    return who


async def _admin(who: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not who.is_admin:
        raise ApiError(403, "forbidden")
    return who


Who = Annotated[Principal, Depends(_principal)]
"""Any valid token."""
Admin = Annotated[Principal, Depends(_admin)]
"""An admin token (403 for a grader token)."""
State = Annotated[ServiceState, Depends(service_state)]
"""The app's state (the store, the grading engine, the limits)."""


async def body(request: Request, state: ServiceState) -> bytes:
    """The request body, read within the size cap and the body timeout (413, 408)."""
    return await read_body(request, state.config.max_body_bytes, state.config.body_timeout_s)


class WhoStateRoute(APIRoute):
    """A route for an endpoint ``async (request, who: Who, state: State) -> JSON object``.

    Declared as any route (``route_class_override=WhoStateRoute``); served without
    the dependency solver.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The handler: bearer, principal, state, the endpoint, the response field's JSON."""
        endpoint, field = self.endpoint, self.response_field
        if list(inspect.signature(endpoint).parameters) != ["request", "who", "state"]:
            raise TypeError(f"{endpoint.__name__}: WhoStateRoute needs (request, who, state)")
        if field is None or self.status_code is not None:
            raise TypeError(f"{endpoint.__name__}: WhoStateRoute needs a JSON return type")

        async def handle(request: Request) -> Response:
            who = await _principal(request, await _bearer(request))
            row = await endpoint(request, who, await service_state(request))
            return Response(field.serialize_json(row), media_type="application/json")

        return handle
