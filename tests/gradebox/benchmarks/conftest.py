"""Grading imported task sets in the real sandbox, through the pipeline ``gradebox grade`` runs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from gradebox.pipeline.tests import GradeConfig, Grader
from gradebox.runs.inputs import load_inputs
from sandbox import open_sandbox


def grade_rows(hidden: Path, samples: Path, public: Path | None = None) -> list[dict[str, Any]]:
    """Rows of the hidden tests (no static layers, no judge), in sample order."""
    inputs = load_inputs(hidden, samples, public)
    with open_sandbox("auto", workers=2) as sb, ThreadPoolExecutor(2) as pool:
        grader = Grader(sb, inputs.tasks, GradeConfig())
        return list(pool.map(grader.grade, inputs.samples))


@pytest.fixture(scope="session")
def grade() -> Callable[..., list[dict[str, Any]]]:
    """:func:`grade_rows`, for tests."""
    return grade_rows
