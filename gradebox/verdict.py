"""The verdict, decided in one place.

``pass`` means every hidden case was ``ok``, the gate did not fire, the process
ended in time, and any O(1) claim survived. Nothing else can make a ``pass``:
static findings and the judge may only downgrade a pass to ``needs_review`` or
a configured policy ``fail``; they never turn a failure into a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the record imports this module for Verdict
    from gradebox.grade import StaticReport, TestsReport
    from judge import JudgeResult

__all__ = ["Reason", "Verdict", "VerdictName", "decide"]

VerdictName = Literal["pass", "fail", "needs_review"]
Reason = Literal[
    "ok",
    "hidden_tests",
    "gate:syntax",
    "gate:banned_import",
    "contract",
    "claim_false",
    "policy:static",
    "judge:mismatch",
    "judge:unscored",
    "infra_error",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A sample's verdict and the reason for it."""

    verdict: VerdictName
    """``pass``, ``fail`` or ``needs_review``."""
    reason: Reason
    """Why: the first thing that decided it, in pipeline order."""

    @property
    def passed(self) -> bool:
        """True only for ``pass``."""
        return self.verdict == "pass"


def decide(tests: TestsReport, static: StaticReport | None, judge: JudgeResult | None) -> Verdict:
    """Decide the verdict from every layer's typed result.

    Args:
        tests: Extract, gate and the hidden cases.
        static: The static layers (``None`` when they did not run). A policy
            ``fail`` fails a sample whose tests passed; a tool failure means a
            pass cannot be confirmed (``needs_review``); ``review`` asks for a
            human look.
        judge: The judge (``None`` when it did not run): a mismatch or a reply
            that broke protocol is ``needs_review``, never a pass and never a fail.

    Returns:
        The verdict; ``pass`` requires every hidden case ``ok``.
    """
    gate = tests.gate
    if tests.infra_error is not None or gate is None:
        return Verdict("needs_review", "infra_error")
    if gate.contract != "ok":
        return Verdict("fail", "contract")
    if gate.syntax != "ok":
        return Verdict("fail", "gate:syntax")
    if gate.banned:
        return Verdict("fail", "gate:banned_import")
    if tests.claim == "false":
        return Verdict("fail", "claim_false")
    if not tests.outcomes or any(o != "ok" for o in tests.outcomes):
        return Verdict("fail", "hidden_tests")
    if static is not None and static.effect == "fail":
        return Verdict("fail", "policy:static")
    if static is not None and static.infra_error:
        return Verdict("needs_review", "infra_error")
    if judge is not None and judge.mismatch:
        return Verdict("needs_review", "judge:mismatch")
    if judge is not None and judge.unscored:
        return Verdict("needs_review", "judge:unscored")
    if static is not None and static.effect == "review":
        return Verdict("needs_review", "policy:static")
    return Verdict("pass", "ok")
