"""The graded sample as one frozen, typed record, and its ``results.jsonl`` row.

A :class:`Grade` is built once by the pipeline (:func:`gradebox.pipeline.core.finish`)
from typed parts, one per layer:

* :class:`TestsReport`: extract, gate and the hidden cases (what the sandbox found);
* :class:`StaticReport`: the static layers' findings, metrics and policy effect;
* :class:`judge.JudgeResult`: the judge's annotation;

and its :class:`~gradebox.verdict.Verdict`, decided from those parts alone
(:func:`gradebox.verdict.decide`). :meth:`Grade.to_row` is the one place a row
is written; :meth:`Grade.from_row` reads one back, checking every field, so
``Grade.from_row(row).to_row()`` gives back the same bytes (a golden results
file in the tests holds this).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

from gradebox.pipeline.extract import Contract
from gradebox.verdict import Reason, Verdict, VerdictName
from sandbox.types import CaseOutcome
from static.claims import ClaimStatus
from static.findings import Layer, Severity
from static.policy import Effect

if TYPE_CHECKING:  # the judge package loads its client; a run without a judge never needs it
    from judge import JudgeResult

__all__ = [
    "MAX_TEXT",
    "Cap",
    "GateReport",
    "Grade",
    "Json",
    "StaticFinding",
    "StaticReport",
    "TaskKind",
    "TestsReport",
]

MAX_TEXT = 500
"""Longest free text a row carries (``detail``, ``infra_error``): they can name
the candidate's own identifiers, or come from a worker."""

Json: TypeAlias = bool | int | float | str | list["Json"] | dict[str, "Json"] | None
"""A plain JSON value."""

_FAILED: tuple[CaseOutcome, ...] = ("wrong", "error", "not_raised", "crash", "resource")
Cap = Literal["memory", "processes"]
"""A cap on a candidate's whole process tree."""
TaskKind = Literal["stdio", "program"]
"""A row's ``kind`` when its task is not a function task."""


def _word(value: Any, vocabulary: tuple[str, ...], what: str) -> Any:
    if value not in vocabulary:
        raise ValueError(f"{what}: {value!r} is not one of {', '.join(vocabulary)}")
    return value


def _kind(value: Any) -> TaskKind | None:
    return None if value is None else cast(TaskKind, _word(value, get_args(TaskKind), "kind"))


def _strs(value: Any, what: str) -> tuple[str, ...]:
    if type(value) is not list or not all(type(v) is str for v in value):
        raise ValueError(f"{what} is not a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class GateReport:
    """What the cheap checks before the sandbox found."""

    syntax: Literal["ok", "error"]
    """Whether the extracted code compiles."""
    banned: tuple[str, ...]
    """Banned imports found (a fast reject, not the security boundary)."""
    contract: Contract
    """Whether extraction found exactly the code the task asks for."""

    def to_json(self) -> dict[str, Json]:
        """The row's ``gate`` field."""
        return {"syntax": self.syntax, "banned": list(self.banned), "contract": self.contract}

    @classmethod
    def from_json(cls, value: Any) -> GateReport:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        if type(value) is not dict or set(value) != {"syntax", "banned", "contract"}:
            raise ValueError("gate is not an object with syntax, banned and contract")
        return cls(
            syntax=_word(value["syntax"], ("ok", "error"), "gate.syntax"),
            banned=_strs(value["banned"], "gate.banned"),
            contract=_word(value["contract"], get_args(Contract), "gate.contract"),
        )


@dataclass(frozen=True, slots=True)
class TestsReport:
    """Extract, gate and the hidden cases: the part of a grade only tests decide."""

    __test__ = False  # not a pytest class

    outcomes: tuple[CaseOutcome, ...]
    """One outcome per hidden case, by index (never the case itself)."""
    gate: GateReport | None
    """The gate's findings; ``None`` when the sample was never gated (an infra error)."""
    claim: ClaimStatus
    """The complexity-claim check."""
    latency_ms: float
    """Wall time of extract, gate and sandbox for this sample."""
    infra_error: str | None = None
    """Why the sample could not be graded (the grader's fault, never the candidate's)."""
    detail: str | None = None
    """Why extraction, syntax or the claim check ended as it did."""
    explain: Json = None
    """Arguments, expected and actual values of failed cases (``--explain`` only)."""
    counterexample: Json = None
    """A shrunk failing property-generated case (``--explain`` only)."""
    caps_hit: tuple[Cap, ...] = ()
    """Caps on the whole process tree the candidate ran into (``memory``,
    ``processes``): why a fork bomb timed out, for instance."""
    kind: TaskKind | None = None
    """``program`` when a test program ran in the candidate's process (its outcomes
    are only as trustworthy as that process: see SECURITY.md), ``stdio`` for a
    stdin/stdout task, ``None`` for a function task (the row has no ``kind``)."""

    @property
    def failed(self) -> list[int]:
        """Indexes of cases that failed (wrong, error, not_raised, crash or resource)."""
        return [i for i, o in enumerate(self.outcomes) if o in _FAILED]

    @property
    def timeouts(self) -> list[int]:
        """Indexes of cases that ran out of time."""
        return [i for i, o in enumerate(self.outcomes) if o == "timeout"]


@dataclass(frozen=True, slots=True)
class StaticFinding:
    """One static finding as a row carries it."""

    layer: Layer
    """The layer that found it."""
    rule: str
    """Its stable rule id."""
    severity: Severity
    """How serious it is."""
    line: int
    """1-based line in the extracted code."""
    col: int
    """Column."""
    message: str
    """The tool's short message."""


@dataclass(frozen=True, slots=True)
class StaticReport:
    """The static layers' result for one sample."""

    findings: tuple[StaticFinding, ...]
    """Every finding, sorted by position."""
    metrics: Json
    """Complexity, nesting and coverage figures (``static.metrics``)."""
    diff: Json
    """Diff size against the sample's ``original``, when it has one."""
    effect: Effect
    """What the static policy makes of the findings."""
    deciding: tuple[str, ...]
    """Rule ids of the findings that decided the effect."""
    infra_error: dict[str, str] | None
    """Tool failures by layer (then the static result cannot confirm a pass)."""

    def to_json(self) -> dict[str, Json]:
        """The row's ``static`` field (``counts`` derived from the findings)."""
        layers = Counter(f.layer for f in self.findings)
        severities = Counter(f.severity for f in self.findings)
        errors: Json = dict(self.infra_error) if self.infra_error is not None else None
        return {
            "findings": [
                {
                    "layer": f.layer,
                    "rule": f.rule,
                    "severity": f.severity,
                    "line": f.line,
                    "col": f.col,
                    "message": f.message,
                }
                for f in self.findings
            ],
            "metrics": self.metrics,
            "diff": self.diff,
            "counts": {
                "by_layer": dict(sorted(layers.items())),
                "by_severity": dict(sorted(severities.items())),
            },
            "effect": self.effect,
            "deciding": list(self.deciding),
            "infra_error": errors,
        }

    @classmethod
    def from_json(cls, value: Any) -> StaticReport:
        """Inverse of :meth:`to_json`; raises ``ValueError`` for anything else."""
        keys = {"findings", "metrics", "diff", "counts", "effect", "deciding", "infra_error"}
        if type(value) is not dict or set(value) != keys:
            raise ValueError("static is not an object with the static report's fields")
        findings = []
        for f in value["findings"]:
            if type(f) is not dict or type(f.get("line")) is not int:
                raise ValueError("static.findings holds a malformed finding")
            findings.append(
                StaticFinding(
                    layer=_word(f["layer"], get_args(Layer), "finding.layer"),
                    rule=str(f["rule"]),
                    severity=_word(f["severity"], get_args(Severity), "finding.severity"),
                    line=f["line"],
                    col=int(f["col"]),
                    message=str(f["message"]),
                )
            )
        errors = value["infra_error"]
        if errors is not None and (
            type(errors) is not dict or not all(type(v) is str for v in errors.values())
        ):
            raise ValueError("static.infra_error is not an object of strings")
        return cls(
            findings=tuple(findings),
            metrics=value["metrics"],
            diff=value["diff"],
            effect=_word(value["effect"], get_args(Effect), "static.effect"),
            deciding=_strs(value["deciding"], "static.deciding"),
            infra_error=errors,
        )


@dataclass(frozen=True, slots=True)
class Grade:
    """One graded sample: every layer's typed result and the verdict decided from them."""

    id: str
    """The sample's id."""
    fn: str
    """The entry point of the task it answers."""
    verdict: Verdict
    """``pass``, ``fail`` or ``needs_review``, and why."""
    tests: TestsReport
    """Extract, gate and hidden cases."""
    static: StaticReport | None = None
    """The static layers (``None`` when they did not run)."""
    judge: JudgeResult | None = None
    """The judge (``None`` when it did not run)."""
    task: str = ""
    """The id of the task it answers; left empty, it is ``fn`` (rows from before task ids)."""

    def __post_init__(self) -> None:
        """Fill in the task id of a grade that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)

    @property
    def passed(self) -> bool:
        """True only for a ``pass`` verdict."""
        return self.verdict.passed

    @property
    def infra(self) -> bool:
        """The grader, not the candidate, failed: the sample has no real verdict."""
        return bool(self.tests.infra_error) or self.verdict.reason == "infra_error"

    def to_row(self) -> dict[str, Json]:
        """The ``results.jsonl`` row (field order is part of the format)."""
        t = self.tests
        row: dict[str, Json] = {
            "id": self.id,
            "task": self.task,
            "fn": self.fn,
            "pass": self.verdict.passed,
            "verdict": self.verdict.verdict,
            "reason": self.verdict.reason,
            "failed": cast(Json, t.failed),
            "timeouts": cast(Json, t.timeouts),
            "outcomes": list(t.outcomes),
            "gate": t.gate.to_json() if t.gate is not None else None,
            "claim": t.claim,
            "latency_ms": t.latency_ms,
            "infra_error": t.infra_error,
            "static": self.static.to_json() if self.static is not None else None,
            "judge": cast(Json, self.judge.to_row()) if self.judge is not None else None,
        }
        if t.detail is not None:
            row["detail"] = t.detail
        if t.explain is not None:
            row["explain"] = t.explain
        if t.counterexample is not None:
            row["counterexample"] = t.counterexample
        if t.caps_hit:
            row["caps_hit"] = list(t.caps_hit)
        if t.kind is not None:
            row["kind"] = t.kind
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Grade:
        """Read a row :meth:`to_row` wrote, checking every field.

        Raises:
            ValueError: A field is missing, of the wrong type or out of vocabulary.
        """
        try:
            outcomes = tuple(
                _word(o, get_args(CaseOutcome), "outcomes") for o in _strs(row["outcomes"], "o")
            )
            tests = TestsReport(
                outcomes=outcomes,
                gate=GateReport.from_json(row["gate"]) if row["gate"] is not None else None,
                claim=_word(row["claim"], get_args(ClaimStatus), "claim"),
                latency_ms=float(row["latency_ms"]),
                infra_error=_opt_str(row["infra_error"], "infra_error"),
                detail=_opt_str(row.get("detail"), "detail"),
                explain=row.get("explain"),
                counterexample=row.get("counterexample"),
                caps_hit=tuple(
                    _word(c, get_args(Cap), "caps_hit") for c in _strs(row.get("caps_hit", []), "c")
                ),
                kind=_kind(row.get("kind")),
            )
            verdict = Verdict(
                _word(row["verdict"], get_args(VerdictName), "verdict"),
                _word(row["reason"], get_args(Reason), "reason"),
            )
            static = StaticReport.from_json(row["static"]) if row["static"] is not None else None
            judge = None
            if row["judge"] is not None:
                from judge.types import JudgeResult  # noqa: PLC0415 - see TYPE_CHECKING above

                judge = JudgeResult.from_row(row["judge"])
            task = row.get("task", row["fn"])
            if type(task) is not str or not task:
                raise ValueError("task is not a non-empty string")
            grade = cls(str(row["id"]), str(row["fn"]), verdict, tests, static, judge, task)
        except KeyError as exc:
            raise ValueError(f"row has no field {exc.args[0]!r}") from exc
        if row["pass"] is not grade.passed or row["failed"] != tests.failed:
            raise ValueError("row's pass or failed contradicts its verdict or outcomes")
        if row["timeouts"] != tests.timeouts:
            raise ValueError("row's timeouts contradict its outcomes")
        return grade


def _opt_str(value: Any, what: str) -> str | None:
    if value is not None and type(value) is not str:
        raise ValueError(f"{what} is not a string")
    return value
