"""``gradebox grade`` once its sandbox is starting: inputs, stages, grading, reports.

:func:`gradebox.cli.grade.run` starts the sandbox's workers first and imports this
module while they boot, so the grading pipeline's imports, the input checks and
the later stages' set-up overlap the workers' start and self-check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradebox.model import Sample
from gradebox.pipeline.core import Stage
from gradebox.pipeline.extract import extract
from gradebox.pipeline.tests import GradeConfig, Grader, grade_all
from gradebox.runs.config import RunConfig, sandbox_python_version, static_tool_versions
from gradebox.runs.inputs import RunInputs, load_inputs
from gradebox.runs.output import LazySources, Reports, RunOutput
from gradebox.runs.summary import format_summary, summarize
from sandbox.runner import Sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage, SkippedJudge
    from gradebox.runs.fingerprint import Fingerprints, UsedJudge

__all__ = ["Stages", "grade", "prepare", "warnings"]


def prepare(
    config: RunConfig, stack: contextlib.ExitStack, environ: Mapping[str, str] | None = None
) -> tuple[RunInputs, Stages]:
    """Read and check the inputs, then open the stages after the sandbox.

    Raises:
        BadInput: Bad input files (nothing is graded).
        SetupError: A stage cannot start.
    """
    inputs = load_inputs(
        config.hidden,
        config.samples,
        config.public,
        skip_bad_lines=config.skip_bad_lines,
    )
    return inputs, _open_stages(config, inputs, stack, environ)


def grade(config: RunConfig, inputs: RunInputs, stages: Stages, sandbox: Sandbox) -> int:
    """Grade every sample in ``sandbox`` and write rows, reports and the summary.

    The sandbox is closed at the end (and on any error).

    Returns:
        The exit code.

    Raises:
        BadInput: A bad reference or properties file.
    """
    gconfig = GradeConfig(
        limits=config.limits, banned_imports=config.banned_imports, explain=config.explain
    )
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
class Stages:
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
) -> Stages:
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
            advisories=config.static.advisories,
            advisories_cache=None if environ is None else default_stdlib_cache(environ).parent,
        )
        for line in static.advisories_notes():
            click.echo(f"gradebox grade: {line}", err=True)
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
    return Stages(stages, judge)


def _grade(
    config: RunConfig,
    inputs: RunInputs,
    sandbox: Sandbox,
    grader: Grader,
    stages: Stages,
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
        _progress(len(plan.todo)) as tick,
    ):
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


def _used(config: RunConfig, inputs: RunInputs, sandbox: Sandbox, stages: Stages) -> _Used:
    # Loaded here: only a run with --run-dir fingerprints its samples.
    from gradebox.runs.fingerprint import UsedJudge, fingerprints  # noqa: PLC0415

    files: dict[str, Path | None] = {
        "reference": config.reference,
        "properties": config.properties,
    }
    versions = static_tool_versions()
    tools = {"gradebox": versions["gradebox"]}
    if config.static is not None:
        files |= {"lockfile": config.static.lockfile, "static_policy": config.static.policy}
        tools |= {k: versions[k] for k in ("ruff", "mypy", "bandit")}
        # The advisory snapshot in use (date and digest), only when the deps layer is on.
        used_advisories = [getattr(s, "advisories_used", None) for s in stages.all]
        tools |= {"advisories": a for a in used_advisories if a}  # noqa: B035 - one at most
    # The workers said their version when they started: no extra interpreter to run.
    reported = sandbox.python_version
    tools["sandbox_python"] = (
        f"{sandbox.python} {reported}" if reported else sandbox_python_version(sandbox.python)
    )
    judge = None
    if stages.judge is not None:
        stage = stages.judge
        rubrics = {
            tid: stage.rubric_digest(t.public.rubric)
            for tid, t in inputs.tasks.items()
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
    config: RunConfig, sandbox: Sandbox, stages: Stages, used: _Used | None
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
        "tools": {k: v for k, v in used.tools.items() if k in ("sandbox_python", "advisories")}
        if used
        else {},
        "options": {**config.options(), "jobs": config.jobs, "scheduler": config.scheduler},
        "argv": list(config.argv),
    }


def _reports(config: RunConfig, inputs: RunInputs) -> Reports:
    """Extracted code (extracted again when a report asks) and case names."""

    def code(s: Sample) -> str | None:
        task = inputs.tasks[s.task]
        pub = task.public
        ext = extract(
            reply=s.reply,
            code=s.code,
            fn=task.fn,
            helpers_allowed=bool(pub and pub.helpers_allowed),
        )
        return ext.code if ext.contract == "ok" else None

    return Reports(
        sources=LazySources(inputs.samples, code),
        case_names={tid: [c.name for c in t.cases] for tid, t in inputs.tasks.items()},
        static=config.static is not None,
        version=_version(),
    )


@contextlib.contextmanager
def _closing_on_error(sandbox: Sandbox) -> Iterator[None]:
    try:
        yield
    except BaseException:
        sandbox.close()
        raise


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[int, dict[str, Any]], None] | None]:
    """A progress bar's ``on_row`` on a terminal; ``None`` (no bar, nothing loaded) elsewhere."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm  # noqa: PLC0415 - ~20 ms of imports that only a terminal needs

    with tqdm(total=total, file=sys.stderr, unit="sample") as bar:

        def tick(_i: int, _row: dict[str, Any]) -> None:
            bar.update()

        yield tick


def _version() -> str:
    import importlib.metadata  # noqa: PLC0415 - ~30 ms of imports, for the reports only

    return importlib.metadata.version("gradebox")
