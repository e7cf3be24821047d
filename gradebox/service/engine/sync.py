"""Synchronous grades: one sample graded in the server's pool, its row stored, a judgement later."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import replace
from functools import partial

from gradebox.model import Sample
from gradebox.service.config import Layers
from gradebox.service.engine.grading import GradingService, Outcome
from gradebox.service.engine.state import ServiceState
from gradebox.service.engine.validate import sample_from_json
from gradebox.service.rows import StoredGrade

__all__ = ["submit_grade"]


def submit_grade(
    state: ServiceState,
    grading: GradingService,
    grade_id: str,
    owner: str,
    sample: Mapping[str, object],
    layers: Layers,
) -> Future[StoredGrade]:
    """Grade ``sample`` in the server's pool; the future is its stored grade.

    The caller holds a grade slot of ``owner``'s; it is given back when the grade ends.
    """
    job = partial(_grade_and_store, state, grading, grade_id, owner)
    context = contextvars.copy_context()  # the request id follows into the thread
    future = state.pool.submit(context.run, job, sample_from_json(sample), layers)
    future.add_done_callback(lambda _f: state.slots.release(owner))
    return future


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
