"""Typed records of a suite check, and their JSON form.

Findings carry stable codes (documented in ``gradebox/suite/FINDINGS.md``):

=====  ==================  ========  ===============================================
SC001  missing-reference   fail      no reference: determinism and mutants unchecked
SC002  reference-fails     fail      the reference fails a case in every run
SC003  flaky-case          fail      a case's outcome for the reference varies
SC004  stub-passes         fail      a naive stub passes every case
SC005  mutant-survives     fail      a mutant passes every trusted case (``warn``
                                     while the task's score is at least the minimum)
SC006  prompt-leak         warn      a hidden case appears in the public prompt
                                     (``fail`` when leaks are made fatal)
SC007  stale-equivalent    warn      a mutant declared equivalent was not generated
=====  ==================  ========  ===============================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gradebox.suite.coverage import Coverage
from gradebox.suite.leaks import Leak
from gradebox.suite.mutants import Mutant
from gradebox.suite.stubs import Stub
from sandbox.types import CaseOutcome

__all__ = [
    "CODES",
    "FailingCase",
    "Finding",
    "FlakyCase",
    "MutantResult",
    "MutantStatus",
    "MutationReport",
    "ReferenceCheck",
    "Severity",
    "StubResult",
    "SuiteReport",
    "TaskReport",
]

Severity = Literal["fail", "warn"]
"""``fail`` makes the task's suite untrustworthy; ``warn`` is reported only."""

MutantStatus = Literal["killed", "survived", "equivalent"]
"""What became of one mutant."""

CODES: dict[str, str] = {
    "SC001": "missing-reference",
    "SC002": "reference-fails",
    "SC003": "flaky-case",
    "SC004": "stub-passes",
    "SC005": "mutant-survives",
    "SC006": "prompt-leak",
    "SC007": "stale-equivalent",
}
"""Finding code to name; codes are never renumbered."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem with a task's suite."""

    code: str
    """Stable code, e.g. ``SC004``."""
    severity: Severity
    """``fail`` or ``warn``."""
    fn: str
    """The task."""
    message: str
    """One line saying what is wrong."""
    cases: tuple[int, ...] = ()
    """Indices (within the task) of the cases concerned."""
    detail: str = ""
    """More: a stub's code, a mutant's diff."""

    @property
    def name(self) -> str:
        """The code's readable name, e.g. ``stub-passes``."""
        return CODES[self.code]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "fn": self.fn,
            "message": self.message,
            "cases": list(self.cases),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class FlakyCase:
    """A case whose outcome for the reference varied between runs."""

    case: int
    """Index within the task."""
    line: int
    """Line in the hidden file."""
    outcomes: tuple[tuple[CaseOutcome, int], ...]
    """Each outcome seen, with how many runs saw it (most frequent first)."""


@dataclass(frozen=True, slots=True)
class FailingCase:
    """A case the reference failed in every run."""

    case: int
    """Index within the task."""
    line: int
    """Line in the hidden file."""
    outcome: CaseOutcome
    """The outcome every run saw."""


@dataclass(frozen=True, slots=True)
class ReferenceCheck:
    """The reference run through the suite several times."""

    runs: int
    """How many runs (each a fresh process)."""
    flaky: tuple[FlakyCase, ...]
    """Cases whose outcome varied."""
    failing: tuple[FailingCase, ...]
    """Cases the reference failed every time."""
    trusted: tuple[int, ...]
    """Cases the reference passed in every run: the ones mutants are judged on."""
    max_duration_s: tuple[float | None, ...]
    """Per case, the longest call seen in the sandbox (None if it never returned or raised)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "runs": self.runs,
            "flaky": [
                {"case": f.case, "line": f.line, "outcomes": dict(f.outcomes)} for f in self.flaky
            ],
            "failing": [
                {"case": f.case, "line": f.line, "outcome": f.outcome} for f in self.failing
            ],
            "trusted": list(self.trusted),
            "max_duration_s": list(self.max_duration_s),
        }


@dataclass(frozen=True, slots=True)
class StubResult:
    """One naive stub run through the suite."""

    stub: Stub
    """The stub."""
    passed: tuple[int, ...]
    """Cases it passed."""
    survived: bool
    """It passed every case: the suite cannot tell it from a solution."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.stub.id,
            "description": self.stub.description,
            "passed": list(self.passed),
            "survived": self.survived,
        }


@dataclass(frozen=True, slots=True)
class MutantResult:
    """One mutant run through the trusted cases."""

    mutant: Mutant
    """The mutant."""
    status: MutantStatus
    """``killed``, ``survived``, or ``equivalent`` (declared by a person; not run)."""
    killed_by: tuple[int, ...] = ()
    """Cases it failed."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.mutant.id,
            "kind": self.mutant.kind,
            "line": self.mutant.line,
            "description": self.mutant.description,
            "status": self.status,
            "killed_by": list(self.killed_by),
            "diff": self.mutant.diff if self.status == "survived" else "",
        }


@dataclass(frozen=True, slots=True)
class MutationReport:
    """Mutation analysis of one task."""

    results: tuple[MutantResult, ...] = ()
    """Every mutant, in source order."""
    skipped: str | None = None
    """Why no mutant was run, if none was."""

    @property
    def killed(self) -> int:
        """Mutants killed."""
        return sum(r.status == "killed" for r in self.results)

    @property
    def survived(self) -> tuple[MutantResult, ...]:
        """Mutants that passed every trusted case."""
        return tuple(r for r in self.results if r.status == "survived")

    @property
    def score(self) -> float | None:
        """Killed / (killed + survived); None when nothing was run."""
        judged = self.killed + len(self.survived)
        return self.killed / judged if judged else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "score": self.score,
            "killed": self.killed,
            "survived": len(self.survived),
            "equivalent": sum(r.status == "equivalent" for r in self.results),
            "skipped": self.skipped,
            "mutants": [r.to_json() for r in self.results],
        }


@dataclass(frozen=True, slots=True)
class TaskReport:
    """Everything checked about one task's suite."""

    fn: str
    """The task."""
    cases: int
    """How many hidden cases it has."""
    reference: ReferenceCheck | None
    """The reference's runs; None without a reference."""
    stubs: tuple[StubResult, ...]
    """The naive stubs."""
    mutation: MutationReport
    """The mutants."""
    coverage: Coverage
    """Input-space coverage."""
    leaks: tuple[Leak, ...]
    """Hidden cases found in the public prompt."""
    findings: tuple[Finding, ...]
    """Every finding, fail and warn."""
    infra_errors: int = 0
    """Sandbox runs that failed for reasons not the code's (the check is incomplete)."""

    @property
    def trustworthy(self) -> bool:
        """No ``fail`` finding and no infrastructure error."""
        return self.infra_errors == 0 and not any(f.severity == "fail" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "fn": self.fn,
            "trustworthy": self.trustworthy,
            "cases": self.cases,
            "reference": self.reference.to_json() if self.reference else None,
            "stubs": [s.to_json() for s in self.stubs],
            "mutation": self.mutation.to_json(),
            "coverage": self.coverage.to_json(),
            "leaks": [leak.to_json() for leak in self.leaks],
            "findings": [f.to_json() for f in self.findings],
            "infra_errors": self.infra_errors,
        }


@dataclass(frozen=True, slots=True)
class SuiteReport:
    """The result of :func:`gradebox.suite.check_suite`."""

    tasks: tuple[TaskReport, ...]
    """One report per task, in hidden-file order."""
    seconds: float
    """Wall time of the check."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The options the check ran with (runs, caps, thresholds, backend)."""

    @property
    def trustworthy(self) -> bool:
        """Every task's suite is trustworthy."""
        return all(t.trustworthy for t in self.tasks)

    @property
    def infra_errors(self) -> int:
        """Sandbox runs that failed for reasons not the code's, over all tasks."""
        return sum(t.infra_errors for t in self.tasks)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding of every task."""
        return tuple(f for t in self.tasks for f in t.findings)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``json.dumps`` accepts it)."""
        return {
            "trustworthy": self.trustworthy,
            "seconds": round(self.seconds, 3),
            "settings": self.settings,
            "infra_errors": self.infra_errors,
            "tasks": [t.to_json() for t in self.tasks],
        }
