"""``gradebox grade``: grade samples against hidden cases and write results.jsonl."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import click
from tqdm import tqdm

from gradebox.errors import BadInput, SetupError
from gradebox.grader import GradeConfig, Grader, grade_all
from gradebox.inputs import load_inputs
from gradebox.summary import format_summary, summarize
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits

__all__ = ["grade"]

_PATH = click.Path(path_type=Path, dir_okay=False)


@click.command(context_settings={"max_content_width": 100})
@click.option(
    "--hidden", "hidden", type=_PATH, required=True, help="hidden.jsonl: the deciding cases."
)
@click.option(
    "--samples", "samples", type=_PATH, required=True, help="samples.jsonl: the candidates."
)
@click.option(
    "--public", "public", type=_PATH, help="public.jsonl: specs, signatures, task options."
)
@click.option("--out", "out", type=_PATH, help="Write results.jsonl here (default: stdout).")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 256),
    default=os.cpu_count() or 1,
    show_default=True,
    help="Candidates graded at once (isolated workers).",
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "bwrap", "none"]),
    default="auto",
    show_default=True,
    help="auto = bwrap or refuse. 'none' runs candidates WITHOUT isolation (trusted code only).",
)
@click.option(
    "--banned-imports",
    default=None,
    metavar="LIST",
    help="Comma-separated import denylist for the gate; '' switches the import check off.",
)
@click.option(
    "--case-timeout",
    type=click.FloatRange(0.01, 600),
    default=2.0,
    show_default=True,
    help="Seconds per case unless the case sets timeout_s.",
)
@click.option(
    "--candidate-timeout",
    type=click.FloatRange(0.1, 3600),
    default=20.0,
    show_default=True,
    help="Seconds for all cases of one candidate together.",
)
@click.option(
    "--max-timeouts",
    type=click.IntRange(0, 10_000),
    default=1,
    show_default=True,
    help="Stop a candidate after this many timed-out cases (0: run every case).",
)
@click.option(
    "--memory-mb",
    type=click.IntRange(64, 65536),
    default=1024,
    show_default=True,
    help="Address-space limit per candidate process.",
)
@click.option("--sandbox-python", type=_PATH, help="Interpreter that runs candidates (3.11+).")
@click.option(
    "--skip-bad-lines", is_flag=True, help="Grade the good lines and report the bad ones."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Put arguments and expected values of failed cases on rows (reveals hidden cases).",
)
@click.option("--gate", "gate_exit", is_flag=True, help="Exit 1 when any verdict is not 'pass'.")
@click.option(
    "--no-static", is_flag=True, help="Skip the static layers (not built yet: always off)."
)
@click.option("--no-judge", is_flag=True, help="Skip the LLM judge (not built yet: always off).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stderr.")
def grade(**opts: Any) -> None:
    r"""Grade samples against hidden cases in a sandbox; write one row per sample.

    Rows go to --out (or stdout) in input order as they finish; a summary goes to
    stderr. Exit 0 when every sample was graded, 1 with --gate when any verdict is
    not 'pass', 2 for bad input, a refused sandbox, or infrastructure errors.

    \b
    Example:
      gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                     --samples examples/samples.jsonl --out results.jsonl --jobs 2
    """
    try:
        code = _run(**opts)
    except BadInput as exc:
        click.echo(f"gradebox grade: bad input:\n{exc}", err=True)
        sys.exit(2)
    except SetupError as exc:
        click.echo(f"gradebox grade: cannot start: {exc}", err=True)
        sys.exit(2)
    sys.exit(code)


def _run(**o: Any) -> int:
    limits = Limits(
        case_timeout_s=o["case_timeout"],
        candidate_timeout_s=o["candidate_timeout"],
        memory_mb=o["memory_mb"],
        max_timeouts=o["max_timeouts"],
    )
    banned = None
    if o["banned_imports"] is not None:
        banned = tuple(m.strip() for m in o["banned_imports"].split(",") if m.strip())
    config = GradeConfig(limits=limits, banned_imports=banned, explain=o["explain"])
    # Workers start (and prove their isolation) while the inputs are read; bad input
    # still stops the run before any candidate is graded.
    with ThreadPoolExecutor(max_workers=1) as starter:
        pending = starter.submit(
            open_sandbox,
            o["isolation"],
            limits,
            workers=o["jobs"],
            python=str(o["sandbox_python"]) if o["sandbox_python"] else None,
        )
        try:
            inputs = load_inputs(
                o["hidden"], o["samples"], o["public"], skip_bad_lines=o["skip_bad_lines"]
            )
        except BadInput:
            _discard_sandbox(pending)
            raise
        try:
            sandbox = pending.result()
        except IsolationUnavailable as exc:
            raise SetupError(str(exc)) from exc
    for p in inputs.problems:
        click.echo(f"skipped: {p}", err=True)
    jobs = min(o["jobs"], len(inputs.samples))
    if not sandbox.isolated:
        click.echo("WARNING: --isolation none: candidates run WITHOUT isolation", err=True)
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    with (
        sandbox,
        ThreadPoolExecutor(max_workers=jobs) as pool,
        _open_out(o["out"]) as out,
        tqdm(
            total=len(inputs.samples),
            file=sys.stderr,
            unit="sample",
            disable=not sys.stderr.isatty(),
        ) as bar,
    ):
        grader = Grader(sandbox, inputs.tasks, config)

        def tick(_i: int, _row: dict[str, Any]) -> None:
            bar.update()

        for row in grade_all(grader, inputs.samples, pool, on_row=tick):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            rows.append(row)
    summary = summarize(rows)
    if o["as_json"]:
        click.echo(json.dumps(summary), err=True)
    else:
        click.echo(
            format_summary(summary, seconds=time.monotonic() - t0, backend=sandbox.backend),
            err=True,
        )
    if summary["infra_errors"]:
        click.echo(
            f"gradebox grade: {summary['infra_errors']} infrastructure errors "
            "(see infra_error on the rows)",
            err=True,
        )
        return 2
    if o["gate_exit"] and summary["passed"] != summary["samples"]:
        return 1
    return 0


def _discard_sandbox(pending: Future[Sandbox]) -> None:
    with contextlib.suppress(IsolationUnavailable):
        pending.result().close()


class _open_out:
    """Open --out for writing, or wrap stdout (not closed)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fh: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        if self.path is None:
            return sys.stdout
        self.fh = self.path.open("w", encoding="utf-8")
        return self.fh

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()
