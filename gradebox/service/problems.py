"""Errors the service answers with: a status, a short detail, and where the body is wrong.

::

    ApiError             raised by request handlers and body checks; turned into a
                         JSON response by the app's exception handler:
                         {"detail": ..., "problems": [{"pointer": ..., "message": ...}]}

A problem names its place with a JSON pointer (RFC 6901) into the request body
(``in: body``) or names the path parameter (``in: path``). Messages never
repeat a value from the body: a hidden case sent in error must not come back
in the reply.

:class:`ErrorJson` and :class:`ProblemJson` are the one error body every
status of every route answers with (the OpenAPI document declares them), so the
shape a handler sends and the shape the document promises are one type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired

# pydantic reads these for the OpenAPI document, and on Python < 3.12 only this TypedDict.
from typing_extensions import TypedDict

__all__ = ["ApiError", "ErrorJson", "Problem", "ProblemJson", "Where"]

Where = Literal["body", "path", "query", "header"]
"""Where a problem is: the body, or a path, query or header parameter."""

ProblemJson = TypedDict(
    "ProblemJson",
    {
        "in": Where,
        "pointer": str,
        "message": str,
        "line": NotRequired[int],
        "column": NotRequired[int],
    },
)
"""One problem as sent: ``in``, ``pointer`` and ``message``; ``line``/``column`` when known."""


class ErrorJson(TypedDict):
    """Every error answer's body (4xx and 5xx alike)."""

    detail: str
    """What went wrong, in a sentence; never a value from the body."""
    problems: NotRequired[list[ProblemJson]]
    """Every problem found with the request (the first 50)."""
    more_problems: NotRequired[int]
    """How many problems were found beyond the 50 listed."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a request."""

    pointer: str
    """JSON pointer into the body (``""`` is the whole body), or the parameter's name."""
    message: str
    """What is wrong; never a value from the body."""
    where: Where = "body"
    """Body, or a path, query or header parameter."""
    line: int | None = None
    """For JSON syntax errors and JSON Lines: the line (1-based)."""
    column: int | None = None
    """For JSON syntax errors: the column (1-based)."""

    def to_json(self) -> ProblemJson:
        """Plain JSON, without the unset position fields."""
        out: ProblemJson = {"in": self.where, "pointer": self.pointer, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.column is not None:
            out["column"] = self.column
        return out


class ApiError(Exception):
    """An HTTP error answer; raised anywhere under a request handler."""

    def __init__(
        self,
        status: int,
        detail: str,
        problems: list[Problem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.problems = problems or []
        self.headers = headers or {}

    def to_json(self) -> ErrorJson:
        """The response body."""
        out: ErrorJson = {"detail": self.detail}
        if self.problems:
            out["problems"] = [p.to_json() for p in self.problems[:50]]
            if len(self.problems) > 50:
                out["more_problems"] = len(self.problems) - 50
        return out
