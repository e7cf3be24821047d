"""Per-test categories and the patch gate's verdict, decided in one place.

A test's category is its base status and its head status: ``P`` passed, ``F``
failed, ``S`` skipped, ``N`` absent at base (so ``F2P``, ``P2F``, ``N2P``...);
a test with no result at head is ``not_run``, never passed.

``pass`` iff the patch applied, touched nothing protected, the head run can
be believed (its cross-checks agree and its tripwires held), every
FAIL_TO_PASS test is ``*2P``, no PASS_TO_PASS test (quarantined ones aside) is
anything but ``P2P``, no test the gate measured went from passing to failing
(``P2F``, whatever the PASS_TO_PASS list says), and every test the patch adds
passes (or is skipped); and then nothing static or tamper-related says
otherwise. Static findings and tamper risks only make a
pass worse (``fail`` by policy, ``needs_review``), never a failure better.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gradebox.patches.model import Category, GateReason, StaticPart, TestsPart
from gradebox.patches.tamper import TamperHit
from gradebox.patches.testrun import Status
from gradebox.verdict import VerdictName

__all__ = ["categorize", "decide", "quarantine"]

_LETTER = {"passed": "P", "failed": "F", "skipped": "S"}


def categorize(base: Status | None, head: Status | None) -> Category:
    """The category of one test from its base and head status (``None``: absent)."""
    if head is None:
        return "not_run"
    name = ("N" if base is None else _LETTER[base]) + "2" + _LETTER[head]
    return name  # type: ignore[return-value]  # every letter pair is in Category


def quarantine(runs: Sequence[Mapping[str, Status]]) -> tuple[dict[str, Status], tuple[str, ...]]:
    """The stable base statuses, and the tests whose status differed between runs.

    Args:
        runs: The status maps of the base runs (at least one).

    Returns:
        ``(status of every test that ran the same way in every run, flaky ids)``.
    """
    ids = sorted({i for run in runs for i in run})
    stable: dict[str, Status] = {}
    flaky = []
    for i in ids:
        seen = {run.get(i) for run in runs}
        if len(seen) == 1 and None not in seen:
            stable[i] = runs[0][i]
        else:
            flaky.append(i)
    return stable, tuple(flaky)


def decide(
    tests: TestsPart, static: StaticPart | None, tamper: Sequence[TamperHit]
) -> tuple[VerdictName, GateReason, str | None]:
    """The verdict of a patch that applied and whose tests ran.

    Args:
        tests: The deciding tests by category.
        static: The differential static findings (``None`` when not run).
        tamper: Tamper risks on added lines.

    Returns:
        ``(verdict, reason, detail)``.
    """
    if tests.head_timed_out:
        return "fail", "tests_timeout", tests.head_problems[0] if tests.head_problems else None
    if tests.head_problems:
        return "needs_review", "tests_unreliable", "; ".join(tests.head_problems)
    if tests.tripwires == "tripped":
        why = "planted tests that must fail did not fail at head: the outcomes cannot be believed"
        return "needs_review", "tests_unreliable", why
    bad = _not_passing(tests.fail_to_pass, ok=("F2P", "P2P", "S2P", "N2P"))
    if bad:
        return "fail", "fail_to_pass", _listed(bad)
    regressed = _not_passing(tests.pass_to_pass, ok=("P2P",))
    measured = {i: "P2F" for i in tests.by_category.get("P2F", ()) if i not in tests.quarantined}
    regressed = {**regressed, **measured}  # type: ignore[dict-item]  # a Category
    if regressed:
        return "fail", "pass_to_pass", _listed(regressed)
    broken = _not_passing(tests.added, ok=("N2P", "P2P", "F2P", "S2P", "N2S"))
    if broken:
        return "fail", "new_tests", _listed(broken)
    if static is not None and static.effect == "fail":
        rules = sorted({t.finding.rule for t in static.counted})
        return "fail", "policy:static", "new findings: " + ", ".join(rules)
    if tamper:
        spots = ", ".join(f"{h.path}:{h.line} {h.what}" for h in tamper[:5])
        return "needs_review", "tamper_risk", spots
    if static is not None and static.tool_errors:
        return "needs_review", "static_unavailable", "; ".join(static.tool_errors)
    if static is not None and static.effect == "review":
        return "needs_review", "policy:static", None
    return "pass", "ok", None


def _not_passing(ids: Mapping[str, Category], *, ok: tuple[Category, ...]) -> dict[str, Category]:
    return {i: c for i, c in ids.items() if c not in ok}


def _listed(ids: Mapping[str, Category]) -> str:
    shown = [f"{i} ({c})" for i, c in sorted(ids.items())[:10]]
    more = len(ids) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
