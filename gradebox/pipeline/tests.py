"""The combined grader: extract, gate, sandbox, compare, verdict -> one row per sample.

Grading work goes through one executor seam: :func:`grade_all` takes anything
with the shape of :class:`concurrent.futures.Executor` (``submit`` returning
futures), so a distributed engine with that shape can run the same work. The
default is a thread pool as wide as the sandbox's worker pool: the threads only
wait on worker pipes; candidates run in the isolated worker processes.

The stages after the sandbox (static layers, judge) run in the coordinating
process, batched over chunks of samples (:mod:`gradebox.pipeline.core`); the
verdict is settled once every stage has annotated a sample.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from gradebox.grade import MAX_TEXT, GateReport, Grade, Json, TaskKind, TestsReport
from gradebox.model import Sample, Task
from gradebox.pipeline.core import CHUNK, Graded, Stage, finish, stream
from gradebox.pipeline.extract import Extraction, extract
from gradebox.pipeline.gate import DEFAULT_BANNED, GateResult, gate
from gradebox.verdict import Verdict
from sandbox.child.wire import to_wire
from sandbox.compare import judge_case
from sandbox.runner import Sandbox
from sandbox.types import CaseOutcome, HiddenCase, Limits, Observation, RunResult

if TYPE_CHECKING:
    from multiprocessing.synchronize import Semaphore

__all__ = [
    "Front",
    "FrontJob",
    "FrontResult",
    "GradeConfig",
    "Grader",
    "check_front",
    "grade_all",
    "infra_grade",
    "infra_row",
    "warm_front",
]


@dataclass(frozen=True, slots=True)
class GradeConfig:
    """Options of one grading run."""

    limits: Limits = field(default_factory=Limits)
    """Resource limits per candidate."""
    banned_imports: tuple[str, ...] | None = None
    """The run's denylist; ``None`` means the task's, else the default."""
    explain: bool = False
    """Put arguments, expected and actual values of failed cases on the row."""
    shrink: Callable[[str, str, int], HiddenCase | None] | None = None
    """``(task id, code, case index) -> smaller failing case`` for property-generated cases;
    its result goes on the row (``counterexample``) only with ``explain``."""


@dataclass(frozen=True, slots=True)
class FrontJob:
    """What extract and gate read of one sample: plain values, picklable for a worker process."""

    fn: str
    """The task's entry point (the function the code must define)."""
    reply: str | None
    """The sample's raw model reply, or ``None``."""
    code: str | None
    """The sample's code as is, or ``None``."""
    claim: str | None
    """The sample's explicit complexity claim, or ``None``."""
    banned: tuple[str, ...]
    """The import denylist that applies."""
    helpers_allowed: bool
    """The task accepts top-level functions other than ``fn``."""
    allow_loops: bool
    """The task allows loops, so an O(1) claim is not checked."""


@dataclass(frozen=True, slots=True)
class FrontResult:
    """What extract and gate found for one :class:`FrontJob`; picklable."""

    extraction: Extraction
    """The code and the contract check."""
    gate: GateResult
    """Syntax, banned imports and the claim check."""


def check_front(job: FrontJob) -> FrontResult:
    """Extract and gate one sample: pure Python on its text, safe in any thread or process.

    Args:
        job: The sample's text and its task's rules.

    Returns:
        The extraction and the gate's findings; never raises for any sample text.
    """
    ext = extract(reply=job.reply, code=job.code, fn=job.fn, helpers_allowed=job.helpers_allowed)
    g = gate(
        ext.code,
        fn=job.fn,
        banned=job.banned,
        claim_text=ext.claim_text,
        claim=job.claim,
        allow_loops=job.allow_loops,
    )
    return FrontResult(ext, g)


def warm_front(ready: Semaphore) -> None:
    """Make this process a worker for :func:`check_front`, then release ``ready``.

    The initializer of a pool process: it runs the front once (imports, caches),
    so whoever started it learns, by acquiring ``ready``, that it can take a
    sample at once. SIGTERM is made to end it at once: a Python handler would
    only run after a parse in progress (up to seconds), and the worker holds
    nothing that needs cleaning up.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    check_front(FrontJob("f", None, "def f():\n    return 1\n", None, (), False, False))
    ready.release()


@dataclass(frozen=True, slots=True)
class Front:
    """What extract and gate found for one sample, before the sandbox."""

    extraction: Extraction
    """The code and the contract check."""
    gate: GateResult
    """Syntax, banned imports and the claim check."""
    started: float
    """``time.perf_counter()`` when grading the sample began."""


class Grader:
    """Grades samples against their tasks in a sandbox."""

    def __init__(self, sandbox: Sandbox, tasks: dict[str, Task], config: GradeConfig) -> None:
        """Grade against ``tasks`` (by task id) in ``sandbox``."""
        self.sandbox = sandbox
        self.tasks = tasks
        self.config = config

    def banned_for(self, task: Task) -> tuple[str, ...]:
        """The import denylist that applies to ``task``."""
        if self.config.banned_imports is not None:
            return self.config.banned_imports
        if task.public is not None and task.public.banned_imports is not None:
            return task.public.banned_imports
        return DEFAULT_BANNED

    def _counterexample(
        self, task: str, code: str, cases: Sequence[HiddenCase], outcomes: Sequence[str]
    ) -> dict[str, Any] | None:
        """Shrink the first failed property-generated case (``--explain`` only)."""
        if self.config.shrink is None:
            return None
        for i, (case, outcome) in enumerate(zip(cases, outcomes, strict=True)):
            if outcome in ("ok", "not_run") or not (case.name or "").startswith("property:"):
                continue
            small = self.config.shrink(task, code, i)
            if small is None:
                return None
            expect = {"error": small.error} if small.error else _safe_wire(small.expect)
            return {
                "case": i,
                "args": small.args_wire,
                "kwargs": small.kwargs_wire,
                "expect": expect,
            }
        return None

    def grade(self, sample: Sample, front: Front | None = None) -> dict[str, Any]:
        """Grade one sample without later stages and return its row (never raises for it).

        Args:
            sample: The sample.
            front: Its :meth:`front`, when the caller already ran it (under a time budget).
        """
        return finish(self.grade_cases(sample, front or self.front(sample)), {}).to_row()

    def grade_tests(self, sample: Sample) -> Graded:
        """Extract, gate and run the hidden cases; the verdict waits for the later stages."""
        return self.grade_cases(sample, self.front(sample))

    def front(self, sample: Sample) -> Front:
        """Extract and gate one sample in this thread: safe in any number of threads at once."""
        t0 = time.perf_counter()
        found = check_front(self.front_job(sample))
        return Front(found.extraction, found.gate, t0)

    def front_job(self, sample: Sample) -> FrontJob:
        """What :func:`check_front` needs of ``sample`` (to run it elsewhere, e.g. a process)."""
        task = self.tasks[sample.task]
        pub = task.public
        return FrontJob(
            fn=task.fn,
            reply=sample.reply,
            code=sample.code,
            claim=sample.claim,
            banned=tuple(self.banned_for(task)),
            helpers_allowed=bool(pub and pub.helpers_allowed),
            allow_loops=bool(pub and pub.allow_loops),
        )

    def grade_cases(self, sample: Sample, front: Front) -> Graded:
        """Run the hidden cases of a sample that went through :meth:`front`."""
        ext, g, t0 = front.extraction, front.gate, front.started
        task = self.tasks[sample.task]
        pub = task.public
        if _kind(task.cases) == "stdio" and ext.contract in _NO_FUNCTION_NEEDED:
            ext = replace(ext, contract="ok", detail="")  # a program defines no `fn`
        contract_ok = ext.contract == "ok"
        run: RunResult | None = None
        if contract_ok and not g.fired:
            run = self.sandbox.run(ext.code, task.fn, task.cases, self.config.limits)
        outcomes = _outcomes(task.cases, run)
        detail = ext.detail if not contract_ok else g.syntax_detail or g.claim_detail
        explain: Json = None
        counterexample: Json = None
        if self.config.explain and run is not None:
            explain = cast(Json, _explain(task.cases, run))
            counterexample = cast(
                Json, self._counterexample(task.id, ext.code, task.cases, outcomes)
            )
        tests = TestsReport(
            outcomes=tuple(outcomes),
            gate=GateReport(g.syntax, tuple(g.banned), ext.contract),
            claim=g.claim,
            latency_ms=round((time.perf_counter() - t0) * 1000, 1),
            infra_error=run.infra_error[:MAX_TEXT] if run and run.infra_error else None,
            detail=detail[:MAX_TEXT] if detail else None,
            explain=explain,
            counterexample=counterexample,
            caps_hit=tuple(c for c in ("memory", "processes") if run and c in run.caps_hit),
            kind=_kind(task.cases),
        )
        return Graded(
            sample_id=sample.id,
            fn=task.fn,
            code=ext.code if contract_ok else None,
            original=sample.original,
            public=pub,
            tests=tests,
            task=task.id,
        )


#: Contract failures that only mean the code does not define ``fn`` as the one function:
#: a stdin/stdout task's candidate is a program, it need not define any.
_NO_FUNCTION_NEEDED = ("missing_function", "multiple_functions")


def _kind(cases: Sequence[HiddenCase]) -> TaskKind | None:
    """The row's ``kind``: ``program``, ``stdio`` or none (a function task).

    ``program`` whenever any case runs a test program: it shares the candidate's process.
    """
    kinds = {c.kind for c in cases}
    if "program" in kinds:
        return "program"
    return "stdio" if "stdio" in kinds else None


def _outcomes(cases: Sequence[HiddenCase], run: RunResult | None) -> list[CaseOutcome]:
    if run is None or run.infra_error:
        return ["not_run"] * len(cases)
    return [judge_case(c, o).outcome for c, o in zip(cases, run.observations, strict=True)]


def _explain(cases: Sequence[HiddenCase], run: RunResult) -> list[dict[str, Any]]:
    """Arguments, expectation and observation of each failed case (``--explain`` only)."""
    out = []
    for i, (case, obs) in enumerate(zip(cases, run.observations, strict=True)):
        res = judge_case(case, obs)
        if res.outcome == "ok":
            continue
        out.append(
            {
                "case": i,
                "name": case.name,
                "args": case.args_wire,
                "kwargs": case.kwargs_wire,
                "expect": {"error": case.error} if case.error else _safe_wire(case.expect),
                "got": _describe(obs),
                "outcome": res.outcome,
                "detail": res.detail,
            }
        )
    return out


def _describe(obs: Observation) -> Any:
    if obs.status == "returned":
        return _safe_wire(obs.value)
    if obs.status == "raised" and obs.raised is not None:
        return {"raised": obs.raised.type_name, "message": obs.raised.message}
    return {obs.status: obs.detail}


def _safe_wire(value: Any) -> Any:
    try:
        return to_wire(value)
    except ValueError:
        return {"$opaque": type(value).__name__}


def grade_all(
    grader: Grader,
    samples: Sequence[Sample],
    executor: Executor,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
    *,
    stages: Sequence[Stage] = (),
    chunk: int = CHUNK,
) -> Iterator[dict[str, Any]]:
    """Grade every sample through ``executor``, then the stages; yield rows in input order.

    Rows are yielded as soon as every earlier row is done, so a consumer that
    writes them as they come loses no finished row if the run is interrupted.
    ``on_row(index, row)`` is called as each row finishes (for progress).

    Args:
        grader: Extract, gate and sandbox (the work submitted to ``executor``).
        samples: The samples, in input order.
        executor: Anything with ``submit`` returning futures.
        on_row: Progress callback.
        stages: Stages after the sandbox (static layers, judge), batched over
            chunks of ``chunk`` samples, each in a thread of its own.
        chunk: Samples per chunk handed to the stages.

    Returns:
        An iterator of final rows.
    """

    def submit(i: int) -> Future[Graded]:
        return executor.submit(grader.grade_tests, samples[i])

    def fallback(i: int, exc: Exception) -> Graded:
        grade = infra_grade(samples[i], f"grader error: {type(exc).__name__}: {exc}", grader.tasks)
        return Graded(
            grade.id, grade.fn, None, None, None, grade.tests, grade.verdict, task=grade.task
        )

    def tick(i: int, grade: Grade) -> None:
        if on_row is not None:
            on_row(i, grade.to_row())

    grades = stream(submit, len(samples), fallback, stages=stages, on_row=tick, chunk=chunk)
    return (grade.to_row() for grade in grades)


def infra_grade(sample: Sample, message: str, tasks: Mapping[str, Task] | None = None) -> Grade:
    """The grade of a sample that could not be graded: needs review, never a fail.

    Its ``fn`` is its task's entry point when ``tasks`` holds the task, else what the
    sample names (its ``fn``, else its task id).
    """
    tests = TestsReport(
        outcomes=(), gate=None, claim="none", latency_ms=0.0, infra_error=message[:MAX_TEXT]
    )
    known = tasks.get(sample.task) if tasks is not None else None
    fn = known.fn if known is not None else sample.fn or sample.task
    verdict = Verdict("needs_review", "infra_error")
    return Grade(sample.id, fn, verdict, tests, task=sample.task)


def infra_row(
    sample: Sample, message: str, tasks: Mapping[str, Task] | None = None
) -> dict[str, Any]:
    """The row of :func:`infra_grade`."""
    return infra_grade(sample, message, tasks).to_row()
