"""Loading a run's inputs: hidden cases, public tasks and samples, checked together.

Everything is validated before any work starts: a bad line anywhere is reported
as ``file:line: what is wrong`` and the run does not start. A caller may ask to
skip bad lines of samples.jsonl and public.jsonl (the problems are returned for
the summary and the bad samples are left out, never silently); bad lines of
hidden.jsonl always stop the run: the deciding cases are never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from gradebox.errors import BadInput
from gradebox.model import Sample, Task
from gradebox.pipeline.task_static import task_static
from sandbox.cases import load_hidden, load_public, read_jsonl
from sandbox.errors import InputError
from sandbox.types import HiddenCase, PublicTask

__all__ = ["RunInputs", "load_inputs", "load_samples"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RunInputs:
    """A run's validated inputs."""

    tasks: dict[str, Task]
    """Tasks by ``fn``, with their hidden cases and public description."""
    samples: list[Sample]
    """Samples in input order."""
    problems: list[str]
    """Bad lines that were skipped (only with ``skip_bad_lines``)."""


def load_samples(path: Path, *, skip_bad_lines: bool = False) -> tuple[list[Sample], list[str]]:
    """Load ``samples.jsonl``; duplicate ids and lines with neither reply nor code are bad."""
    schema = json.loads(
        (resources.files("gradebox") / "schemas" / "samples.schema.json").read_text("utf-8")
    )
    try:
        items, found = read_jsonl(path, schema, _sample)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    seen: dict[str, int] = {}
    samples: list[Sample] = []
    for s in items:
        if s.id in seen:
            found.append((s.line, f"id: sample id {s.id!r} is already used on line {seen[s.id]}"))
            continue
        seen[s.id] = s.line
        samples.append(s)
    problems = [f"{path}:{n}: {m}" for n, m in sorted(found)]
    if problems and not skip_bad_lines:
        raise BadInput(problems)
    return samples, problems


def _sample(obj: dict[str, Any], line: int) -> tuple[Sample | None, list[str]]:
    if ("reply" in obj) == ("code" in obj):
        return None, ["a sample needs exactly one of 'reply' (a model answer) or 'code'"]
    return Sample.from_json(obj, line), []


def load_inputs(
    hidden: Path, samples: Path, public: Path | None = None, *, skip_bad_lines: bool = False
) -> RunInputs:
    """Load and cross-check all inputs of a grading run.

    Every file is read even when an earlier one is bad, so one run shows all problems.
    ``skip_bad_lines`` applies to samples and public tasks only, never to hidden cases.

    Raises:
        BadInput: Every problem found, as ``file:line: what is wrong``.
    """
    fatal: list[str] = []
    problems: list[str] = []

    def attempt(load: Callable[[], tuple[_T, list[str]]], empty: _T) -> _T:
        try:
            value, found = load()
        except (InputError, BadInput) as exc:
            fatal.extend(exc.problems)
            return empty
        problems.extend(found)
        return value

    cases: list[HiddenCase] = attempt(lambda: load_hidden(hidden, skip_bad_lines=False), [])
    pub: dict[str, PublicTask] = {}
    if public is not None:
        pub = attempt(lambda: load_public(public, skip_bad_lines=skip_bad_lines), {})
    sample_list: list[Sample] = attempt(
        lambda: load_samples(samples, skip_bad_lines=skip_bad_lines), []
    )
    if public is not None:
        fatal += _static_problems(public, pub)
    if fatal:
        raise BadInput(fatal)
    by_fn: dict[str, list[HiddenCase]] = {}
    for c in cases:
        by_fn.setdefault(c.fn, []).append(c)
    tasks = {fn: Task(fn, tuple(cs), pub.get(fn)) for fn, cs in by_fn.items()}
    orphans = [
        f"{samples}:{s.line}: fn: {s.fn!r} has no hidden cases in {hidden}"
        for s in sample_list
        if s.fn not in tasks
    ]
    if orphans and not skip_bad_lines:
        raise BadInput(orphans)
    kept = [s for s in sample_list if s.fn in tasks]
    if not kept:
        raise BadInput([*problems, *orphans, f"{samples}: no sample can be graded"])
    return RunInputs(tasks=tasks, samples=kept, problems=problems + orphans)


def _static_problems(path: Path, tasks: dict[str, PublicTask]) -> list[str]:
    """Each task's unusable ``static`` settings, as ``file:line: static.<field>: ...``."""
    out = []
    for task in tasks.values():
        if task.static:
            try:
                task_static(json.loads(task.static))
            except ValueError as exc:
                out.append(f"{path}:{task.line}: static.{exc}")
    return out
