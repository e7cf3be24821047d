"""The patch gate's records: what to gate (:class:`GateSpec`) and what was found (:class:`GateRow`).

:meth:`GateRow.to_row` is the one place a ``gate.jsonl`` row is written. Every
part is a frozen record with closed vocabularies; a row names tests by their
node ids (the repository's own, not hidden data) and carries no test output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, get_args

from gradebox.grade import Json
from gradebox.patches.applier import ApplyStrategy
from gradebox.patches.tamper import TamperHit
from gradebox.verdict import VerdictName
from static.differential import FilterMode, State, Tagged

if TYPE_CHECKING:  # the judge package loads its client; a gate without a judge never needs it
    from judge import JudgeResult

__all__ = [
    "CATEGORIES",
    "MAX_FINDINGS",
    "MAX_LISTED",
    "ApplyReport",
    "Category",
    "DiffFile",
    "DiffSize",
    "GateReason",
    "GateRow",
    "GateSpec",
    "ProtectMode",
    "StaticPart",
    "TestIds",
    "TestsPart",
]

Category = Literal[
    "F2P", "P2P", "F2F", "P2F", "S2P", "N2P",
    "S2F", "N2F", "P2S", "F2S", "S2S", "N2S", "not_run",
]  # fmt: skip
"""A test's base-to-head transition: Pass, Fail, Skip, N = absent at base; ``not_run``
= no result at head."""
CATEGORIES: tuple[Category, ...] = get_args(Category)
MAX_LISTED = 200
"""Most test ids a row lists per category (``category_counts`` has the full numbers)."""
MAX_FINDINGS = 500
"""Most static findings a row lists per state (``counts`` has the full numbers)."""

GateReason = Literal[
    "ok",
    "empty_patch",
    "patch_refused",
    "apply_failed",
    "patch_touches_tests",
    "build_failed",
    "tests_timeout",
    "tests_unreliable",
    "fail_to_pass",
    "pass_to_pass",
    "new_tests",
    "policy:static",
    "tamper_risk",
    "static_unavailable",
    "infra_error",
    "not_run",
]
"""Why a gate decided as it did: the first thing that decided it, in gate order
(``not_run``: the service did not run it, e.g. its token was revoked while it was queued;
``build_failed``: base's build backend builds base but not the tree after the patch)."""

ProtectMode = Literal["fail", "strip"]
"""A patch touching protected paths fails, or those files are dropped and the rest graded."""


@dataclass(frozen=True, slots=True)
class TestIds:
    """The deciding tests of a gate."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    fail_to_pass: tuple[str, ...]
    """Node ids that must pass at head."""
    pass_to_pass: tuple[str, ...] | Literal["auto"]
    """Node ids that must not regress, or ``auto``: every test passing at base in every base run."""


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One patch to gate."""

    id: str
    """The gate's id (SWE-bench's ``instance_id``)."""
    repo: Path
    """A local git repository."""
    base: str
    """The base revision."""
    patch: str | None
    """The candidate's diff (``None`` with ``head``)."""
    tests: TestIds
    """The deciding tests."""
    head: str | None = None
    """A head revision whose diff from ``base`` is the patch."""
    intent: str | None = None
    """The PR text or issue (for the judge; never decides)."""
    test_patch: str | None = None
    """Hidden tests applied after the candidate's patch."""
    lockfile: str | None = None
    """The lockfile's path in the repository (read at base)."""
    protect: tuple[str, ...] | None = None
    """Protected globs (``None``: the defaults)."""
    where: str = ""
    """Where the spec came from (``gates.jsonl:3``), for messages."""
    rules: tuple[tuple[str, str], ...] = ()
    """Where each rule was read from: ``(rule, source)`` pairs, e.g. ``("static_policy",
    "base:<commit>:.gradebox/policy.toml")``, ``("fail_to_pass", "workflow")``; the gate adds
    ``("pytest_config", "base:<commit>:<file>")`` and ``("protect", ...)``."""


@dataclass(frozen=True, slots=True)
class ApplyReport:
    """How the patch went in."""

    strategy: ApplyStrategy | None
    """The ladder's rung that applied it; ``None`` when it did not apply or was refused."""
    detail: str | None = None
    """Why it was refused or did not apply (cut short)."""
    protected: tuple[str, ...] = ()
    """Protected paths the patch touched."""
    stripped: tuple[str, ...] = ()
    """Paths dropped from the patch (``--protect-mode strip``)."""
    restored: tuple[str, ...] = ()
    """Test files the candidate touched, put back from base before the test patch."""
    test_patch: Literal["none", "applied", "failed"] = "none"
    """Whether hidden tests were applied after the candidate."""
    protected_lines: tuple[str, ...] = ()
    """Where the patch changes protected content: ``path:line what`` (at most 20)."""
    added_tests: tuple[str, ...] = ()
    """Test files the patch adds or extends with new tests only (run at head, reported)."""

    def to_json(self) -> dict[str, Json]:
        """The row's ``apply`` object."""
        return {
            "strategy": self.strategy,
            "detail": self.detail,
            "protected": list(self.protected),
            "stripped": list(self.stripped),
            "restored": list(self.restored),
            "test_patch": self.test_patch,
            "protected_lines": list(self.protected_lines),
            "added_tests": list(self.added_tests),
        }


@dataclass(frozen=True, slots=True)
class TestsPart:
    """The deciding tests, by category, and how far the runs can be believed."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    fail_to_pass: dict[str, Category]
    """Each FAIL_TO_PASS id and its category."""
    pass_to_pass: dict[str, Category]
    """Each PASS_TO_PASS id (quarantined ones aside) and its category."""
    by_category: dict[Category, tuple[str, ...]]
    """Every test seen at base or head, by category."""
    quarantined: tuple[str, ...]
    """Tests whose status differed between base runs: listed, never deciding."""
    base_runs: int
    """How many times base ran."""
    head_problems: tuple[str, ...]
    """Why the head run cannot be believed (empty when it can)."""
    head_timed_out: bool
    """The head run hit its wall clock."""
    head_exit_code: int | None
    """pytest's exit code at head."""
    collected: int | None
    """Tests the head's separate collection listed."""
    pass_to_pass_auto: bool
    """PASS_TO_PASS was derived from the base runs."""
    added: dict[str, Category] = field(default_factory=dict)
    """Tests the patch adds (new files, new test functions), run at head: never deciding
    FAIL_TO_PASS or PASS_TO_PASS unless named there, reported beside them."""
    tripwires: Literal["ok", "tripped", "unavailable"] = "unavailable"
    """Tripwire tests (hidden, generated per gate; some must fail) behaved as planted at base
    and head (``ok``), did not (``tripped``: the outcomes cannot be believed), or none ran."""

    @property
    def not_run(self) -> tuple[str, ...]:
        """Deciding ids with no result at head."""
        ids = {**self.fail_to_pass, **self.pass_to_pass}
        return tuple(sorted(i for i, c in ids.items() if c == "not_run"))

    def to_json(self) -> dict[str, Json]:
        """The row's ``tests`` object."""
        return {
            "fail_to_pass": dict(self.fail_to_pass),
            "pass_to_pass": dict(self.pass_to_pass),
            "pass_to_pass_auto": self.pass_to_pass_auto,
            "added": dict(self.added),
            "tripwires": self.tripwires,
            "by_category": {
                c: list(ids[:MAX_LISTED]) for c, ids in self.by_category.items() if ids
            },
            "category_counts": {c: len(ids) for c, ids in self.by_category.items() if ids},
            "quarantined": list(self.quarantined),
            "not_run": list(self.not_run),
            "base_runs": self.base_runs,
            "head": {
                "exit_code": self.head_exit_code,
                "collected": self.collected,
                "timed_out": self.head_timed_out,
                "problems": list(self.head_problems),
            },
        }


@dataclass(frozen=True, slots=True)
class DiffFile:
    """One file's share of the diff."""

    path: str
    """Path at head."""
    kind: Literal["added", "modified", "deleted", "renamed"]
    """What the patch does to it."""
    added: int
    """Added lines."""
    removed: int
    """Removed lines."""
    rewrite_ratio: float | None
    """Share of the larger version not kept verbatim (modified files only)."""


@dataclass(frozen=True, slots=True)
class DiffSize:
    """How big the patch is."""

    files: tuple[DiffFile, ...]
    """Per file."""

    def to_json(self) -> dict[str, Json]:
        """The row's ``diff`` object."""
        return {
            "files": len(self.files),
            "added": sum(f.added for f in self.files),
            "removed": sum(f.removed for f in self.files),
            "per_file": [
                {"path": f.path, "kind": f.kind, "added": f.added, "removed": f.removed,
                 "rewrite_ratio": f.rewrite_ratio}
                for f in self.files
            ],
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class StaticPart:
    """Differential static findings."""

    findings: tuple[Tagged, ...]
    """Every finding, tagged new, unchanged or fixed."""
    counted: tuple[Tagged, ...]
    """The new findings inside the filter mode: the only ones the policy sees."""
    filter_mode: FilterMode
    """The filter mode used."""
    effect: Literal["pass", "review", "fail"]
    """The policy's effect on the counted findings."""
    tool_errors: tuple[str, ...] = ()
    """Layers whose tool failed (``layer: what``)."""

    def to_json(self) -> dict[str, Json]:
        """The row's ``static`` object."""
        counted = {t.fingerprint for t in self.counted}

        def one(t: Tagged) -> dict[str, Json]:
            f = t.finding
            return {"path": t.path, "line": f.line, "layer": f.layer, "rule": f.rule,
                    "severity": f.severity, "message": f.message[:300],
                    "fingerprint": t.fingerprint, "counted": t.fingerprint in counted}  # fmt: skip

        def listed(state: str) -> list[Json]:
            found = [t for t in self.findings if t.state == state]
            return [one(t) for t in found[:MAX_FINDINGS]]

        return {
            "filter_mode": self.filter_mode,
            "effect": self.effect,
            "new": listed("new"),
            "unchanged": listed("unchanged"),
            "fixed": listed("fixed"),
            "counts": {s: sum(t.state == s for t in self.findings) for s in get_args(State)},
            "tool_errors": list(self.tool_errors),
        }


@dataclass(frozen=True, slots=True)
class GateRow:
    """Everything the gate found about one patch, and its verdict."""

    id: str
    """The gate's id."""
    verdict: VerdictName
    """``pass``, ``fail`` or ``needs_review``."""
    reason: GateReason
    """The first thing that decided it."""
    detail: str | None = None
    """A short explanation (cut to 500 characters)."""
    base: str | None = None
    """The base commit."""
    apply: ApplyReport | None = None
    """How the patch went in."""
    tests: TestsPart | None = None
    """The deciding tests."""
    tamper: tuple[TamperHit, ...] = ()
    """Added lines reaching into the test machinery."""
    static: StaticPart | None = None
    """Differential static findings."""
    diff: DiffSize | None = None
    """How big the patch is."""
    infra_error: str | None = None
    """What broke that was not the patch's doing."""
    timing: dict[str, float | str | None] = field(default_factory=dict)
    """``env`` (cached, built, given), ``env_s``, ``total_s``."""
    repo: str | None = None
    """The repository gated (a local path)."""
    judge: JudgeResult | None = None
    """The judge's annotation of the diff against the intent (never decides the verdict)."""
    rules: tuple[tuple[str, str], ...] = ()
    """Where each rule of this gate was read from (see :attr:`GateSpec.rules`)."""

    @property
    def resolved(self) -> bool:
        """SWE-bench's "resolved": the tests alone say the patch works (static and tamper aside).

        Every FAIL_TO_PASS test passes at head, no PASS_TO_PASS test regresses, and
        the head run can be believed. A patch refused, not applied or touching
        the tests is never resolved (its tests never ran).
        """
        t = self.tests
        if t is None or t.head_problems or t.head_timed_out or t.tripwires == "tripped":
            return False
        f2p_ok = all(c in ("F2P", "P2P", "S2P", "N2P") for c in t.fail_to_pass.values())
        return f2p_ok and all(c == "P2P" for c in t.pass_to_pass.values())

    @property
    def empty(self) -> bool:
        """The candidate's patch was empty."""
        return self.reason == "empty_patch"

    def to_row(self) -> dict[str, Json]:
        """The ``gate.jsonl`` row: the one place it is written."""
        return {
            "id": self.id,
            "verdict": self.verdict,
            "reason": self.reason,
            "resolved": self.resolved,
            "detail": None if self.detail is None else self.detail[:500],
            "repo": self.repo,
            "base": self.base,
            "apply": None if self.apply is None else self.apply.to_json(),
            "tests": None if self.tests is None else self.tests.to_json(),
            "tamper": [
                {"path": h.path, "line": h.line, "rule": h.rule, "what": h.what}
                for h in self.tamper
            ],
            "static": None if self.static is None else self.static.to_json(),
            "diff": None if self.diff is None else self.diff.to_json(),
            "infra_error": None if self.infra_error is None else self.infra_error[:500],
            "judge": None if self.judge is None else self.judge.to_row(),
            "timing": dict(self.timing),
            "rules": dict(self.rules),
        }
