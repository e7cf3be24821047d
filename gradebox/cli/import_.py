"""``gradebox import FORMAT SOURCE --out DIR``: a benchmark's own file as a gradebox task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gradebox.benchmarks import FORMATS, import_benchmark, write_import
from gradebox.cli.errors import exit_codes
from gradebox.cli.options import isolation_option, sandbox_python_option
from gradebox.errors import SetupError
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits

__all__ = ["import_"]


@click.command(name="import", context_settings={"max_content_width": 100})
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Directory for hidden.jsonl, public.jsonl, reference.jsonl, benchmark.jsonl "
    "and import_report.json.",
)
@click.option(
    "--equality",
    type=click.Choice(["strict", "harness"]),
    default="strict",
    show_default=True,
    help="strict: type-strict compare (where the reference's type differs from the "
    "benchmark's literal, the reference's value is expected); harness: the benchmark's "
    "own == (1 == 1.0 == True).",
)
@click.option(
    "--no-reference-check",
    is_flag=True,
    help="Do not run the references (in the sandbox) to find lax comparisons.",
)
@click.option("--jobs", type=click.IntRange(1, 256), default=2, show_default=True)
@isolation_option
@sandbox_python_option
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@exit_codes
def import_(
    fmt: Any,
    source: Path,
    out: Path,
    equality: Any,
    no_reference_check: bool,
    jobs: int,
    isolation: str,
    sandbox_python: Path | None,
    as_json: bool,
) -> None:
    """Import SOURCE, a benchmark file in FORMAT, as a task set in --out.

    Checks that compare the candidate's value with a literal become hidden cases
    whose expected values stay outside the sandbox; what cannot be converted
    (randomness, properties, unittest classes) runs as tests of a test program
    (rows of such tasks say kind: program). Stdin/stdout benchmarks become stdio
    cases. The references run in the sandbox first, to find where the
    benchmark's == is laxer than gradebox's compare (--no-reference-check skips
    that). The import report (import_report.json, a summary on stderr, or
    --json on stdout) says how many cases converted, how many run as test
    programs, and what was skipped and why.

    Exit 0 imported, 2 bad input (each problem as file:line) or a refused sandbox.

    \b
    Example:
      gradebox import humaneval HumanEval.jsonl.gz --out tasks/humaneval
      gradebox grade --hidden tasks/humaneval/hidden.jsonl \\
          --public tasks/humaneval/public.jsonl --samples samples.jsonl
    """  # noqa: D301 - click needs a real \b
    sandbox: Sandbox | None = None
    if not no_reference_check:
        try:
            sandbox = open_sandbox(
                isolation,
                limits=Limits(),
                workers=jobs,
                python=str(sandbox_python) if sandbox_python else None,
            )
        except IsolationUnavailable as exc:
            raise SetupError(str(exc)) from exc
        if not sandbox.isolated:
            click.echo("WARNING: --isolation none: references run WITHOUT isolation", err=True)
    try:
        tasks, report = import_benchmark(fmt, source, sandbox=sandbox, equality=equality, jobs=jobs)
    finally:
        if sandbox is not None:
            sandbox.close()
    write_import(out, tasks, report)
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(report.summary(), err=True)
