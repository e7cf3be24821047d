"""A gradebox task set on disk, as an integration reads it.

A task set is a directory holding ``public.jsonl`` (what a model may see) and
``hidden.jsonl`` (the deciding cases), as ``gradebox import`` writes it; a path
to its ``public.jsonl`` names the same set. Prompts are built from the public
file alone (:func:`read_public`): the hidden file is opened only to grade
(:func:`read_tasks`).

A task has an id (``HumanEval/85``) and an entry point (the function its cases
call); :func:`task_names` is the one place both are read of a public task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gradebox.errors import BadInput
from gradebox.model import Task
from gradebox.runs.inputs import group_tasks
from sandbox.cases import load_hidden, load_public
from sandbox.errors import InputError
from sandbox.types import PublicTask

__all__ = ["TaskNames", "TaskSetFiles", "read_public", "read_tasks", "task_names", "task_set"]


@dataclass(frozen=True, slots=True)
class TaskSetFiles:
    """Where a task set's files are."""

    public: Path
    """``public.jsonl``: specs, signatures, task options."""
    hidden: Path
    """``hidden.jsonl``: the deciding cases (read only to grade)."""


@dataclass(frozen=True, slots=True)
class TaskNames:
    """How a task is named."""

    id: str
    """The task's id: what samples, rows and pass@k name it by."""
    entry: str
    """The entry point: the function (or program) its cases call."""


def task_set(tasks: str | Path) -> TaskSetFiles:
    """The files of the task set ``tasks`` names: a directory, or its ``public.jsonl``.

    Raises:
        BadInput: ``tasks`` is neither.
    """
    path = Path(tasks)
    if path.is_dir():
        return TaskSetFiles(path / "public.jsonl", path / "hidden.jsonl")
    if path.is_file():
        return TaskSetFiles(path, path.with_name("hidden.jsonl"))
    raise BadInput([f"{path}: no task set here (a directory with public.jsonl and hidden.jsonl)"])


def task_names(task: PublicTask) -> TaskNames:
    """The id and entry point of a public task (in files from before task ids, ``fn`` is both)."""
    return TaskNames(id=task.task, entry=task.fn)


def read_public(files: TaskSetFiles) -> list[PublicTask]:
    """The public tasks, in file order; the hidden file is not opened.

    Raises:
        BadInput: A bad line, as ``file:line: what is wrong``.
    """
    try:
        tasks, _ = load_public(files.public)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    return list(tasks.values())


def read_tasks(files: TaskSetFiles) -> dict[str, Task]:
    """Every task with its hidden cases and public description, by id, checked together.

    Raises:
        BadInput: Bad lines of either file, or files that disagree on a task's entry point.
    """
    problems: list[str] = []
    try:
        cases, _ = load_hidden(files.hidden)
    except InputError as exc:
        problems += exc.problems
        cases = []
    try:
        public, _ = load_public(files.public)
    except InputError as exc:
        problems += exc.problems
        public = {}
    tasks, mixed = group_tasks(cases, public, files.hidden, files.public)
    problems += mixed
    unknown = [p for tid, p in public.items() if tid not in tasks]
    problems += [f"{files.public}:{p.line}: task {p.task!r} has no hidden cases" for p in unknown]
    if problems:
        raise BadInput(problems)
    return tasks
