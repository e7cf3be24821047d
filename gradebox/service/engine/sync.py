"""Synchronous grades: one body checked and graded in the server's pool, its row stored.

One thread does both (one hop off the event loop, not two): it parses and checks
the body (the API's ``admit``, which takes the token's rate and a grade slot, or
raises the 413, 422 or 429 the client gets), grades the sample, stores its row,
and starts a deferred judgement. The deadline counts from the admission
(:class:`Admission`): checking has its own budget.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from functools import partial

from gradebox.model import Sample
from gradebox.service.config import Layers
from gradebox.service.engine.grading import GradingService, Outcome
from gradebox.service.engine.state import ServiceState
from gradebox.service.engine.validate import sample_from_json
from gradebox.service.rows import StoredGrade

__all__ = ["Admission", "Admit", "submit_grade"]

Admit = Callable[[], tuple[Mapping[str, object], Layers]]
"""Parse and check a grade body, take its token's rate and a grade slot: the sample and
its layers (raises the API's error otherwise)."""


@dataclass(slots=True)
class Admission:
    """When the grading thread admitted the grade (body checked, slot taken)."""

    at: float | None = None
    """``time.monotonic()`` then; ``None`` while the body is being checked."""


def submit_grade(
    state: ServiceState, grading: GradingService, grade_id: str, owner: str, admit: Admit
) -> tuple[Future[StoredGrade], Admission]:
    """Check (``admit``) and grade one body in the server's pool; the future is its grade.

    The grade slot ``admit`` takes for ``owner`` is given back when the grade ends.
    """
    admission = Admission()
    job = partial(_admit_and_grade, state, grading, grade_id, owner, admit, admission)
    context = contextvars.copy_context()  # the request id follows into the thread
    return state.pool.submit(context.run, job), admission


def _admit_and_grade(
    state: ServiceState,
    grading: GradingService,
    grade_id: str,
    owner: str,
    admit: Admit,
    admission: Admission,
) -> StoredGrade:
    with state.grade_checks:
        sample, layers = admit()
    admission.at = time.monotonic()
    try:
        return _grade_and_store(state, grading, grade_id, owner, sample_from_json(sample), layers)
    finally:
        state.slots.release(owner)


def _grade_and_store(
    state: ServiceState,
    grading: GradingService,
    grade_id: str,
    owner: str,
    sample: Sample,
    layers: Layers,
) -> StoredGrade:
    """Grade (in a worker thread), store the grade, start a deferred judgement."""
    outcome: Outcome = grading.grade(sample, layers, owner=owner)
    stored = replace(outcome.stored, grade_id=grade_id)
    state.store.put_grade(grade_id, owner, stored)
    if outcome.later is not None:
        outcome.later(
            lambda done: state.store.update_grade(grade_id, replace(done, grade_id=grade_id))
        )
    return stored
