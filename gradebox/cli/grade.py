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
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from tqdm import tqdm

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import isolation_option, limit_options, sandbox_python_option
from gradebox.errors import SetupError
from gradebox.model import Sample
from gradebox.pipeline.core import Stage
from gradebox.pipeline.extract import extract
from gradebox.pipeline.tests import GradeConfig, Grader, grade_all
from gradebox.runs.config import (
    RunConfig,
    build_config,
    sandbox_python_version,
    static_tool_versions,
)
from gradebox.runs.fingerprint import Fingerprints, UsedJudge, fingerprints
from gradebox.runs.inputs import RunInputs, load_inputs
from gradebox.runs.output import LazySources, Reports, RunOutput
from gradebox.runs.summary import format_summary, summarize
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage, SkippedJudge

__all__ = ["grade", "run", "warnings"]

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
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 256),
    default=os.cpu_count() or 1,
    show_default=True,
    help="Candidates graded at once (isolated workers).",
)
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
@click.option(
    "--judge-extra-body",
    metavar="JSON",
    callback=lambda _ctx, _param, value: _extra_body(value),
    help="Provider options merged into every judge request, e.g. "
    '\'{"provider": {"require_parameters": true}}\' (OpenRouter).',
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
    gconfig = GradeConfig(
        limits=config.limits, banned_imports=config.banned_imports, explain=config.explain
    )
    with contextlib.ExitStack() as stack:
        # Workers start (and prove their isolation) while the inputs are read and the
        # later stages set up; bad input still stops the run before any grading.
        with ThreadPoolExecutor(max_workers=1) as starter:
            pending = starter.submit(_open_sandbox, config)
            try:
                inputs = load_inputs(
                    config.hidden,
                    config.samples,
                    config.public,
                    skip_bad_lines=config.skip_bad_lines,
                )
                stages = _open_stages(config, inputs, stack, environ)
            except BaseException:  # bad input, a missing tool, Ctrl-C: stop the workers too
                _discard_sandbox(pending)
                raise
            try:
                sandbox = pending.result()
            except IsolationUnavailable as exc:
                raise SetupError(str(exc)) from exc
        from gradebox.runs.prepare import prepare_tasks  # noqa: PLC0415 - loads Hypothesis on use

        with _closing_on_error(sandbox):
            inputs, prepared = prepare_tasks(
                inputs,
                sandbox,
                config.limits,
                reference=config.reference,
                properties=config.properties,
                seed=config.seed,
                jobs=config.jobs,
            )
        shrink = prepared.pop("shrink", None)
        if shrink is not None:
            gconfig = dataclasses.replace(gconfig, shrink=shrink)
        grader = Grader(sandbox, inputs.tasks, gconfig)
        return _grade(config, inputs, sandbox, grader, stages, prepared)


@dataclass(frozen=True, slots=True)
class _Stages:
    """The stages after the sandbox, as the options ask."""

    all: list[Stage]
    """In pipeline order."""
    judge: JudgeStage | SkippedJudge | None
    """The judge stage, when on (for the endpoint, model and rubrics used)."""


def _open_stages(
    config: RunConfig,
    inputs: RunInputs,
    stack: contextlib.ExitStack,
    environ: Mapping[str, str] | None = None,
) -> _Stages:
    stages: list[Stage] = []
    judge = None
    # Each stage is imported only when it is on: static costs ~0.08 s of start-up, the
    # judge (openai) ~0.4 s, which a --no-static --no-judge run should not pay.
    if config.static is not None:
        from gradebox.pipeline.static import default_stdlib_cache, open_static_stage  # noqa: PLC0415

        cache = config.static.cache_dir
        if cache is None:
            cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gradebox-mypy-")))
        static = open_static_stage(
            cache_dir=cache,
            jobs=config.jobs,
            lockfile=config.static.lockfile,
            policy_file=config.static.policy,
            stdlib_cache=None if environ is None else default_stdlib_cache(environ),
        )
        stack.callback(static.close)  # its warm workers, before the cache directory goes
        stages.append(static)
    if config.judge is not None:
        from gradebox.pipeline.judge import SkippedJudge, open_judge_stage  # noqa: PLC0415

        j = config.judge
        publics = [t.public for t in inputs.tasks.values() if t.public is not None]
        judge = open_judge_stage(
            j.environ,
            rubric_names=[p.rubric for p in publics if p.spec.strip()],
            model=j.model,
            rubric=j.rubric,
            cache_path=j.cache,
            no_cache=j.no_cache,
            concurrency=j.concurrency,
            repeat=j.repeat,
            extra_body=j.extra_body,
            max_output_tokens=j.max_tokens,
            probes=j.probes,
        )
        stack.callback(judge.close)
        if isinstance(judge, SkippedJudge):
            click.echo(f"gradebox grade: {judge.notice}", err=True)
        stages.append(judge)
    return _Stages(stages, judge)


def _grade(
    config: RunConfig,
    inputs: RunInputs,
    sandbox: Sandbox,
    grader: Grader,
    stages: _Stages,
    prepared: dict[str, Any],
) -> int:
    for p in inputs.problems:
        click.echo(f"skipped: {p}", err=True)
    used = _used(config, inputs, sandbox, stages) if config.run_dir is not None else None
    output = RunOutput(config, used.prints if used else None)
    plan = output.todo(inputs.samples)
    width = config.jobs
    if config.scheduler is not None:
        from gradebox.cluster.coordinator import ClusterSandbox  # noqa: PLC0415 - loads Dask

        if isinstance(sandbox, ClusterSandbox):  # task sets travel once, before any sample
            width = sandbox.in_flight
            sandbox.preload(grader.tasks)
    jobs = max(1, min(width, len(plan.todo)))
    if not sandbox.isolated:
        click.echo("WARNING: --isolation none: candidates run WITHOUT isolation", err=True)
    if plan.kept:
        click.echo(f"resuming: {len(plan.kept)} samples already graded", err=True)
    for line in plan.lines():
        click.echo(line, err=True)
    t0 = time.monotonic()
    with (
        sandbox,
        ThreadPoolExecutor(max_workers=jobs) as pool,
        tqdm(
            total=len(plan.todo),
            file=sys.stderr,
            unit="sample",
            disable=not sys.stderr.isatty(),
        ) as bar,
    ):

        def tick(_i: int, _row: dict[str, Any]) -> None:
            bar.update()

        fresh = grade_all(grader, plan.todo, pool, on_row=tick, stages=stages.all)
        output.write(inputs.samples, fresh)  # each row on disk as it comes; none held
    lost = getattr(sandbox, "lost", None)
    if lost:
        click.echo(f"gradebox grade: {lost}: run again with --run-dir to grade the rest", err=True)
    summary = summarize(output.rows())
    if stages.judge is not None:
        summary["judge"]["deterministic"] = stages.judge.endpoint_record()["deterministic"]
    summary["suite"] = prepared
    if output.run is not None:
        summary["resume"] = plan.record()
    if config.sarif or config.html or config.junit or output.run is not None:
        output.finish(
            summary,
            _reports(config, inputs),
            manifest=_manifest(config, sandbox, stages, used),
            order=inputs.samples.ids,
        )
    return _report(config, summary, seconds=time.monotonic() - t0, backend=sandbox.backend)


def _report(config: RunConfig, summary: dict[str, Any], *, seconds: float, backend: str) -> int:
    if config.as_json:
        click.echo(json.dumps(summary), err=True)
    else:
        click.echo(format_summary(summary, seconds=seconds, backend=backend), err=True)
    for line in warnings(summary):
        click.echo(f"gradebox grade: {line}", err=True)
    if summary["infra_errors"]:
        return 2
    if config.gate_exit and summary["passed"] != summary["samples"]:
        return 1
    return 0


def warnings(summary: Mapping[str, Any]) -> list[str]:
    """One line per thing the user must not miss at the end of a run."""
    out = []
    judge = summary["judge"]
    asked = judge["rows"] - judge["skipped"]
    if asked and judge["unavailable"] == asked:
        out.append(
            f"warning: the judge was unreachable on every call ({asked} unavailable): "
            "check GRADEBOX_JUDGE_BASE_URL and GRADEBOX_JUDGE_MODEL, or pass --no-judge"
        )
    prints = judge.get("fingerprints") or {}
    if len(prints) > 1:
        out.append(
            "warning: the judge's backend fingerprint changed within the run ("
            + ", ".join(f"{fp} on {n}" for fp, n in prints.items())
            + "): its replies may not be comparable"
        )
    if judge.get("deterministic") is False:
        out.append(
            "note: the judge model refused temperature 0, so it ran at the server's default "
            "temperature (non-deterministic; see judge.repeat on the rows)"
        )
    if summary["static"]["infra_errors"]:
        out.append(
            f"static tools failed on {summary['static']['infra_errors']} "
            "samples (see static.infra_error on the rows; their passes need review)"
        )
    if summary["infra_errors"]:
        out.append(f"{summary['infra_errors']} infrastructure errors (see infra_error on the rows)")
    return out


@dataclass(frozen=True, slots=True)
class _Used:
    """What the run used beyond its options: per-sample fingerprints and their sources."""

    prints: Fingerprints
    """Every sample's fingerprint."""
    judge: UsedJudge | None
    """The judge as resolved (endpoint, model, rubric digests)."""
    tools: dict[str, str | None]
    """Versions by fingerprint part."""


def _used(config: RunConfig, inputs: RunInputs, sandbox: Sandbox, stages: _Stages) -> _Used:
    files: dict[str, Path | None] = {
        "reference": config.reference,
        "properties": config.properties,
    }
    versions = static_tool_versions()
    tools = {"gradebox": versions["gradebox"]}
    if config.static is not None:
        files |= {"lockfile": config.static.lockfile, "static_policy": config.static.policy}
        tools |= {k: versions[k] for k in ("ruff", "mypy", "bandit")}
    # The workers said their version when they started: no extra interpreter to run.
    reported = sandbox.python_version
    tools["sandbox_python"] = (
        f"{sandbox.python} {reported}" if reported else sandbox_python_version(sandbox.python)
    )
    judge = None
    if stages.judge is not None:
        stage = stages.judge
        rubrics = {
            fn: stage.rubric_digest(t.public.rubric)
            for fn, t in inputs.tasks.items()
            if t.public is not None and t.public.spec.strip()
        }
        judge = UsedJudge(stage.base_url, stage.model, rubrics)
    prints = fingerprints(
        hidden=config.hidden,
        samples=config.samples,
        public=config.public,
        files=files,
        judge=judge,
        tools=tools,
        limits=config.limits,
        options=config.options(),
    )
    return _Used(prints, judge, tools)


def _manifest(
    config: RunConfig, sandbox: Sandbox, stages: _Stages, used: _Used | None
) -> dict[str, Any]:
    """Keyword arguments for ``RunDir.write_manifest``: the values actually used."""
    static = config.static
    judge = stages.judge
    digests: dict[str, str] = {}
    if judge is not None and used is not None and used.judge is not None:
        digests = {d.split("@", 1)[0]: d for d in used.judge.rubrics.values()}
    return {
        "inputs": {
            "hidden": config.hidden,
            "samples": config.samples,
            "public": config.public,
            "lockfile": static.lockfile if static else None,
            "static_policy": static.policy if static else None,
            "reference": config.reference,
            "properties": config.properties,
        },
        "isolation": sandbox.backend,
        "limits": sandbox.limits,
        "judge_model": judge.model if judge else None,
        "judge_base_url": judge.base_url if judge else None,
        "rubric_digests": digests,
        "judge_endpoint": judge.endpoint_record() if judge else None,
        "tools": {"sandbox_python": used.tools["sandbox_python"]} if used else {},
        "options": {**config.options(), "jobs": config.jobs, "scheduler": config.scheduler},
        "argv": list(config.argv),
    }


def _reports(config: RunConfig, inputs: RunInputs) -> Reports:
    """Extracted code (extracted again when a report asks) and case names."""

    def code(s: Sample) -> str | None:
        pub = inputs.tasks[s.fn].public
        ext = extract(
            reply=s.reply, code=s.code, fn=s.fn, helpers_allowed=bool(pub and pub.helpers_allowed)
        )
        return ext.code if ext.contract == "ok" else None

    return Reports(
        sources=LazySources(inputs.samples, code),
        case_names={fn: [c.name for c in t.cases] for fn, t in inputs.tasks.items()},
        static=config.static is not None,
        version=importlib.metadata.version("gradebox"),
    )


def _scheduler(value: str | None) -> str | None:
    """Check ``--scheduler`` (a usage error when malformed)."""
    from gradebox.cluster.address import parse_scheduler  # noqa: PLC0415

    if value is not None:
        try:
            parse_scheduler(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from exc
    return value


def _open_sandbox(config: RunConfig) -> Sandbox:
    """This machine's sandbox pool, or the cluster ``--scheduler`` names."""
    python = str(config.sandbox_python) if config.sandbox_python else None
    if config.scheduler is None:
        return open_sandbox(config.isolation, config.limits, workers=config.jobs, python=python)
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


def _extra_body(value: str | None) -> dict[str, Any] | None:
    """Read ``--judge-extra-body`` (a usage error when it is not a JSON object)."""
    if value is None:
        return None
    from judge.config import parse_extra_body  # noqa: PLC0415 - only with the option
    from judge.errors import JudgeConfigError  # noqa: PLC0415

    try:
        return parse_extra_body(value)
    except JudgeConfigError as exc:
        raise click.BadParameter(str(exc)) from exc


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
