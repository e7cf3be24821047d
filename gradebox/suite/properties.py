"""Property-based hidden cases: inputs from Hypothesis, expected outputs from the reference.

``properties.jsonl`` gives, per task, a strategy for each argument (the JSON
form of :mod:`gradebox.suite.strategies`), how many inputs to draw and a seed::

    {"fn": "absolute", "args": [{"int": {"min": -1000, "max": 1000}}], "examples": 50, "seed": 1}

:func:`generate_cases` draws the inputs with Hypothesis (seeded, no example
database, so the same seed and Hypothesis version give the same inputs), runs
the **reference in the sandbox** on all of them (one process per task), and
turns each result into a hidden case named ``property:<n>``: a returned value
becomes ``expect``, a raised exception becomes ``error`` (its class, or for a
class the reference defines, the nearest standard base below ``Exception``).
An input the reference cannot answer (timeout, crash, a non-plain result, an
exception of its own class directly under ``Exception``) is dropped and said so
in :attr:`GeneratedCases.dropped`.

:func:`shrink_counterexample` uses Hypothesis' own search and shrinking
(:func:`hypothesis.find`) with a predicate that runs the reference and the
candidate in the sandbox on one input and asks whether they disagree
(type-strictly, as grading does); it is bounded by a number of sandbox runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata, resources
from pathlib import Path
from random import Random
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, find, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from gradebox.errors import BadInput
from gradebox.suite.batch import Job, run_jobs
from gradebox.suite.references import Reference
from gradebox.suite.strategies import build_strategy
from sandbox.cases import read_jsonl
from sandbox.child.wire import WireError, from_wire, to_wire
from sandbox.compare import judge_case
from sandbox.errors import InputError
from sandbox.runner import Sandbox
from sandbox.types import HiddenCase, Limits, Observation, make_case

__all__ = [
    "GeneratedCases",
    "PropertySpec",
    "draw_inputs",
    "generate_cases",
    "generate_property_cases",
    "load_properties",
    "shrink_counterexample",
]

#: Standard bases too broad to stand for an exception class the reference defines.
_TOO_BROAD = frozenset({"builtins.Exception", "builtins.BaseException"})

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
"""One generated call: positional and keyword arguments."""


@dataclass(frozen=True, slots=True)
class PropertySpec:
    """One line of ``properties.jsonl``."""

    fn: str
    """The task."""
    args: tuple[dict[str, Any], ...]
    """One strategy spec per positional argument."""
    kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """One strategy spec per keyword argument."""
    examples: int = 50
    """How many inputs to draw (duplicates are dropped)."""
    seed: int = 0
    """Hypothesis seed."""
    tol: float | None = None
    """Tolerance of the generated cases, where both sides are floats."""
    line: int = 0
    """Line in the properties file."""

    def strategy(self) -> st.SearchStrategy[Inputs]:
        """The Hypothesis strategy of one call's arguments.

        Raises:
            ValueError: A strategy's options contradict each other.
        """
        args = st.tuples(*[build_strategy(a) for a in self.args])
        kwargs = st.fixed_dictionaries({k: build_strategy(v) for k, v in self.kwargs.items()})
        return st.tuples(args, kwargs)


@dataclass(frozen=True, slots=True)
class GeneratedCases:
    """The result of :func:`generate_property_cases`."""

    cases: dict[str, list[HiddenCase]]
    """Per task, the generated hidden cases (``name="property:<n>"``)."""
    origins: dict[str, list[PropertySpec]]
    """Per task, parallel to ``cases``: the property each case came from (to shrink with)."""
    dropped: dict[str, list[str]]
    """Per task, why generated inputs were left out (one reason per input)."""
    record: dict[str, Any]
    """Seeds, counts and the Hypothesis version, for the run manifest."""


def load_properties(path: Path) -> list[PropertySpec]:
    """Load and validate ``properties.jsonl``.

    Raises:
        BadInput: Every problem, as ``file:line: what is wrong``.
    """
    text = (resources.files("gradebox.suite") / "schemas" / "properties.schema.json").read_text(
        encoding="utf-8"
    )
    try:
        specs, found = read_jsonl(path, json.loads(text), _property_spec)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    problems = [f"{path}:{n}: {m}" for n, m in sorted(found)]
    if problems:
        raise BadInput(problems)
    return specs


def _property_spec(obj: dict[str, Any], line: int) -> tuple[PropertySpec | None, list[str]]:
    spec = PropertySpec(
        fn=obj["fn"],
        args=tuple(obj["args"]),
        kwargs=dict(obj.get("kwargs", {})),
        examples=obj.get("examples", 50),
        seed=obj.get("seed", 0),
        tol=None if obj.get("tol") is None else float(obj["tol"]),
        line=line,
    )
    try:
        spec.strategy()
    except ValueError as exc:
        return None, [str(exc)]
    return spec, []


def draw_inputs(spec: PropertySpec, *, seed: int | None = None) -> list[Inputs]:
    """Draw up to ``spec.examples`` distinct inputs, deterministically for a seed.

    Args:
        spec: The property.
        seed: Overrides ``spec.seed``.

    Returns:
        The inputs in the order Hypothesis generated them.
    """
    found: list[Inputs] = []
    seen: set[str] = set()

    @settings(
        database=None,
        max_examples=spec.examples,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        derandomize=False,
    )
    @hypothesis_seed(spec.seed if seed is None else seed)
    @given(spec.strategy())
    def collect(example: Inputs) -> None:
        key = _key(example)
        if key not in seen:
            seen.add(key)
            found.append(example)

    collect()
    return found


def generate_property_cases(
    prop_specs: Sequence[PropertySpec],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    *,
    seed: int | None = None,
    workers: int = 2,
) -> GeneratedCases:
    """Draw inputs for every property and take the expected outputs from the reference.

    Args:
        prop_specs: The properties (several may share a task).
        references: References by ``fn``; every property's task needs one.
        sandbox: An open sandbox: the references run there, never in this process.
        seed: Overrides every property's own seed.
        workers: Sandbox runs in flight at once.

    Returns:
        The cases, what was dropped and why, and the record.

    Raises:
        BadInput: A property's task has no reference.
    """
    missing = [
        f"properties line {p.line}: fn {p.fn!r} has no reference"
        for p in prop_specs
        if p.fn not in references
    ]
    if missing:
        raise BadInput(missing)
    drawn = [draw_inputs(p, seed=seed) for p in prop_specs]
    limits = replace(sandbox.limits, max_timeouts=0)  # one slow input must not hide the rest
    jobs = [
        Job(references[p.fn].code, p.fn, tuple(make_case(p.fn, *a, **k) for a, k in inputs), limits)
        for p, inputs in zip(prop_specs, drawn, strict=True)
    ]
    cases: dict[str, list[HiddenCase]] = {}
    origins: dict[str, list[PropertySpec]] = {}
    dropped: dict[str, list[str]] = {}
    for p, job, run in zip(prop_specs, jobs, run_jobs(sandbox, jobs, workers=workers), strict=True):
        kept, lost = cases.setdefault(p.fn, []), dropped.setdefault(p.fn, [])
        for base, obs in zip(job.cases, run.observations, strict=True):
            made = _expected(base, obs, p.tol) if not run.infra_error else run.infra_error
            if isinstance(made, str):
                lost.append(made)
            else:
                kept.append(replace(made, name=f"property:{len(kept)}"))
                origins.setdefault(p.fn, []).append(p)
    record = _record(prop_specs, drawn, cases, dropped, seed)
    return GeneratedCases(cases, origins, dropped, record)


def generate_cases(
    prop_specs: Sequence[PropertySpec],
    references: Mapping[str, Reference],
    sandbox: Sandbox,
    *,
    seed: int | None = None,
) -> dict[str, list[HiddenCase]]:
    """Per task, hidden cases from the properties with the reference's outputs.

    The short form of :func:`generate_property_cases` (which also says what was
    dropped and returns the record).
    """
    return generate_property_cases(prop_specs, references, sandbox, seed=seed).cases


def shrink_counterexample(
    fn: str,
    candidate_code: str,
    failing_case: HiddenCase,
    spec: PropertySpec,
    reference: Reference | str,
    sandbox: Sandbox,
    *,
    max_runs: int = 100,
    seed: int = 0,
    limits: Limits | None = None,
) -> HiddenCase | None:
    """A small input on which the candidate disagrees with the reference.

    Hypothesis searches the property's strategy for an input where the two
    disagree (each probe: one sandbox run of each) and shrinks it; the
    search stops spending sandbox runs after ``max_runs``.

    Args:
        fn: The task.
        candidate_code: The candidate's code.
        failing_case: A case (with the reference's expectation) the candidate fails.
        spec: The property that generated it (its strategy bounds the search).
        reference: The reference (or its code).
        sandbox: An open sandbox.
        max_runs: Most sandbox runs spent.
        seed: Seed of the search.
        limits: Limits of each probe (default: the sandbox's).

    Returns:
        The smallest failing case found (``failing_case`` itself if nothing
        smaller turned up), or None when the candidate does not fail
        ``failing_case`` after all.
    """
    ref_code = reference.code if isinstance(reference, Reference) else reference
    probe = _Probe(fn, candidate_code, ref_code, sandbox, spec.tol, max_runs, limits)
    if not probe.fails(failing_case):
        return None
    search = settings(
        database=None,
        max_examples=max(1, max_runs // 2),
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    try:
        example = find(spec.strategy(), probe.disagrees, settings=search, random=Random(seed))  # noqa: S311 (reproducible search, not secrets)
    except HypothesisException:  # nothing found within the budget
        return failing_case
    found = probe.failing.get(_key(example))
    if found is None or _size(found) > _size(failing_case):
        return failing_case
    return replace(found, name="property:shrunk")


class _Probe:
    """Runs reference and candidate on one input in the sandbox; remembers every answer."""

    def __init__(
        self,
        fn: str,
        candidate: str,
        reference: str,
        sandbox: Sandbox,
        tol: float | None,
        budget: int,
        limits: Limits | None,
    ) -> None:
        self.fn, self.candidate, self.reference = fn, candidate, reference
        self.sandbox, self.tol, self.budget, self.limits = sandbox, tol, budget, limits
        self.runs = 0
        self.seen: dict[str, bool] = {}
        self.failing: dict[str, HiddenCase] = {}

    def fails(self, case: HiddenCase) -> bool:
        """Whether the candidate fails ``case`` as given (one run)."""
        self.runs += 1
        run = self.sandbox.run(self.candidate, self.fn, [case], self.limits)
        return not run.infra_error and judge_case(case, run.observations[0]).outcome != "ok"

    def disagrees(self, example: Inputs) -> bool:
        """Hypothesis' predicate; answers repeat questions from memory (no new runs)."""
        key = _key(example)
        if key in self.seen:
            return self.seen[key]
        if self.runs + 2 > self.budget:
            self.seen[key] = False
            return False
        args, kwargs = example
        base = make_case(self.fn, *args, **kwargs)
        jobs = [
            Job(self.reference, self.fn, (base,), self.limits),
            Job(self.candidate, self.fn, (base,), self.limits),
        ]
        ref_run, cand_run = run_jobs(self.sandbox, jobs, workers=2)
        self.runs += 2
        expected = _expected(base, ref_run.observations[0], self.tol)
        result = (
            not isinstance(expected, str)
            and not ref_run.infra_error
            and not cand_run.infra_error
            and judge_case(expected, cand_run.observations[0]).outcome != "ok"
        )
        if result and not isinstance(expected, str):
            self.failing[key] = expected
        self.seen[key] = result
        return result


def _expected(base: HiddenCase, obs: Observation, tol: float | None) -> HiddenCase | str:
    """The case with the reference's answer as its expectation, or why there is none."""
    if obs.status == "returned":
        try:
            from_wire(to_wire(obs.value), allow_opaque=False)
        except WireError:
            return "the reference returned an object that is not plain data"
        return replace(base, expect=obs.value, tol=tol)
    if obs.status == "raised" and obs.raised is not None:
        raised = obs.raised
        own_class = not raised.mro or raised.type_name != raised.mro[0]
        if own_class and (not raised.mro or raised.mro[0] in _TOO_BROAD):
            # "Exception" would accept any error at all: a weaker case than the reference.
            return "the reference raised an exception of its own class"
        return replace(base, error=raised.mro[0], tol=tol)
    return f"the reference ended with {obs.status}" + (f" ({obs.detail})" if obs.detail else "")


def _key(example: Inputs) -> str:
    args, kwargs = example
    return json.dumps([to_wire(list(args)), to_wire(kwargs)], sort_keys=True)


def _size(case: HiddenCase) -> int:
    return len(json.dumps([case.args_wire, case.kwargs_wire], sort_keys=True))


def _record(
    specs: Sequence[PropertySpec],
    drawn: Sequence[list[Inputs]],
    cases: Mapping[str, list[HiddenCase]],
    dropped: Mapping[str, list[str]],
    seed: int | None,
) -> dict[str, Any]:
    return {
        "hypothesis": metadata.version("hypothesis"),
        "seed_override": seed,
        "properties": [
            {
                "fn": p.fn,
                "line": p.line,
                "seed": p.seed if seed is None else seed,
                "examples": p.examples,
                "drawn": len(inputs),
            }
            for p, inputs in zip(specs, drawn, strict=True)
        ],
        "cases": {fn: len(c) for fn, c in cases.items()},
        "dropped": {fn: len(d) for fn, d in dropped.items()},
    }
