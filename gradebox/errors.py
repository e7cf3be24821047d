"""Exceptions of the combined grader, CLI and service.

::

    GradeboxError                 base; never raised itself
    ├── BadInput                  bad input files or options (raised by the loaders in
    │                             gradebox.runs.inputs; caught by the CLI: exit 2, before any
    │                             work). ``problems`` lists ``file:line: what is wrong``.
    └── SetupError                the run cannot start: isolation refused, a tool missing
                                  (raised by Grader setup; caught by the CLI: exit 2).

Layer errors are mapped here, at one boundary, and chained (``raise BadInput(...)
from exc``): :class:`sandbox.errors.InputError` becomes :class:`BadInput` and
:class:`sandbox.errors.IsolationUnavailable` becomes :class:`SetupError`.
"""

from __future__ import annotations

__all__ = ["BadInput", "GradeboxError", "SetupError"]


class GradeboxError(Exception):
    """Base class of every gradebox error."""


class BadInput(GradeboxError):
    """Input files or options are wrong; ``problems`` says where and what."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        shown = "\n".join(self.problems[:20])
        more = len(self.problems) - 20
        super().__init__(shown + (f"\n... and {more} more" if more > 0 else ""))


class SetupError(GradeboxError):
    """The run cannot start; the message says what is missing and how to fix it."""
