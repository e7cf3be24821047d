"""gradebox: grade AI-generated Python code; this package composes the layers.

The layers (``sandbox``, ``static``, ``judge``) never import each other; the
grader here runs them in order and decides the verdict in one place.

The names below are loaded on first use (PEP 562): ``import gradebox`` (and so
every ``gradebox`` command) does not pay for the grading pipeline until it uses it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradebox.errors import BadInput, GradeboxError, SetupError
    from gradebox.model import Sample, Task
    from gradebox.pipeline.tests import GradeConfig, Grader, grade_all
    from gradebox.runs.inputs import RunInputs, load_inputs, load_samples
    from gradebox.verdict import Verdict, decide

__all__ = [
    "BadInput",
    "GradeConfig",
    "GradeboxError",
    "Grader",
    "RunInputs",
    "Sample",
    "SetupError",
    "Task",
    "Verdict",
    "decide",
    "grade_all",
    "load_inputs",
    "load_samples",
]

#: module -> the public names it defines
_EXPORTS = {
    "errors": ("BadInput", "GradeboxError", "SetupError"),
    "model": ("Sample", "Task"),
    "pipeline.tests": ("GradeConfig", "Grader", "grade_all"),
    "runs.inputs": ("RunInputs", "load_inputs", "load_samples"),
    "verdict": ("Verdict", "decide"),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gradebox' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gradebox.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names too, before their first use."""
    return sorted({*globals(), *__all__})
