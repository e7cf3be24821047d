"""``gradebox grade``: grade samples against hidden cases and write results.jsonl."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from tqdm import tqdm

from gradebox.errors import BadInput, SetupError
from gradebox.grader import GradeConfig, Grader, grade_all
from gradebox.inputs import RunInputs, load_inputs
from gradebox.pipeline import Stage
from gradebox.run_output import RunOutput
from gradebox.summary import format_summary, summarize
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import Limits

if TYPE_CHECKING:
    from gradebox.static_stage import StaticStage

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
@click.option("--junit", type=_PATH, help="Write a JUnit XML report here (one suite per task).")
@click.option("--html", type=_PATH, help="Write a self-contained HTML report here.")
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep results, summary, manifest and reports here; re-running into it resumes.",
)
@click.option(
    "--reference",
    type=_PATH,
    help="Reference solutions (reference.jsonl or .py): each case's time limit becomes "
    "max(0.5 s, 10 x the reference's time measured here).",
)
@click.option(
    "--properties",
    type=_PATH,
    help="properties.jsonl: seeded, generated extra cases (needs --reference for expected values).",
)
@click.option("--seed", type=int, default=None, help="Override every property's seed.")
@click.option(
    "--no-tree-limits",
    is_flag=True,
    help="Accept per-process memory/process limits only, when no cgroup can cap a candidate's "
    "whole process tree (not root, nothing delegated).",
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
@click.option("--no-static", is_flag=True, help="Skip the static layers (rows get static: null).")
@click.option(
    "--lockfile",
    type=_PATH,
    help="requirements.txt, uv.lock, poetry.lock or pylock.toml: the distributions candidates "
    "may import (default: what is installed here).",
)
@click.option(
    "--static-policy",
    type=_PATH,
    metavar="FILE",
    help="TOML or JSON with fail_on / review_on finding selectors (default: high-severity "
    "security findings and invented imports fail; the rest annotates).",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="mypy's cache for the static layers, kept between runs (default: a temporary one).",
)
@click.option(
    "--sarif", type=_PATH, help="Write every static finding here as SARIF 2.1.0 at the end."
)
@click.option("--no-judge", is_flag=True, help="Skip the LLM judge (rows get judge: null).")
@click.option("--judge-model", metavar="NAME", help="Judge model (default: $GRADEBOX_JUDGE_MODEL).")
@click.option(
    "--judge-rubric",
    metavar="NAME",
    help="Rubric name or file for every task (default: each task's own).",
)
@click.option(
    "--judge-cache",
    type=_PATH,
    help="SQLite cache of judge replies (default: $XDG_CACHE_HOME/gradebox/judge.sqlite "
    "or ~/.cache/gradebox/judge.sqlite).",
)
@click.option("--no-judge-cache", is_flag=True, help="Neither read nor write the judge cache.")
@click.option(
    "--judge-concurrency",
    type=click.IntRange(1, 256),
    help="Judge requests in flight at once (default: 8).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stderr.")
def grade(**opts: Any) -> None:
    """Grade samples against hidden cases in a sandbox; write one row per sample.

    After the sandbox, the static layers (ruff, mypy, bandit, imports vs lockfile,
    diff size, metrics) and the LLM judge annotate each row; a static policy
    failure fails a sample, and a judge mismatch or unparseable judge reply sends
    a passing sample to needs_review. Neither ever turns a failed test into a pass.
    The judge needs GRADEBOX_JUDGE_BASE_URL (or OPENAI_API_KEY) and
    GRADEBOX_JUDGE_MODEL; without them it is skipped with one line.

    Rows go to --out (or stdout) in input order as they finish; a summary goes to
    stderr. Exit 0 when every sample was graded, 1 with --gate when any verdict is
    not 'pass', 2 for bad input, a refused sandbox, or infrastructure errors.

    \b
    Example:
      gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                     --samples examples/samples.jsonl --out results.jsonl --jobs 2
    """  # noqa: D301 - click needs a real \b to keep the example as written
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
        tree_limits=not o["no_tree_limits"],
    )
    banned = None
    if o["banned_imports"] is not None:
        banned = tuple(m.strip() for m in o["banned_imports"].split(",") if m.strip())
    config = GradeConfig(limits=limits, banned_imports=banned, explain=o["explain"])
    if o["sarif"] is not None and o["no_static"]:
        raise BadInput(["--sarif needs the static layers: drop --no-static"])
    with contextlib.ExitStack() as stack:
        # Workers start (and prove their isolation) while the inputs are read and the
        # later stages set up; bad input still stops the run before any grading.
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
                stages = _open_stages(o, inputs, stack)
            except BaseException:  # bad input, a missing tool, Ctrl-C: stop the workers too
                _discard_sandbox(pending)
                raise
            try:
                sandbox = pending.result()
            except IsolationUnavailable as exc:
                raise SetupError(str(exc)) from exc
        from gradebox.suite_stage import prepare_tasks  # noqa: PLC0415 - loads Hypothesis on use

        with _closing_on_error(sandbox):
            inputs, prepared = prepare_tasks(
                inputs,
                sandbox,
                limits,
                reference=o["reference"],
                properties=o["properties"],
                seed=o["seed"],
                jobs=o["jobs"],
            )
        shrink = prepared.pop("shrink", None)
        if shrink is not None:
            config = dataclasses.replace(config, shrink=shrink)
        o["prepared"] = prepared
        return _grade(o, inputs, sandbox, Grader(sandbox, inputs.tasks, config), stages)


@dataclass(frozen=True, slots=True)
class _Stages:
    """The stages after the sandbox, as the options ask."""

    all: list[Stage]
    """In pipeline order."""
    static: StaticStage | None
    """The static stage, when on (for SARIF)."""


def _open_stages(o: dict[str, Any], inputs: RunInputs, stack: contextlib.ExitStack) -> _Stages:
    stages: list[Stage] = []
    static = None
    # Each stage is imported only when it is on: static costs ~0.08 s of start-up, the
    # judge (openai) ~0.4 s, which a --no-static --no-judge run should not pay.
    if not o["no_static"]:
        from gradebox.static_stage import open_static_stage  # noqa: PLC0415

        cache = o["cache_dir"]
        if cache is None:
            cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gradebox-mypy-")))
        static = open_static_stage(
            cache_dir=cache,
            jobs=o["jobs"],
            lockfile=o["lockfile"],
            policy_file=o["static_policy"],
            keep_for_sarif=o["sarif"] is not None,
        )
        stages.append(static)
    if not o["no_judge"]:
        from gradebox.judge_stage import SkippedJudge, open_judge_stage  # noqa: PLC0415

        publics = [t.public for t in inputs.tasks.values() if t.public is not None]
        judge = open_judge_stage(
            os.environ,
            rubric_names=[p.rubric for p in publics if p.spec.strip()],
            model=o["judge_model"],
            rubric=o["judge_rubric"],
            cache_path=o["judge_cache"],
            no_cache=o["no_judge_cache"],
            concurrency=o["judge_concurrency"],
        )
        stack.callback(judge.close)
        if isinstance(judge, SkippedJudge):
            click.echo(f"gradebox grade: {judge.notice}", err=True)
        stages.append(judge)
    return _Stages(stages, static)


def _grade(
    o: dict[str, Any], inputs: RunInputs, sandbox: Sandbox, grader: Grader, stages: _Stages
) -> int:
    for p in inputs.problems:
        click.echo(f"skipped: {p}", err=True)
    output = RunOutput(o)
    todo = output.todo(inputs.samples)
    jobs = max(1, min(o["jobs"], len(todo)))
    if not sandbox.isolated:
        click.echo("WARNING: --isolation none: candidates run WITHOUT isolation", err=True)
    if len(todo) < len(inputs.samples):
        click.echo(f"resuming: {len(inputs.samples) - len(todo)} samples already graded", err=True)
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    with (
        sandbox,
        ThreadPoolExecutor(max_workers=jobs) as pool,
        output.writer() as out,
        tqdm(
            total=len(todo),
            file=sys.stderr,
            unit="sample",
            disable=not sys.stderr.isatty(),
        ) as bar,
    ):

        def tick(_i: int, _row: dict[str, Any]) -> None:
            bar.update()

        for row in grade_all(grader, todo, pool, on_row=tick, stages=stages.all):
            out.write(row)
            rows.append(row)
    sarif = output.sarif_path
    if sarif is not None and stages.static is not None:
        log = stages.static.sarif([r["id"] for r in rows], importlib.metadata.version("gradebox"))
        sarif.write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    rows = output.all_rows(rows, [s.id for s in inputs.samples])
    o["output"] = output
    o["isolation_used"] = sandbox.backend
    o["limits_used"] = sandbox.limits
    return _report(o, rows, seconds=time.monotonic() - t0, backend=sandbox.backend)


def _report(o: dict[str, Any], rows: list[dict[str, Any]], *, seconds: float, backend: str) -> int:
    summary = summarize(rows)
    summary["suite"] = o["prepared"]
    o["output"].finish(
        rows,
        summary,
        isolation=o["isolation_used"],
        limits=o["limits_used"],
        judge_model=o.get("judge_model"),
    )
    if o["as_json"]:
        click.echo(json.dumps(summary), err=True)
    else:
        click.echo(format_summary(summary, seconds=seconds, backend=backend), err=True)
    if summary["static"]["infra_errors"]:
        click.echo(
            f"gradebox grade: static tools failed on {summary['static']['infra_errors']} "
            "samples (see static.infra_error on the rows; their passes need review)",
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


@contextlib.contextmanager
def _closing_on_error(sandbox: Sandbox) -> Iterator[None]:
    try:
        yield
    except BaseException:
        sandbox.close()
        raise


def _discard_sandbox(pending: Future[Sandbox]) -> None:
    with contextlib.suppress(IsolationUnavailable):
        pending.result().close()
