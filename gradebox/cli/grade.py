"""``gradebox grade``: grade samples against hidden cases and write results.jsonl."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from gradebox.cli import collector_paused
from gradebox.cli.errors import exit_codes
from gradebox.cli.options import (
    isolation_option,
    jobs_option,
    judge_extra_body_option,
    limit_options,
    sandbox_python_option,
)
from gradebox.errors import SetupError
from gradebox.runs.config import RunConfig, build_config
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox

__all__ = ["grade", "run"]

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
@click.option(
    "--out",
    "out",
    type=_PATH,
    help="Write results.jsonl here, every sample of the run (default: stdout).",
)
@jobs_option("Candidates graded at once (isolated workers).")
@click.option(
    "--scheduler",
    metavar="local:N|tcp://HOST:PORT",
    callback=lambda _ctx, _param, value: _scheduler(value),
    help="Grade on a Dask cluster: local:N starts N worker processes here (--jobs slots "
    "each); tcp:// or tls:// joins a scheduler whose workers run 'gradebox worker'. "
    "Extraction, static layers and the judge stay here; rows are the same.",
)
@isolation_option
@limit_options
@sandbox_python_option
@click.option(
    "--banned-imports",
    default=None,
    metavar="LIST",
    help="Comma-separated import denylist for the gate; '' switches the import check off.",
)
@click.option("--junit", type=_PATH, help="Write a JUnit XML report here (one suite per task).")
@click.option("--html", type=_PATH, help="Write a self-contained HTML report here.")
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep results, summary, manifest, SARIF, JUnit and HTML here; re-running into it "
    "resumes (grading only samples whose inputs, tools or options changed). Rows still go "
    "to --out or stdout.",
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
    "--max-timeouts",
    type=click.IntRange(0, 10_000),
    default=1,
    show_default=True,
    help="Stop a candidate after this many timed-out cases (0: run every case).",
)
@click.option(
    "--skip-bad-lines",
    is_flag=True,
    help="Grade the good lines of samples.jsonl and public.jsonl and report the bad ones "
    "(bad lines of hidden.jsonl always stop the run).",
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
    "--advisories",
    type=click.Path(path_type=Path),
    help="An OSV advisory database (a directory of .json/.yaml records or an osv.dev zip) "
    "for the deps layer: known vulnerabilities of the versions candidates import (indexed "
    "once into the cache; see 'gradebox advisories').",
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
@click.option(
    "--judge-model",
    metavar="NAME",
    help="Judge model (default: $GRADEBOX_JUDGE_MODEL); a,b,c is a panel: each sample judged "
    "by every model, the majority kept, a split sends a pass to needs_review.",
)
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
@click.option(
    "--judge-repeat",
    type=click.IntRange(1, 25),
    help="Judge each sample N times (bypassing the cache, which keeps all N) and keep the "
    "majority; a verdict that flips sends a passing sample to needs_review (default: 1, or 3 "
    "when the model refuses temperature 0).",
)
@judge_extra_body_option(
    "Provider options merged into every judge request, e.g. "
    '\'{"provider": {"require_parameters": true}}\' (OpenRouter).'
)
@click.option(
    "--judge-max-tokens",
    type=click.IntRange(1, 1_000_000),
    help="Cap on each judge reply's tokens (sent as max_tokens or max_completion_tokens, "
    "whichever the endpoint takes; default: no cap).",
)
@click.option(
    "--judge-probes",
    is_flag=True,
    help="Also judge each candidate renamed, stripped of comments, reordered and with an "
    "injected 'answer match' comment; the summary gives the verdict's flip rate under each.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stderr.")
@exit_codes
def grade(**opts: Any) -> None:
    """Grade samples against hidden cases in a sandbox; write one row per sample.

    After the sandbox, the static layers (ruff, mypy, bandit, imports vs lockfile,
    diff size, metrics) and the LLM judge annotate each row; a static policy
    failure fails a sample, and a judge mismatch or unparseable judge reply sends
    a passing sample to needs_review. Neither ever turns a failed test into a pass.
    The judge needs GRADEBOX_JUDGE_BASE_URL (or OPENAI_API_KEY) and
    GRADEBOX_JUDGE_MODEL; without them it is skipped with one line.

    Rows go to --out (or stdout) in input order as they finish; a summary goes to
    stderr. With --run-dir, rows kept from an earlier run go out too, so every
    output holds every sample of the run. Exit 0 when every sample was graded, 1
    with --gate when any verdict is not 'pass', 2 for bad input, a refused
    sandbox, or infrastructure errors.

    \b
    Example:
      gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                     --samples examples/samples.jsonl --out /tmp/results.jsonl --jobs 2
    """  # noqa: D301 - click needs a real \b to keep the example as written
    sys.exit(run(build_config(opts, os.environ, tuple(sys.argv)), environ=os.environ))


def run(config: RunConfig, *, environ: Mapping[str, str] | None = None) -> int:
    """Grade a run as ``config`` says; return the exit code.

    ``environ`` (the command's environment) places the static layers' kept
    standard-library cache (``$XDG_CACHE_HOME/gradebox``); without it none is kept.

    Raises:
        BadInput: Bad input files or options (nothing was graded).
        SetupError: The sandbox or a stage cannot start.
    """
    with contextlib.ExitStack() as stack:
        # A worker starts first (and proves the isolation) while the grading pipeline is
        # imported, the inputs are read and the later stages set up; bad input still
        # stops the run before any grading. The others start once the samples are
        # counted: a run of one candidate boots one worker.
        with collector_paused(), ThreadPoolExecutor(max_workers=1) as starter:
            pending = starter.submit(_open_sandbox, config)
            try:
                from gradebox.cli import grade_run  # noqa: PLC0415 - while the workers start

                inputs, stages = grade_run.prepare(config, stack, environ)
            except BaseException:  # bad input, a missing tool, Ctrl-C: stop the workers too
                _discard_sandbox(pending)
                raise
            try:
                sandbox = pending.result()
            except IsolationUnavailable as exc:
                raise SetupError(str(exc)) from exc
        if config.scheduler is None:  # the other workers, as many as there are samples
            sandbox.start(min(config.jobs, len(inputs.samples.ids)) - 1)
        return grade_run.grade(config, inputs, stages, sandbox)


def _scheduler(value: str | None) -> str | None:
    """Check ``--scheduler`` (a usage error when malformed)."""
    if value is not None:
        from gradebox.cluster.address import parse_scheduler  # noqa: PLC0415

        try:
            parse_scheduler(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from exc
    return value


def _open_sandbox(config: RunConfig) -> Sandbox:
    """This machine's sandbox pool, or the cluster ``--scheduler`` names."""
    python = str(config.sandbox_python) if config.sandbox_python else None
    if config.scheduler is None:
        return open_sandbox(
            config.isolation, config.limits, workers=config.jobs, python=python, boot=1
        )
    from gradebox.cluster.address import parse_scheduler  # noqa: PLC0415 - loads Dask on use
    from gradebox.cluster.coordinator import ClusterOptions, open_cluster  # noqa: PLC0415

    address = parse_scheduler(config.scheduler)
    if address.address is not None and not address.tls:
        click.echo(
            "gradebox grade: warning: tcp:// is unauthenticated: anyone who can reach the "
            "scheduler can run code on its workers and read task sets (use tls://)",
            err=True,
        )
    options = ClusterOptions(address, config.isolation, config.limits, config.jobs, python)
    return open_cluster(options)


def _discard_sandbox(pending: Future[Sandbox]) -> None:
    with contextlib.suppress(IsolationUnavailable):
        pending.result().close()
