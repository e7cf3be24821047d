"""Exceptions of the rubrics layer.

::

    RubricError          a rubric file (or a prompt template it names) is missing,
                         unparseable or invalid (raised by :func:`rubrics.load`;
                         caught by the CLI, exit 2, and by the judge, which turns
                         it into a ``needs_review`` result for the items that
                         asked for that rubric). Carries every problem as
                         ``file: criterion: what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Problem", "RubricError"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a rubric file."""

    file: str
    """The file the problem is in (a rubric TOML or a prompt template)."""
    criterion: str
    """The criterion id (``INT001``), ``criteria[2]`` when it has no usable id,
    or the top-level key (``scale``, ``include``); ``rubric`` for the whole file."""
    what: str
    """What is wrong, and where inside the criterion."""

    def __str__(self) -> str:
        return f"{self.file}: {self.criterion}: {self.what}"


class RubricError(Exception):
    """A rubric cannot be loaded; ``problems`` says what to fix, one line each."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
