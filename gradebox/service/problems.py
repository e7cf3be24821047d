"""Errors the service answers with: a status, a short detail, and where the body is wrong.

::

    ApiError             raised by request handlers and body checks; turned into a
                         JSON response by the app's exception handler:
                         {"detail": ..., "problems": [{"pointer": ..., "message": ...}]}

A problem names its place with a JSON pointer (RFC 6901) into the request body
(``in: body``) or names the path parameter (``in: path``). Messages never
repeat a value from the body: a hidden case sent in error must not come back
in the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ApiError", "Problem"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a request."""

    pointer: str
    """JSON pointer into the body (``""`` is the whole body), or the parameter's name."""
    message: str
    """What is wrong; never a value from the body."""
    where: Literal["body", "path", "query"] = "body"
    """Body, path, or query parameter."""
    line: int | None = None
    """For JSON syntax errors and JSON Lines: the line (1-based)."""
    column: int | None = None
    """For JSON syntax errors: the column (1-based)."""

    def to_json(self) -> dict[str, object]:
        """Plain JSON, without the unset position fields."""
        out: dict[str, Any] = {"in": self.where, "pointer": self.pointer, "message": self.message}
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

    def to_json(self) -> dict[str, object]:
        """The response body."""
        out: dict[str, Any] = {"detail": self.detail}
        if self.problems:
            out["problems"] = [p.to_json() for p in self.problems[:50]]
            if len(self.problems) > 50:
                out["more_problems"] = len(self.problems) - 50
        return out
