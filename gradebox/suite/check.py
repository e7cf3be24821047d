"""``check_suite``: is each task's hidden suite trustworthy?

For every task, in the sandbox (never in this process):

1. the reference runs through the whole suite ``runs`` times, each a fresh
   process; a case whose outcome varies is flaky (SC003), a case it always
   fails is broken (SC002);
2. every naive stub (:mod:`gradebox.suite.stubs`) runs through the whole
   suite and must fail at least one case (SC004);
3. every mutant of the reference (:mod:`gradebox.suite.mutants`) runs through
   the *trusted* cases (those the reference passed in every run), each case
   limited to ``max(mutant_floor_s, mutant_factor x`` the reference's time``)``
   so a mutant that loops costs little; the mutation score is
   killed / (killed + survived), and survivors are findings (SC005). Mutants
   are not run when the reference is flaky: a nondeterministic oracle cannot
   judge them.

Coverage of the input space and prompt leaks are read from the files alone.
Each (code, task) pair is one :meth:`Sandbox.run` over all its cases; the runs
go through a pool of ``workers`` threads.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from gradebox.model import Task
from gradebox.suite.batch import Job, outcomes_of, run_jobs
from gradebox.suite.coverage import assess_coverage
from gradebox.suite.leaks import Leak, find_leaks
from gradebox.suite.mutants import Mutant, make_mutants
from gradebox.suite.references import Reference
from gradebox.suite.report import (
    FailingCase,
    Finding,
    FlakyCase,
    MutantResult,
    MutantStatus,
    MutationReport,
    ReferenceCheck,
    Severity,
    StubResult,
    SuiteReport,
    TaskReport,
)
from gradebox.suite.signature import Signature, parse_signature
from gradebox.suite.stubs import Stub, make_stubs
from sandbox.runner import Sandbox
from sandbox.types import CaseOutcome, HiddenCase, PublicTask, RunResult

__all__ = ["check_suite"]

#: Outcomes that do not kill a mutant by themselves.
_SPARED: frozenset[CaseOutcome] = frozenset({"ok", "not_run"})


@dataclass(frozen=True, slots=True)
class _Options:
    runs: int
    workers: int
    max_mutants: int
    min_mutation_score: float
    fail_on_leaks: bool
    mutant_floor_s: float
    mutant_factor: float


@dataclass(frozen=True, slots=True)
class _Plan:
    """What to run for one task once its reference has been checked."""

    task: Task
    public: PublicTask | None
    reference: Reference | None
    signature: Signature
    check: ReferenceCheck | None
    stubs: tuple[Stub, ...]
    mutants: tuple[Mutant, ...]
    mutant_cases: tuple[HiddenCase, ...]
    skipped: str | None
    infra_errors: int


def check_suite(
    tasks: Mapping[str, Task],
    public: Mapping[str, PublicTask],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    *,
    runs: int = 20,
    workers: int = 2,
    max_mutants: int = 60,
    min_mutation_score: float = 1.0,
    fail_on_leaks: bool = False,
    mutant_floor_s: float = 0.5,
    mutant_factor: float = 10.0,
) -> SuiteReport:
    """Check every task's hidden suite; see the module docstring.

    Args:
        tasks: Tasks by id with their hidden cases (``Task.public`` is used
            when ``public`` has no entry for the task).
        public: Public descriptions by task id (signatures, examples, specs).
        references: Reference solutions by task id; a task without one gets SC001.
        sandbox: An open sandbox; every piece of code runs there.
        runs: How many times the reference runs through each suite.
        workers: Sandbox runs in flight at once.
        max_mutants: Most mutants per task (selected deterministically).
        min_mutation_score: A task whose score is below this fails (SC005 is
            ``fail``); at or above it, survivors are ``warn``.
        fail_on_leaks: Make prompt leaks (SC006) ``fail`` instead of ``warn``.
        mutant_floor_s: Smallest per-case time limit for mutants.
        mutant_factor: A mutant's per-case limit is this times the reference's
            longest time on the case (at least ``mutant_floor_s``).

    Returns:
        The report; ``report.trustworthy`` is the verdict.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    opts = _Options(
        runs, workers, max_mutants, min_mutation_score, fail_on_leaks, mutant_floor_s, mutant_factor
    )
    t0 = time.monotonic()
    ref_results = _run_references(tasks, references, sandbox, opts)
    plans = [
        _plan(task, public.get(fn) or task.public, references.get(fn), ref_results.get(fn), opts)
        for fn, task in tasks.items()
    ]
    jobs = [job for plan in plans for job in _jobs(plan, sandbox)]
    results = iter(run_jobs(sandbox, jobs, workers=workers))
    reports = [_report(plan, results, opts) for plan in plans]
    settings = {
        "runs": runs,
        "workers": workers,
        "max_mutants": max_mutants,
        "min_mutation_score": min_mutation_score,
        "fail_on_leaks": fail_on_leaks,
        "mutant_floor_s": mutant_floor_s,
        "mutant_factor": mutant_factor,
        "backend": sandbox.backend,
    }
    return SuiteReport(tuple(reports), time.monotonic() - t0, settings)


# ------------------------------------------------------------------ reference


def _run_references(
    tasks: Mapping[str, Task], references: Mapping[str, Reference], sandbox: Sandbox, o: _Options
) -> dict[str, list[RunResult]]:
    keyed = [
        (tid, Job(references[tid].code, task.fn, task.cases))
        for tid, task in tasks.items()
        if tid in references
        for _ in range(o.runs)
    ]
    results = run_jobs(sandbox, [job for _, job in keyed], workers=o.workers)
    by_task: dict[str, list[RunResult]] = {}  # by task id (tasks may share an entry point)
    for (tid, _), result in zip(keyed, results, strict=True):
        by_task.setdefault(tid, []).append(result)
    return by_task


def _reference_check(cases: Sequence[HiddenCase], results: Sequence[RunResult]) -> ReferenceCheck:
    good = [r for r in results if not r.infra_error]
    per_case: list[Counter[CaseOutcome]] = [Counter() for _ in cases]
    longest: list[float | None] = [None] * len(cases)
    for run in good:
        for i, (outcome, obs) in enumerate(
            zip(outcomes_of(cases, run), run.observations, strict=True)
        ):
            per_case[i][outcome] += 1
            if obs.status in ("returned", "raised"):
                longest[i] = max(longest[i] or 0.0, obs.duration_s)
    flaky, failing, trusted = [], [], []
    for i, (case, seen) in enumerate(zip(cases, per_case, strict=True)):
        if len(seen) > 1:
            flaky.append(FlakyCase(i, case.line, tuple(seen.most_common())))
        elif seen and "ok" not in seen:
            failing.append(FailingCase(i, case.line, next(iter(seen))))
        elif seen:
            trusted.append(i)
    return ReferenceCheck(len(good), tuple(flaky), tuple(failing), tuple(trusted), tuple(longest))


# ----------------------------------------------------------------- planning


def _plan(
    task: Task,
    public: PublicTask | None,
    reference: Reference | None,
    results: list[RunResult] | None,
    o: _Options,
) -> _Plan:
    signature = parse_signature(
        task.fn, public.signature if public else None, reference.code if reference else None
    )
    stubs = tuple(make_stubs(task.fn, signature, task.cases))
    check = _reference_check(task.cases, results) if results is not None else None
    infra = sum(bool(r.infra_error) for r in results or [])
    skipped = _mutation_skip_reason(reference, check)
    mutants: tuple[Mutant, ...] = ()
    mutant_cases: tuple[HiddenCase, ...] = ()
    if skipped is None and reference is not None and check is not None:
        # Only the task's own function and what it uses: a reference file may hold other
        # tasks' functions, whose mutants this task's cases have no reason to kill.
        mutants = tuple(make_mutants(reference.code, cap=o.max_mutants, fn=task.fn))
        mutant_cases = tuple(_limited(task.cases, check, o))
        if not mutants:
            skipped = "the mutator found nothing to mutate"
    return _Plan(
        task, public, reference, signature, check, stubs, mutants, mutant_cases, skipped, infra
    )


def _mutation_skip_reason(reference: Reference | None, check: ReferenceCheck | None) -> str | None:
    if reference is None or check is None:
        return "no reference (SC001)"
    if check.runs == 0:
        return "the reference could not be run (infrastructure errors)"
    if check.flaky:
        return "the reference is not deterministic (SC003): it cannot judge mutants"
    if not check.trusted:
        return "the reference passes no case (SC002)"
    return None


def _limited(cases: Sequence[HiddenCase], check: ReferenceCheck, o: _Options) -> list[HiddenCase]:
    """The trusted cases, each limited relative to the reference's time on it."""
    out = []
    for i in check.trusted:
        measured = check.max_duration_s[i] or 0.0
        out.append(replace(cases[i], timeout_s=max(o.mutant_floor_s, o.mutant_factor * measured)))
    return out


def _jobs(plan: _Plan, sandbox: Sandbox) -> list[Job]:
    fn = plan.task.fn
    jobs = [Job(stub.code, fn, plan.task.cases) for stub in plan.stubs]
    equivalent = set(plan.reference.equivalent_mutants) if plan.reference else set()
    jobs += [
        Job(m.code, fn, plan.mutant_cases, sandbox.limits)
        for m in plan.mutants
        if m.id not in equivalent
    ]
    return jobs


# ------------------------------------------------------------------- results


def _report(plan: _Plan, it: Iterator[RunResult], o: _Options) -> TaskReport:
    cases = plan.task.cases
    infra = plan.infra_errors
    stub_results = []
    for stub in plan.stubs:
        run = next(it)
        infra += bool(run.infra_error)
        outcomes = outcomes_of(cases, run)
        passed = tuple(i for i, out in enumerate(outcomes) if out == "ok")
        survived = not run.infra_error and len(passed) == len(cases)
        stub_results.append(StubResult(stub, passed, survived))
    mutation, mutant_infra = _mutation(plan, it)
    infra += mutant_infra
    leaks = tuple(find_leaks(plan.task.fn, cases, plan.public))
    findings = _findings(plan, tuple(stub_results), mutation, leaks, o)
    return TaskReport(
        fn=plan.task.id,
        cases=len(cases),
        reference=plan.check,
        stubs=tuple(stub_results),
        mutation=mutation,
        coverage=assess_coverage(cases, plan.signature),
        leaks=leaks,
        findings=findings,
        infra_errors=infra,
    )


def _mutation(plan: _Plan, it: Iterator[RunResult]) -> tuple[MutationReport, int]:
    if plan.skipped is not None:
        return MutationReport(skipped=plan.skipped), 0
    equivalent = set(plan.reference.equivalent_mutants) if plan.reference else set()
    trusted = plan.check.trusted if plan.check else ()
    results, infra = [], 0
    for mutant in plan.mutants:
        if mutant.id in equivalent:
            results.append(MutantResult(mutant, "equivalent"))
            continue
        run = next(it)
        if run.infra_error:
            infra += 1
            continue
        outcomes = outcomes_of(plan.mutant_cases, run)
        # After a timeout the rest are not_run: the timeout is what killed it.
        killed_by = tuple(trusted[k] for k, out in enumerate(outcomes) if out not in _SPARED)
        status: MutantStatus = "killed" if killed_by else "survived"
        results.append(MutantResult(mutant, status, killed_by))
    return MutationReport(tuple(results)), infra


def _findings(
    plan: _Plan,
    stubs: tuple[StubResult, ...],
    mutation: MutationReport,
    leaks: tuple[Leak, ...],
    o: _Options,
) -> tuple[Finding, ...]:
    fn = plan.task.id  # findings name the task by its id
    found: list[Finding] = []
    if plan.reference is None:
        found.append(
            Finding(
                "SC001", "fail", fn, f"no reference for {fn!r}: determinism and mutants unchecked"
            )
        )
    if plan.check is not None:
        found += _reference_findings(fn, plan.check)
    for s in stubs:
        if s.survived:
            message = f"stub {s.stub.id!r} ({s.stub.description}) passes every case"
            found.append(Finding("SC004", "fail", fn, message, s.passed, s.stub.code))
    found += _mutant_findings(fn, plan, mutation, o)
    severity: Severity = "fail" if o.fail_on_leaks else "warn"
    for leak in leaks:
        where = f"public example {leak.example}" if leak.where == "example" else "the spec text"
        message = f"case {leak.case} (line {leak.line}) appears in {where}"
        found.append(Finding("SC006", severity, fn, message, (leak.case,)))
    return tuple(found)


def _reference_findings(fn: str, check: ReferenceCheck) -> list[Finding]:
    found = []
    for f in check.failing:
        message = (
            f"the reference fails case {f.case} (line {f.line}) in every run ({f.outcome}); "
            "fix the case or the reference"
        )
        found.append(Finding("SC002", "fail", fn, message, (f.case,)))
    for flaky in check.flaky:
        seen = ", ".join(f"{outcome} x{n}" for outcome, n in flaky.outcomes)
        message = (
            f"case {flaky.case} (line {flaky.line}) is flaky for the reference over "
            f"{check.runs} runs: {seen}"
        )
        found.append(Finding("SC003", "fail", fn, message, (flaky.case,)))
    return found


def _mutant_findings(fn: str, plan: _Plan, mutation: MutationReport, o: _Options) -> list[Finding]:
    found = []
    score = mutation.score
    severity: Severity = "fail" if score is not None and score < o.min_mutation_score else "warn"
    for r in mutation.survived:
        message = f"mutant {r.mutant.id} survives: {r.mutant.description} (line {r.mutant.line})"
        found.append(Finding("SC005", severity, fn, message, (), r.mutant.diff))
    generated = {m.id for m in plan.mutants}
    for stale in plan.reference.equivalent_mutants if plan.reference else ():
        if stale not in generated:
            message = (
                f"mutant {stale} is declared equivalent but was not generated "
                f"(did the reference change, or is the cap of {o.max_mutants} lower?)"
            )
            found.append(Finding("SC007", "warn", fn, message))
    return found
