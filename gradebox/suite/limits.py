"""Time limits derived from the reference's measured time on this machine.

A fixed limit turns correct answers into timeouts on a slow machine. With a
reference, each case's limit is ``max(floor_s, factor x t)``, where ``t`` is
the longest of ``repeats`` calls of the reference on that case, timed inside
the sandbox (:attr:`sandbox.types.Observation.duration_s`) at the start of the
run. A case the reference did not finish (timeout, crash) keeps its own
``timeout_s`` or the run's default. Without a reference the documented default
applies: the case's ``timeout_s``, else the run's ``Limits.case_timeout_s`` (2.0 s by default).

:class:`LimitsPlan` carries both the limits and what they came from, as a
record for the run manifest (:meth:`LimitsPlan.to_json`).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gradebox.model import Task
from gradebox.suite.batch import Job, run_jobs
from gradebox.suite.references import Reference
from sandbox.runner import Sandbox
from sandbox.types import Limits

__all__ = ["LimitsPlan", "derive_limits", "plan_limits"]

LimitSource = Literal["reference", "default"]
"""Where a task's limits came from."""


@dataclass(frozen=True, slots=True)
class LimitsPlan:
    """Per-case time limits and the measurements behind them."""

    limits: dict[str, list[float]]
    """Per task, per case (in case order): the wall-clock limit in seconds."""
    measured_s: dict[str, list[float | None]]
    """Per task, per case: the reference's longest time, None if not measured."""
    sources: dict[str, LimitSource]
    """Per task: ``reference`` (measured) or ``default`` (no reference)."""
    floor_s: float
    """Smallest derived limit."""
    factor: float
    """Multiplier on the measured time."""
    repeats: int
    """Reference runs per task that were measured."""
    default_s: float
    """The default for cases without a measurement or an own ``timeout_s``."""
    machine: dict[str, Any] = field(default_factory=dict)
    """Where it was measured: platform, Python, CPU count."""

    def apply(self, tasks: Mapping[str, Task]) -> dict[str, Task]:
        """New tasks whose cases carry these limits as ``timeout_s``."""
        out = {}
        for fn, task in tasks.items():
            limits = self.limits.get(fn)
            if limits is None:
                out[fn] = task
                continue
            cases = tuple(
                replace(case, timeout_s=limit)
                for case, limit in zip(task.cases, limits, strict=True)
            )
            out[fn] = replace(task, cases=cases)
        return out

    def to_json(self) -> dict[str, Any]:
        """The record for the run manifest."""
        return {
            "floor_s": self.floor_s,
            "factor": self.factor,
            "repeats": self.repeats,
            "default_s": self.default_s,
            "machine": self.machine,
            "tasks": {
                fn: {
                    "source": self.sources[fn],
                    "limits_s": [round(x, 6) for x in limits],
                    "measured_s": [None if m is None else round(m, 6) for m in self.measured_s[fn]],
                }
                for fn, limits in self.limits.items()
            },
        }


def plan_limits(
    tasks: Mapping[str, Task],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    *,
    floor_s: float = 0.5,
    factor: float = 10.0,
    repeats: int = 3,
    default: Limits | None = None,
    workers: int = 2,
) -> LimitsPlan:
    """Measure each reference in the sandbox and derive every case's limit.

    Args:
        tasks: Tasks by id.
        references: References by task id; tasks without one get the default.
        sandbox: An open sandbox (references run there, never in this process).
        floor_s: Smallest limit given to a case.
        factor: Limit = ``factor`` x the reference's longest time on the case.
        repeats: Reference runs per task; the longest time of each case counts.
        default: The run's limits: ``case_timeout_s`` is the default limit and
            the measuring runs use them (default: the sandbox's, normally ``Limits()``).
        workers: Sandbox runs in flight at once.

    Returns:
        The limits with their record.
    """
    base = default or sandbox.limits
    measured = _measure(tasks, references, sandbox, max(1, repeats), workers, base)
    limits: dict[str, list[float]] = {}
    sources: dict[str, LimitSource] = {}
    measured_s: dict[str, list[float | None]] = {}
    for fn, task in tasks.items():
        times = measured.get(fn, [None] * len(task.cases))
        sources[fn] = "reference" if fn in measured else "default"
        measured_s[fn] = times
        limits[fn] = [
            max(floor_s, factor * t) if t is not None else (case.timeout_s or base.case_timeout_s)
            for case, t in zip(task.cases, times, strict=True)
        ]
    machine = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sandbox": sandbox.backend,
    }
    return LimitsPlan(
        limits, measured_s, sources, floor_s, factor, max(1, repeats), base.case_timeout_s, machine
    )


def derive_limits(
    tasks: Mapping[str, Task],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    *,
    floor_s: float = 0.5,
    factor: float = 10.0,
) -> dict[str, list[float]]:
    """Per task, per case: ``max(floor_s, factor x`` the reference's time``)``.

    The short form of :func:`plan_limits` (which also returns the record).
    """
    return plan_limits(tasks, references, sandbox, floor_s=floor_s, factor=factor).limits


def _measure(
    tasks: Mapping[str, Task],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    repeats: int,
    workers: int,
    base: Limits,
) -> dict[str, list[float | None]]:
    # Every case runs even after a timeout: one slow case must not hide the rest.
    limits = replace(base, max_timeouts=0)
    keyed = [
        (tid, Job(references[tid].code, task.fn, task.cases, limits))
        for tid, task in tasks.items()
        if tid in references
        for _ in range(repeats)
    ]
    jobs = [job for _, job in keyed]
    out: dict[str, list[float | None]] = {}  # by task id (tasks may share an entry point)
    for (tid, job), run in zip(keyed, run_jobs(sandbox, jobs, workers=workers), strict=True):
        times = out.setdefault(tid, [None] * len(job.cases))
        if run.infra_error:
            continue
        for i, obs in enumerate(run.observations):
            if obs.status in ("returned", "raised"):
                times[i] = max(times[i] or 0.0, obs.duration_s)
    return out
