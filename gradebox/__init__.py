"""gradebox: grade AI-generated Python code; this package composes the layers.

The layers (``sandbox``, ``static``, ``judge``) never import each other; the
grader here runs them in order and decides the verdict in one place.
"""

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
