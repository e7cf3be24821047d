"""``gradebox serve``: the HTTP service with all three layers."""

from __future__ import annotations

import dataclasses
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import judge_extra_body_option, limit_options, sandbox_python_option
from gradebox.errors import BadInput, SetupError
from gradebox.service.config import ServiceConfig
from gradebox.service.engine.auth import create_token
from gradebox.service.store import Store
from sandbox.types import Limits

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage

__all__ = ["serve"]

_DB = click.Path(path_type=Path, dir_okay=False)


@click.command(context_settings={"max_content_width": 100})
@click.option(
    "--db",
    type=_DB,
    default=Path("gradebox.sqlite"),
    show_default=True,
    help="SQLite file with tasks, runs, results and token hashes (created if missing).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="TCP port to listen on (0: any free port).",
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(1, 256),
    default=2,
    show_default=True,
    help="Sandbox workers: candidates graded at once.",
)
@click.option(
    "--sync-reserved-workers",
    type=click.IntRange(0, 256),
    default=1,
    show_default=True,
    help="Sandbox workers batch runs never take, so POST /v1/grade never waits behind a "
    "queued run (batch always keeps at least one; 0 shares every worker).",
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "bwrap", "none"]),
    default="auto",
    show_default=True,
    help="auto = bwrap or refuse (then /readyz stays 503).",
)
@sandbox_python_option
@click.option(
    "--admin-token",
    is_flag=True,
    help="If the database has no admin token, create one and print it once.",
)
@click.option(
    "--queue-size",
    type=click.IntRange(1, 100_000),
    default=64,
    show_default=True,
    help="Runs queued or running at once; more is 429.",
)
@click.option(
    "--max-body-mb",
    type=click.FloatRange(0.001, 1024),
    default=8.0,
    show_default=True,
    help="Largest request body (413 above).",
)
@click.option(
    "--max-samples",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    help="Most samples per run (413 above).",
)
@click.option(
    "--max-cases",
    type=click.IntRange(1),
    default=1_000,
    show_default=True,
    help="Most hidden cases per task (413 above).",
)
@click.option(
    "--deadline",
    type=click.FloatRange(0.1, 3600),
    default=30.0,
    show_default=True,
    help="Seconds for one POST /v1/grade (504 after).",
)
@click.option(
    "--per-token-concurrency",
    type=click.IntRange(1, 10_000),
    default=4,
    show_default=True,
    help="Synchronous grades in flight per token (429 above).",
)
@click.option(
    "--max-inflight",
    type=click.IntRange(1, 10_000),
    default=32,
    show_default=True,
    help="Synchronous grades in flight over all tokens (429 above).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(0.1, 3600),
    default=20.0,
    show_default=True,
    help="Seconds to receive a request body (408 after; a slow body never holds a grade slot).",
)
@click.option(
    "--parse-budget",
    type=click.FloatRange(0.01, 600),
    default=5.0,
    show_default=True,
    help=(
        "CPU seconds to parse and check a body, off the event loop (413 after; or after "
        "four times this of wall time, when the parse is starved that long)."
    ),
)
@click.option(
    "--front-budget",
    type=click.FloatRange(0.01, 600),
    default=5.0,
    show_default=True,
    help="Seconds for extract and gate of one sample (then needs_review, not graded).",
)
@click.option(
    "--front-workers",
    type=click.IntRange(1, 256),
    default=8,
    show_default=True,
    help="Processes for extract and gate; keep it above --per-token-concurrency, so one "
    "client's samples that are slow to check never hold them all.",
)
@click.option(
    "--front-inline-chars",
    type=click.IntRange(0, 4096),
    default=1024,
    show_default=True,
    help="Samples of at most this many characters (reply and code) are extracted and "
    "gated in the grading thread, not a worker process (0: all go to the workers).",
)
@click.option(
    "--max-code-chars",
    type=click.IntRange(1),
    default=128 * 1024,
    show_default=True,
    help="Longest reply or code of a sample (422 above).",
)
@click.option(
    "--token-queue-runs",
    type=click.IntRange(1),
    default=8,
    show_default=True,
    help="Runs one token may have queued or running (429 above).",
)
@click.option(
    "--token-queue-samples",
    type=click.IntRange(1),
    default=20_000,
    show_default=True,
    help="Ungraded samples one token may have queued (429 above).",
)
@click.option(
    "--rate-limit",
    type=click.FloatRange(0),
    default=600.0,
    show_default=True,
    help="Samples per minute one token may have graded per task, sustained; 0 = no limit. "
    "It bounds how fast a client can learn hidden cases through rows and timing (429).",
)
@click.option(
    "--rate-burst",
    type=click.IntRange(1),
    default=1_000,
    show_default=True,
    help="Samples of one task a token may have graded at once before --rate-limit applies.",
)
@limit_options
@click.option(
    "--static-sessions",
    type=click.IntRange(0, 64),
    default=2,
    show_default=True,
    help="Warm static sessions (ruff, mypy, bandit; ~2.5 s each to start, one mypy process "
    "each): samples checked at once. 0 switches the static layers off (rows: static null).",
)
@click.option(
    "--static-policy",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Static policy (TOML or JSON, fail_on / review_on) of tasks that set none "
    "(default: high-severity security findings and invented imports fail).",
)
@click.option(
    "--advisories",
    type=click.Path(path_type=Path),
    envvar="GRADEBOX_ADVISORIES",
    help="An OSV advisory directory or zip for the deps layer (known vulnerabilities of "
    "the versions candidates import); default: $GRADEBOX_ADVISORIES, else off.",
)
@click.option(
    "--lockfile",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="requirements.txt, uv.lock, poetry.lock or pylock.toml for tasks that register "
    "none (default: the installed environment stands in).",
)
@click.option(
    "--static-cache",
    type=click.Path(path_type=Path, file_okay=False),
    help="mypy's cache for the sessions, kept between starts (default: a scratch one).",
)
@click.option(
    "--no-judge",
    is_flag=True,
    help="No judge, even when GRADEBOX_JUDGE_BASE_URL or OPENAI_API_KEY is set.",
)
@click.option(
    "--judge-default",
    type=click.Choice(["off", "wait", "defer"]),
    default="off",
    show_default=True,
    help="Judge mode of a request that names none (each judgement is a call to the endpoint).",
)
@click.option("--judge-model", metavar="NAME", help="Judge model (default: $GRADEBOX_JUDGE_MODEL).")
@click.option(
    "--judge-cache",
    type=click.Path(path_type=Path, dir_okay=False),
    help="SQLite cache of judge replies (default: $XDG_CACHE_HOME/gradebox/judge.sqlite).",
)
@click.option("--no-judge-cache", is_flag=True, help="Neither read nor write the judge cache.")
@click.option(
    "--judge-concurrency",
    type=click.IntRange(1, 256),
    help="Judgements in flight at once, wait and defer together (default: the judge's own, "
    "8); they share one reply cache.",
)
@click.option(
    "--judge-repeat",
    type=click.IntRange(1, 25),
    help="Judge each sample N times and keep the majority, as gradebox grade does (default: "
    "1, or 3 when the model refuses temperature 0).",
)
@judge_extra_body_option(
    "Provider options merged into every judge request (as for gradebox grade)."
)
@click.option(
    "--judge-max-tokens",
    type=click.IntRange(1, 1_000_000),
    help="Cap on each judge reply's tokens (default: no cap).",
)
@click.option(
    "--judge-probes",
    is_flag=True,
    help="Also judge each candidate renamed, stripped of comments, reordered and with an "
    "injected 'answer match' comment, as gradebox grade --judge-probes does.",
)
@click.option(
    "--judge-backlog",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    help="Deferred judgements waiting or running at once; past it a deferred judgement is "
    "'unavailable' at once (a client grading faster than the endpoint answers cannot grow "
    "the queue without bound).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Least severe log lines written (to stderr), uvicorn's included.",
)
@click.option(
    "--log-format",
    type=click.Choice(["json", "text"]),
    default="json",
    show_default=True,
    help="json: one object a line with time, level, logger, message and the request id "
    "(also sent back as the X-Request-ID header); text: the same for a terminal.",
)
@click.option(
    "--scheduler",
    metavar="local:N|tcp://HOST:PORT",
    help="Run hidden cases on a Dask cluster (as grade --scheduler); --workers becomes the "
    "cluster's sandbox slots. SQLite stays the durable queue.",
)
@exit_codes
def serve(**o: Any) -> None:
    """Run the grading service: an HTTP API over the sandbox, with durable runs.

    State (tasks, runs, results, token hashes) lives in one SQLite file; runs
    left unfinished by a crash or a restart resume on start. SIGTERM stops
    accepting, lets samples in flight finish (or leaves them for the next
    start) and exits. /readyz is 503 until the sandbox passed its self-check.

    Each sample goes through the same pipeline as `gradebox grade`: hidden
    tests, then (per request) the static layers and the LLM judge, and one
    verdict. POST /v1/grade takes "static": true|false (default true while
    --static-sessions is above 0) and "judge": "wait"|"defer"|"off" (default
    --judge-default) in its body; POST /v1/runs takes ?static=...&judge=...
    With "defer" the row comes back at once with judge.status "pending"; read
    it again at GET /v1/grades/{id} (or in the run's results). The judge only
    annotates: a failing sample never passes. A task registers its own static
    policy, allowed rules (a task that asks for MD5 allows B324) and lockfile.

    The judge is configured here only, from GRADEBOX_JUDGE_BASE_URL,
    GRADEBOX_JUDGE_API_KEY and GRADEBOX_JUDGE_MODEL (or OPENAI_BASE_URL,
    OPENAI_API_KEY): a client can neither set nor read them. Without them the
    judge is off and a request asking for it is 422.

    Rubrics are data: PUT /v1/rubrics/{name} (admin) stores a rubric file's
    text after the same checks as rubric files; a task names its rubric.
    POST /v1/grades/{id}/feedback (and per sample of a run) records whether a
    suggestion was accepted; GET /v1/stats gives acceptance rates by verdict,
    judge verdict and static effect with Wilson 95% intervals. Admins manage
    tokens at /v1/tokens (expiry, task scope) or with `gradebox token`; a
    revoked or expired token fails on its next request, and its queued runs,
    gates and deferred judgements stop. A run is graded against the task and
    rubric revisions of its submission. Tokens share the layers, not their
    queues or caches: runs, gates and deferred judgements take turns between
    tokens, and each token has its own judge and mypy cache scope. Logs are
    JSON lines with a request id (sent back as X-Request-ID).

    What a grader token sees of a task's hidden cases is the task's disclosure,
    set by the admin in PUT /v1/tasks/{task}: "cases" (per-case outcomes), "counts"
    (the default: how many passed, failed, timed out) or "verdict". Write-only
    means never returned, not unlearnable: see the docs (Concepts, Disclosure).

    \b
    Example (a fresh database; prints an admin token once):
      gradebox serve --db /tmp/gradebox.sqlite --port 8000 --admin-token
    \b
    With a judge, deferred unless a request says otherwise:
      GRADEBOX_JUDGE_BASE_URL=http://127.0.0.1:8001/v1 GRADEBOX_JUDGE_MODEL=m \\
        gradebox serve --db /tmp/gradebox.sqlite --judge-default defer
    """  # noqa: D301 - click needs a real \b to keep the example as written
    import uvicorn  # noqa: PLC0415 - only this command needs the server

    from gradebox.service.app import create_app  # noqa: PLC0415
    from gradebox.service.logs import setup_logging  # noqa: PLC0415

    setup_logging(o["log_level"], o["log_format"])
    with ExitStack() as stack:
        config = _config(o)
        judge = _judge(o, stack)
        if o["admin_token"]:
            _print_admin_token(config.db)
        sandbox = None
        if o["scheduler"]:  # hidden cases run on a Dask cluster: gradebox/cluster/serve.py
            from gradebox.cluster.serve import open_service_cluster  # noqa: PLC0415 - Dask

            sandbox = open_service_cluster(o["scheduler"], config)
            stack.callback(sandbox.close)
            config = dataclasses.replace(config, workers=sandbox.slots)
        app = create_app(config, judge=judge, sandbox=sandbox)
        uvicorn.run(
            app,
            host=o["host"],
            port=o["port"],
            log_level=o["log_level"],
            log_config=None,  # our handler (setup_logging) writes uvicorn's lines too
            timeout_graceful_shutdown=int(config.shutdown_grace_s),
        )


def _judge(o: dict[str, Any], stack: ExitStack) -> JudgeStage | None:
    """The judge stage from the environment (read here only) and options; ``None``: off."""
    if o["no_judge"]:
        return None
    from gradebox.pipeline.judge import JudgeStage, open_judge_stage  # noqa: PLC0415 - openai

    stage = open_judge_stage(
        os.environ,
        rubric_names=["default"],
        model=o["judge_model"],
        cache_path=o["judge_cache"],
        no_cache=o["no_judge_cache"],
        concurrency=o["judge_concurrency"],
        repeat=o["judge_repeat"],
        extra_body=o["judge_extra_body"],
        max_output_tokens=o["judge_max_tokens"],
        probes=o["judge_probes"],
    )
    stack.callback(stage.close)
    if not isinstance(stage, JudgeStage):
        click.echo(f"gradebox serve: {stage.notice}", err=True)
        return None
    return stage


def _static_defaults(o: dict[str, Any]) -> dict[str, Any]:
    """The service-wide static policy and lockfile pins (tasks may set their own)."""
    from gradebox.pipeline.static import load_policy  # noqa: PLC0415 - only with static on
    from static.lockfiles import LockfileError, read_lockfile  # noqa: PLC0415

    out: dict[str, Any] = {
        "static_sessions": o["static_sessions"],
        "static_cache": o["static_cache"],
    }
    if o["static_policy"] is not None:
        out["static_policy"] = load_policy(o["static_policy"])
    if o.get("advisories") and o["static_sessions"] > 0:
        from gradebox.pipeline.static import open_advisories  # noqa: PLC0415

        # Indexed here, once, before the sessions start: a bad source stops the server.
        open_advisories(o["advisories"], o["static_cache"]).close()
        out["static_advisories"] = o["advisories"]
    if o["lockfile"] is not None:
        try:
            out["static_pins"] = read_lockfile(o["lockfile"])
        except LockfileError as exc:
            raise BadInput([str(exc)]) from exc
    if o["static_sessions"] > 0:
        from static.batch import StaticConfig, check_tools  # noqa: PLC0415
        from static.findings import ToolError  # noqa: PLC0415

        try:
            check_tools(StaticConfig())
        except ToolError as exc:
            raise SetupError(f"static layers: {exc} (or --static-sessions 0)") from exc
    return out


def _config(o: dict[str, Any]) -> ServiceConfig:
    limits = Limits(
        case_timeout_s=o["case_timeout"],
        candidate_timeout_s=o["candidate_timeout"],
        memory_mb=o["memory_mb"],
        tree_limits=not o["no_tree_limits"],
    )
    return ServiceConfig(
        db=o["db"],
        isolation=o["isolation"],
        workers=o["workers"],
        sync_reserved_workers=o["sync_reserved_workers"],
        sandbox_python=str(o["sandbox_python"]) if o["sandbox_python"] else None,
        limits=limits,
        queue_size=o["queue_size"],
        max_body_bytes=int(o["max_body_mb"] * 1024 * 1024),
        max_samples_per_run=o["max_samples"],
        max_cases_per_task=o["max_cases"],
        grade_deadline_s=o["deadline"],
        per_token_concurrency=o["per_token_concurrency"],
        max_inflight_grades=o["max_inflight"],
        body_timeout_s=o["body_timeout"],
        parse_budget_s=o["parse_budget"],
        front_budget_s=o["front_budget"],
        front_workers=o["front_workers"],
        front_inline_chars=o["front_inline_chars"],
        max_code_chars=o["max_code_chars"],
        token_queue_runs=o["token_queue_runs"],
        token_queue_samples=o["token_queue_samples"],
        rate_per_minute=o["rate_limit"],
        rate_burst=o["rate_burst"],
        judge_default=o["judge_default"],
        judge_backlog=o["judge_backlog"],
        **_static_defaults(o),
    )


def _print_admin_token(db: Path) -> None:
    store = Store(db)
    try:
        if store.has_admin():
            click.echo(
                f"gradebox serve: {db} already has an admin token (not shown again)", err=True
            )
            return
        click.echo(f"admin token (shown once): {create_token(store, 'admin')}")
        sys.stdout.flush()
    finally:
        store.close()
