"""``gradebox suite``: check that a hidden suite can be trusted, and grow it.

``suite check`` runs :func:`gradebox.suite.check_suite`; ``suite grow`` freezes
property-generated cases (:mod:`gradebox.suite.properties`) into hidden lines.
Both only parse options, call the library and map its errors to exit codes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import isolation_option, sandbox_python_option
from gradebox.errors import BadInput, SetupError
from gradebox.model import Task
from gradebox.runs.inputs import group_tasks
from gradebox.runs.private import private_text
from gradebox.suite import check_suite, freeze_cases, load_references, render_text
from gradebox.suite.grow import dumps_lines
from gradebox.suite.references import Reference
from sandbox.cases import load_hidden, load_public
from sandbox.errors import InputError, IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import PublicTask

__all__ = ["suite"]

_PATH = click.Path(path_type=Path, dir_okay=False)


def _sandbox_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = sandbox_python_option(f)
    f = isolation_option(f)
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(1, 256),
        default=2,
        show_default=True,
        help="Sandbox runs in flight at once (isolated workers).",
    )(f)


@click.group(context_settings={"max_content_width": 100})
def suite() -> None:
    """Check that a hidden suite can be trusted, and grow it with generated cases.

    \b
    Example:
      gradebox suite check --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                           --reference examples/reference.jsonl
    """  # noqa: D301 (click needs a real \b to keep the example as written)


@suite.command("check")
@click.option("--hidden", type=_PATH, required=True, help="hidden.jsonl: the deciding cases.")
@click.option("--public", type=_PATH, help="public.jsonl: signatures, examples, specs.")
@click.option(
    "--reference",
    type=_PATH,
    required=True,
    help="reference.jsonl ({fn, code} per line) or a .py file defining the functions.",
)
@click.option(
    "--runs",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="Times the reference runs through each suite (flaky cases show up as varying).",
)
@click.option(
    "--max-mutants",
    type=click.IntRange(0, 10_000),
    default=60,
    show_default=True,
    help="Most mutants per task (chosen deterministically).",
)
@click.option(
    "--min-mutation-score",
    type=click.FloatRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="A task below this mutation score is not trustworthy (survivors are warnings above).",
)
@click.option("--fail-on-leaks", is_flag=True, help="Prompt leaks make a suite untrustworthy.")
@_sandbox_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@exit_codes
def check(**o: Any) -> None:
    """Check each task's hidden suite; print a report; exit 1 if any is not trustworthy.

    In the sandbox, for each task: the reference runs through the suite --runs
    times (a case whose outcome varies is flaky); naive stubs built from the
    signature (return None, the commonest expected value, the first argument,
    raise NotImplementedError, pass, an empty value) must each fail a case;
    mutants of the reference must be killed (survivors are shown as diffs).
    Input-space coverage (empty, boundary, large, wrong-type inputs) and prompt
    leaks (hidden cases shown in public examples or specs) are reported too.
    A mutant a person judged equivalent is listed in the reference line's
    "equivalent_mutants". Finding codes SC001-SC007: gradebox/suite/FINDINGS.md.

    Exit 0 when every suite is trustworthy, 1 when one is not, 2 for bad input
    (file:line), a refused sandbox or sandbox failures.

    \b
    Example:
      gradebox suite check --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                           --reference examples/reference.jsonl --runs 20 --json
    """  # noqa: D301 (click needs a real \b to keep the example as written)
    tasks, public, refs = _check_inputs(o["hidden"], o["public"], o["reference"])
    with _open(o) as sandbox:
        report = check_suite(
            tasks,
            public,
            refs,
            sandbox,
            runs=o["runs"],
            workers=o["jobs"],
            max_mutants=o["max_mutants"],
            min_mutation_score=o["min_mutation_score"],
            fail_on_leaks=o["fail_on_leaks"],
        )
    if o["as_json"]:
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        click.echo(render_text(report), nl=False)
    if report.infra_errors:
        click.echo(
            f"gradebox suite check: {report.infra_errors} sandbox runs failed "
            "(infrastructure): the check is incomplete",
            err=True,
        )
        sys.exit(2)
    sys.exit(0 if report.trustworthy else 1)


@suite.command("grow")
@click.option("--hidden", type=_PATH, required=True, help="hidden.jsonl: the current cases.")
@click.option(
    "--properties",
    type=_PATH,
    required=True,
    help="properties.jsonl: {fn, args: [strategy...], kwargs, examples, seed} per line.",
)
@click.option(
    "--reference", type=_PATH, required=True, help="reference.jsonl or a .py file: the oracle."
)
@click.option("--out", type=_PATH, required=True, help="Write the new hidden lines here.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), help="Override every line's seed.")
@_sandbox_options
@click.option("--json", "as_json", is_flag=True, help="Print the generation record as JSON.")
@exit_codes
def grow(**o: Any) -> None:
    """Generate inputs from properties, take outputs from the reference, write hidden lines.

    Inputs are drawn with Hypothesis (seeded: the same seed and Hypothesis
    version give the same inputs); the reference runs in the sandbox on them;
    each answer becomes a hidden case named property:<n>. Inputs already in
    --hidden are left out. Review the lines before adding them to the suite.

    Strategy specs: {"int": {"min": -9, "max": 9}}, {"float": {...}}, {"bool": {}},
    {"text": {"max_size": 10}}, {"list": {"of": SPEC, "max_size": 20}}, {"set": ...},
    {"dict": {"keys": SPEC, "values": SPEC}}, {"tuple": [SPEC, ...]},
    {"one_of": [SPEC, ...]}, {"just": VALUE}, {"sampled_from": [VALUE, ...]}.

    \b
    Example:
      gradebox suite grow --hidden hidden.jsonl --properties properties.jsonl \\
                          --reference reference.jsonl --out new-cases.jsonl --seed 1
    """  # noqa: D301 (click needs a real \b to keep the example as written)
    from gradebox.suite.properties import (  # noqa: PLC0415 (Hypothesis only when needed)
        generate_property_cases,
        load_properties,
    )

    hidden, refs, props = _attempt_all(
        lambda: load_hidden(o["hidden"])[0],
        lambda: load_references(o["reference"]),
        lambda: load_properties(o["properties"]),
    )
    known = {c.fn for c in hidden}
    unknown = [
        f"{o['properties']}:{p.line}: fn: {p.fn!r} has no hidden cases in {o['hidden']}"
        for p in props
        if p.fn not in known
    ]
    unknown += [
        f"{o['properties']}:{p.line}: fn: {p.fn!r} has no reference in {o['reference']}"
        for p in props
        if p.fn not in refs
    ]
    if unknown:
        raise BadInput(unknown)
    with _open(o) as sandbox:
        generated = generate_property_cases(props, refs, sandbox, seed=o["seed"], workers=o["jobs"])
    lines = freeze_cases(generated.cases, hidden)
    with private_text(o["out"]) as fh:  # new hidden cases: the owner's only, as hidden.jsonl
        fh.write(dumps_lines(lines))
    total = sum(len(c) for c in generated.cases.values())
    lost = sum(len(d) for d in generated.dropped.values())
    click.echo(
        f"gradebox suite grow: wrote {len(lines)} cases to {o['out']} ({total} generated, "
        f"{total - len(lines)} already in {o['hidden']}, {lost} inputs dropped); "
        "review them before adding them to the suite",
        err=True,
    )
    if o["as_json"]:
        click.echo(json.dumps({**generated.record, "written": len(lines)}, indent=1))


def _check_inputs(
    hidden: Path, public: Path | None, reference: Path
) -> tuple[dict[str, Task], dict[str, PublicTask], dict[str, Reference]]:
    cases, pub, refs = _attempt_all(
        lambda: load_hidden(hidden)[0],
        lambda: load_public(public)[0] if public is not None else {},
        lambda: load_references(reference),
    )
    tasks, problems = group_tasks(cases, pub, hidden, public)
    problems += [
        f"{reference}:{ref.line}: {'task' if tid != ref.fn else 'fn'}: {tid!r} has no hidden "
        f"cases in {hidden}"
        for tid, ref in refs.items()
        if tid not in tasks
    ]
    problems += [
        f"{reference}:{ref.line}: fn: task {tid!r} calls {tasks[tid].fn!r}, not {ref.fn!r}"
        for tid, ref in refs.items()
        if tid in tasks and ref.fn != tasks[tid].fn
    ]
    if problems:
        raise BadInput(problems)
    return tasks, pub, refs


def _attempt_all(*loads: Callable[[], Any]) -> tuple[Any, ...]:
    """Run every loader, so one run reports the problems of every file."""
    problems: list[str] = []
    values: list[Any] = []
    for load in loads:
        try:
            values.append(load())
        except (InputError, BadInput) as exc:
            problems.extend(exc.problems)
            values.append(None)
    if problems:
        raise BadInput(problems)
    return tuple(values)


@contextmanager
def _open(o: dict[str, Any]) -> Iterator[Sandbox]:
    python = str(o["sandbox_python"]) if o["sandbox_python"] else None
    try:
        sandbox = open_sandbox(o["isolation"], workers=o["jobs"], python=python)
    except IsolationUnavailable as exc:
        raise SetupError(str(exc)) from exc
    if not sandbox.isolated:
        click.echo("WARNING: --isolation none: code runs WITHOUT isolation", err=True)
    with sandbox:
        yield sandbox
