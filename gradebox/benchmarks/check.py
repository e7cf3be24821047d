"""The reference check: what each task's reference returns for its converted asserts.

The canonical solutions are benchmark code, so they run in the sandbox like any
candidate. What they return tells where the benchmark's ``==`` is laxer than
gradebox's type-strict compare (:func:`gradebox.benchmarks.build.finish`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from gradebox.benchmarks.build import function_case
from gradebox.benchmarks.records import Draft
from gradebox.errors import SetupError
from sandbox.runner import Sandbox
from sandbox.types import Limits, Observation

__all__ = ["observe_references"]


def _observe(sandbox: Sandbox, draft: Draft, limits: Limits) -> dict[int, Observation]:
    indexes = [
        i
        for i, s in enumerate(draft.statements)
        if s.role == "check" and s.converted is not None and not draft.all_program
    ]
    if not indexes or draft.reference is None:
        return {}
    cases = [function_case(draft, draft.statements[i]) for i in indexes]
    run = sandbox.run(draft.reference, draft.fn, cases, limits)
    if run.infra_error:
        raise SetupError(f"the reference check of {draft.task_id} failed: {run.infra_error}")
    return dict(zip(indexes, run.observations, strict=True))


def observe_references(
    sandbox: Sandbox, drafts: Sequence[Draft], limits: Limits, *, jobs: int = 2
) -> dict[str, dict[int, Observation]]:
    """Run each draft's reference on its converted cases.

    Returns:
        By task id, the observation of each converted statement (by statement index).

    Raises:
        SetupError: The sandbox failed (not a reference's fault).
    """
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs = pool.map(lambda d: _observe(sandbox, d, limits), drafts)
        return {d.task_id: obs for d, obs in zip(drafts, runs, strict=True)}
