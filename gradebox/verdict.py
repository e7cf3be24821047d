"""The verdict, decided in one place.

``pass`` means every hidden case was ``ok``, the gate did not fire, the process
ended in time, and any O(1) claim survived. Nothing else can make a ``pass``:
static findings and the judge may only downgrade a pass to ``needs_review`` or
a configured policy ``fail``; they never turn a failure into a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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


def decide(
    *,
    infra_error: bool,
    contract_ok: bool,
    syntax_ok: bool,
    banned: Sequence[str],
    claim: str,
    outcomes: Sequence[str],
    static_fail: bool = False,
    static_review: bool = False,
    static_infra_error: bool = False,
    judge_mismatch: bool = False,
    judge_unscored: bool = False,
) -> Verdict:
    """Decide the verdict from every layer's result.

    Args:
        infra_error: The grader or sandbox failed (not the candidate's fault).
        contract_ok: Extraction found exactly the code the task asks for.
        syntax_ok: The code compiles.
        banned: Banned imports the gate found.
        claim: ``none``, ``held``, ``false`` or ``unchecked``.
        outcomes: One outcome per hidden case.
        static_fail: The static policy says this sample fails.
        static_review: Static findings ask for a human look.
        static_infra_error: A static tool failed on this sample: a pass cannot be
            confirmed, so it needs review (a failure stays a failure).
        judge_mismatch: The judge found the implementation does not match intent.
        judge_unscored: The judge's reply broke protocol.

    Returns:
        The verdict; ``pass`` requires every hidden case ``ok``.
    """
    if infra_error:
        return Verdict("needs_review", "infra_error")
    if not contract_ok:
        return Verdict("fail", "contract")
    if not syntax_ok:
        return Verdict("fail", "gate:syntax")
    if banned:
        return Verdict("fail", "gate:banned_import")
    if claim == "false":
        return Verdict("fail", "claim_false")
    if not outcomes or any(o != "ok" for o in outcomes):
        return Verdict("fail", "hidden_tests")
    if static_fail:
        return Verdict("fail", "policy:static")
    if static_infra_error:
        return Verdict("needs_review", "infra_error")
    if judge_mismatch:
        return Verdict("needs_review", "judge:mismatch")
    if judge_unscored:
        return Verdict("needs_review", "judge:unscored")
    if static_review:
        return Verdict("needs_review", "policy:static")
    return Verdict("pass", "ok")
