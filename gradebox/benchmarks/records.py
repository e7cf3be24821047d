"""The records of a benchmark import: drafts read from a benchmark file, tasks, the report.

An importer reads its format into :class:`Draft` tasks: every check statement
with its conversion (when it converts). :func:`gradebox.benchmarks.build.finish`
turns a draft into an :class:`ImportedTask` (hidden cases, public task,
reference) once the reference check has said which conversions hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gradebox.benchmarks.asserts import Converted
from sandbox.types import HiddenCase, PublicTask

__all__ = [
    "Draft",
    "Equality",
    "Format",
    "ImportedTask",
    "Retyped",
    "Skipped",
    "Statement",
]

Format = Literal["humaneval", "mbpp", "apps", "livecodebench", "bigcodebench"]
"""The benchmark formats ``gradebox import`` reads."""

Equality = Literal["strict", "harness"]
"""How converted asserts compare: ``strict`` (gradebox's type-strict compare; where the
reference returns another type than the literal, the reference's value is expected)
or ``harness`` (the benchmark's own ``==``)."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something of the benchmark file that was not imported, and why."""

    task: str
    """The benchmark's task id (or ``line N`` when there is none)."""
    what: str
    """What was left out: a task, a statement, a test."""
    why: str
    """Why."""


@dataclass(frozen=True, slots=True)
class Retyped:
    """A converted case whose literal and reference value differ in type (``==`` is lax)."""

    task: str
    """The benchmark's task id."""
    case: int
    """Index of the case among the task's hidden cases."""
    literal: str
    """Type of the value the benchmark's assert compares with."""
    reference: str
    """Type of the value the reference solution returned."""
    lax: str
    """The kind of laxness: ``eq``, ``truthy`` or ``falsy``."""
    became: Literal["reference_value", "python_equality", "program"]
    """What the import made of it."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One check statement of a benchmark task."""

    source: str
    """The statement as Python source (dedented)."""
    role: Literal["check", "setup", "trivial"]
    """``check`` holds an assert; ``setup`` runs before later checks; ``trivial`` is
    ``assert True`` or a docstring (ignored)."""
    converted: Converted | None = None
    """The statement as a function case, when it converts."""
    line: int = 0
    """Line in the benchmark's test source."""


@dataclass(frozen=True, slots=True)
class Draft:
    """A task as read from the benchmark file, before the reference check."""

    task_id: str
    """The benchmark's id (``HumanEval/0``): the gradebox task id, never renamed."""
    fn: str
    """The entry point: the function the benchmark calls (the candidate defines it);
    many tasks may share one (BigCodeBench's ``task_func``)."""
    public: PublicTask
    """What may be shown to a model."""
    prefix: str = ""
    """Code put before a completion (HumanEval's prompt) to make a whole program."""
    reference: str | None = None
    """The canonical solution as whole code (``prefix + solution``)."""
    head: str = ""
    """Module-level code of the test program (imports, constants, setup code)."""
    param: str = "candidate"
    """The name the checks call the candidate by."""
    statements: tuple[Statement, ...] = ()
    """The check statements, in order."""
    all_program: bool = False
    """Every check runs as a test program (e.g. MBPP's setup code must run first)."""
    tests: tuple[str, ...] = ()
    """For unittest-based tasks: ``Class.method`` of every test, run as program cases."""
    program: str = ""
    """For unittest-based tasks: the test module."""
    stdio: tuple[HiddenCase, ...] = ()
    """For stdin/stdout tasks: the cases, ready."""


@dataclass(frozen=True, slots=True)
class ImportedTask:
    """A task ready to write: hidden cases, public task, reference."""

    task_id: str
    """The benchmark's id: the task's id."""
    fn: str
    """The entry point."""
    public: PublicTask
    """The public task."""
    cases: tuple[HiddenCase, ...]
    """The hidden cases, in the benchmark's order."""
    reference: str | None
    """The reference solution as whole code, when the benchmark has one."""
    prefix: str = ""
    """Prepended to a completion (for samples files)."""
    retyped: tuple[Retyped, ...] = field(default=())
    """Cases whose literal and reference types differ."""
