"""What is graded: a :class:`Sample` (one candidate) answering a :class:`Task`.

A task has an id (``HumanEval/85``, a team's own names) and an entry point
(``fn``: the function or program its cases call); many tasks may share an
entry point. Samples, rows and runs name a task by its id; only the sandbox
needs the entry point. In files from before task ids, ``fn`` is both.

The records every part of gradebox shares (the pipeline, the service, suite
checks) without importing the grading engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.types import HiddenCase, PublicTask

__all__ = ["Sample", "Task", "task_id_problem", "task_of"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One line of ``samples.jsonl``."""

    id: str
    """Unique sample id."""
    task: str
    """The id of the task it answers (its ``task``, else its ``fn``, else its own ``id``)."""
    reply: str | None = None
    """A raw model reply (prose and fenced code)."""
    code: str | None = None
    """Code as is."""
    claim: str | None = None
    """An explicit complexity claim such as ``O(1)``."""
    original: str | None = None
    """The original file, for diff-size checks."""
    line: int = 0
    """Line number in the samples file."""
    fn: str | None = None
    """The entry point the line names beside ``task`` (must be the task's), if any."""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], line: int = 0) -> Sample:
        """A sample from a checked samples line (the file's or a request's)."""
        return cls(
            id=obj["id"],
            task=task_of(obj),
            reply=obj.get("reply"),
            code=obj.get("code"),
            claim=obj.get("claim"),
            original=obj.get("original"),
            line=line,
            fn=obj.get("fn") if "task" in obj else None,
        )


def task_id_problem(task: str) -> str | None:
    """What is wrong with a task id, or ``None`` (1 to 200 characters, no control character)."""
    if not 0 < len(task) <= 200:
        return "must be 1 to 200 characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in task):
        return "must not contain control characters"
    return None


def task_of(obj: Mapping[str, Any]) -> str:
    """The task id a samples line names: ``task``, else ``fn`` (older files), else its ``id``."""
    return str(obj.get("task") or obj.get("fn") or obj["id"])


@dataclass(frozen=True, slots=True)
class Task:
    """Everything the grader knows about one task."""

    id: str
    """The task's id (``HumanEval/85``; ``fn`` in files from before task ids)."""
    cases: tuple[HiddenCase, ...]
    """The hidden cases, in file order."""
    public: PublicTask | None = None
    """The public description, when a public file was given."""
    fn: str = ""
    """The entry point: the function (or program) its cases call; left empty, it is
    the id (a task from before task ids)."""

    def __post_init__(self) -> None:
        """Fill in the entry point of a task that names none: its id."""
        if not self.fn:
            object.__setattr__(self, "fn", self.id)
