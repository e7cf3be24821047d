"""Running many (code, task) pairs through the sandbox at once.

One :class:`Job` is one :meth:`sandbox.runner.Sandbox.run`: one fresh isolated
process running every case of one task against one piece of code (a reference
run, a stub, a mutant). Jobs go through a thread pool as wide as ``workers``;
the threads only wait on the sandbox's worker pipes.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sandbox.compare import judge_case
from sandbox.runner import Sandbox
from sandbox.types import CaseOutcome, HiddenCase, Limits, RunResult

__all__ = ["Job", "outcomes_of", "run_jobs"]


@dataclass(frozen=True, slots=True)
class Job:
    """One piece of code run against the cases of one task."""

    code: str
    """The code (reference, stub or mutant)."""
    fn: str
    """The function to call."""
    cases: tuple[HiddenCase, ...]
    """The cases, in order."""
    limits: Limits | None = None
    """Limits for this run; ``None`` means the sandbox's."""


def run_jobs(sandbox: Sandbox, jobs: Sequence[Job], *, workers: int = 2) -> list[RunResult]:
    """Run every job in the sandbox, ``workers`` at a time; results in job order.

    Never raises for what the code does: a failure of the sandbox itself is
    the result's ``infra_error``.
    """
    if not jobs:
        return []

    def one(job: Job) -> RunResult:
        return sandbox.run(job.code, job.fn, job.cases, job.limits)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="suite") as pool:
        return list(pool.map(one, jobs))


def outcomes_of(cases: Sequence[HiddenCase], run: RunResult) -> tuple[CaseOutcome, ...]:
    """The outcome of each case of one run (``not_run`` everywhere on an infra error)."""
    if run.infra_error:
        return tuple("not_run" for _ in cases)
    return tuple(
        judge_case(case, obs).outcome for case, obs in zip(cases, run.observations, strict=True)
    )
