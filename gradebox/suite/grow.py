"""Freezing generated cases into ``hidden.jsonl`` lines, for a person to review.

The lines are ordinary hidden cases (tagged JSON values, ``error`` as a
builtin or dotted standard-library name, ``name`` ``property:<n>``); an input
that an existing hidden case already covers (same task, arguments and keyword
arguments, compared type-strictly) is left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gradebox.model import Task
from sandbox.child.wire import to_wire
from sandbox.compare import values_equal
from sandbox.types import HiddenCase

__all__ = ["case_to_json", "dumps_lines", "extend_tasks", "freeze_cases"]


def freeze_cases(
    generated: Mapping[str, Sequence[HiddenCase]], existing: Iterable[HiddenCase] = ()
) -> list[dict[str, Any]]:
    """Generated cases as ``hidden.jsonl`` objects, without inputs ``existing`` covers.

    Args:
        generated: Per task, the generated cases.
        existing: The hidden cases already in the suite.

    Returns:
        One JSON-ready object per new case, task by task, in generation order.
    """
    known: dict[str, list[HiddenCase]] = {}
    for case in existing:
        known.setdefault(case.task, []).append(case)
    lines = []
    for fn, cases in generated.items():
        for case in cases:
            if any(_same_input(case, old) for old in known.get(fn, [])):
                continue
            lines.append(case_to_json(case))
            known.setdefault(fn, []).append(case)
    return lines


def extend_tasks(
    tasks: Mapping[str, Task], generated: Mapping[str, Sequence[HiddenCase]]
) -> dict[str, Task]:
    """New tasks with the generated cases appended after the fixed ones (for grading).

    Rows name cases by index, so the fixed cases keep theirs; generated cases for
    a task that has no fixed cases are ignored (there is no task to grade).
    """
    return {
        tid: replace(task, cases=task.cases + tuple(generated.get(tid, ())))
        for tid, task in tasks.items()
    }


def case_to_json(case: HiddenCase) -> dict[str, Any]:
    """One hidden case as a ``hidden.jsonl`` object (tagged JSON values)."""
    obj: dict[str, Any] = {"fn": case.fn, "args": [to_wire(a) for a in case.args]}
    if case.task != case.fn:
        obj = {"task": case.task, **obj}
    if case.kwargs:
        obj["kwargs"] = {k: to_wire(v) for k, v in case.kwargs.items()}
    if case.error is not None:
        obj["error"] = case.error.removeprefix("builtins.")
    else:
        obj["expect"] = to_wire(case.expect)
    if case.tol is not None:
        obj["tol"] = case.tol
    if case.timeout_s is not None:
        obj["timeout_s"] = case.timeout_s
    if case.name is not None:
        obj["name"] = case.name
    return obj


def dumps_lines(objects: Iterable[dict[str, Any]]) -> str:
    """JSON Lines text of ``objects`` (UTF-8 characters kept as they are)."""
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


def _same_input(a: HiddenCase, b: HiddenCase) -> bool:
    return values_equal(list(a.args), list(b.args)) and values_equal(a.kwargs, b.kwargs)
