"""What is graded: a :class:`Sample` (one candidate) answering a :class:`Task` (one ``fn``).

The records every part of gradebox shares (the pipeline, the service, suite
checks) without importing the grading engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.types import HiddenCase, PublicTask

__all__ = ["Sample", "Task"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One line of ``samples.jsonl``."""

    id: str
    """Unique sample id."""
    fn: str
    """The task it answers."""
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

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], line: int = 0) -> Sample:
        """A sample from a checked samples line (the file's or a request's)."""
        return cls(
            id=obj["id"],
            fn=obj["fn"],
            reply=obj.get("reply"),
            code=obj.get("code"),
            claim=obj.get("claim"),
            original=obj.get("original"),
            line=line,
        )


@dataclass(frozen=True, slots=True)
class Task:
    """Everything the grader knows about one ``fn``."""

    fn: str
    """The task name."""
    cases: tuple[HiddenCase, ...]
    """The hidden cases, in file order."""
    public: PublicTask | None = None
    """The public description, when a public file was given."""
