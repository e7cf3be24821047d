"""Grade-time use of a reference: derived time limits and property-generated cases.

``gradebox grade --reference R`` measures each reference on this machine and
gives every case the limit max(floor, factor x the reference's time);
``--properties Q`` (with a reference) draws seeded inputs and appends them as
extra hidden cases whose expected values come from the reference, run in the
sandbox. Both are recorded for the run's summary and manifest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradebox.errors import BadInput
from gradebox.runs.inputs import RunInputs
from sandbox.runner import Sandbox
from sandbox.types import HiddenCase, Limits

__all__ = ["prepare_tasks"]


def prepare_tasks(
    inputs: RunInputs,
    sandbox: Sandbox,
    limits: Limits,
    *,
    reference: Path | None,
    properties: Path | None,
    seed: int | None,
    jobs: int,
) -> tuple[RunInputs, dict[str, Any]]:
    """Apply reference-derived limits and property cases to the run's tasks.

    Returns:
        The inputs with their tasks replaced, and a record for the summary.

    Raises:
        BadInput: A bad reference or properties file, or properties without a reference.
    """
    record: dict[str, Any] = {
        "limits": {"source": "default", "case_timeout_s": limits.case_timeout_s}
    }
    if reference is None:
        if properties is not None:
            raise BadInput(["--properties needs --reference: expected values come from it"])
        return inputs, record
    from gradebox.suite.grow import extend_tasks  # noqa: PLC0415 - only with a reference
    from gradebox.suite.limits import plan_limits  # noqa: PLC0415
    from gradebox.suite.references import load_references  # noqa: PLC0415

    refs = load_references(reference)
    tasks = dict(inputs.tasks)
    if properties is not None:
        from gradebox.suite.properties import (  # noqa: PLC0415 - imports Hypothesis
            generate_property_cases,
            load_properties,
        )

        fixed = {fn: len(t.cases) for fn, t in tasks.items()}
        gen = generate_property_cases(
            load_properties(properties), refs, sandbox, seed=seed, workers=jobs
        )
        tasks = extend_tasks(tasks, gen.cases)
        record["properties"] = gen.record
        record["shrink"] = _shrinker(gen, refs, sandbox, fixed, tasks)
    plan = plan_limits(tasks, refs, sandbox, default=limits, workers=jobs)
    record["limits"] = plan.to_json()
    return dataclasses.replace(inputs, tasks=plan.apply(tasks)), record


def _shrinker(
    gen: Any, refs: Any, sandbox: Sandbox, fixed: dict[str, int], tasks: dict[str, Any]
) -> Callable[[str, str, int], HiddenCase | None]:
    """``(fn, code, case index) -> smaller failing case`` over the generated cases."""
    from gradebox.suite.properties import shrink_counterexample  # noqa: PLC0415

    def shrink(fn: str, code: str, index: int) -> HiddenCase | None:
        k = index - fixed.get(fn, 0)
        origins = gen.origins.get(fn, [])
        if not 0 <= k < len(origins) or fn not in refs:
            return None
        case = tasks[fn].cases[index]
        return shrink_counterexample(fn, code, case, origins[k], refs[fn], sandbox, max_runs=60)

    return shrink
