"""``gradebox sample``: n completions per task from your own model, as samples.jsonl."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradebox.cli.errors import EXIT_ERROR, exit_codes
from gradebox.cli.options import json_option
from gradebox.errors import BadInput

__all__ = ["sample"]

if TYPE_CHECKING:
    from sandbox.types import PublicTask

_PATH = click.Path(path_type=Path, dir_okay=False)


@click.command(context_settings={"max_content_width": 100})
@click.option("--public", "public_path", type=_PATH, required=True, help="public.jsonl: the tasks.")
@click.option(
    "--out", type=_PATH, required=True, help="samples.jsonl to fill (kept and resumed if present)."
)
@click.option(
    "-n",
    "n",
    type=click.IntRange(1, 10_000),
    default=1,
    show_default=True,
    help="Completions per task.",
)
@click.option("--model", metavar="NAME", help="Model to sample (default: $GRADEBOX_SAMPLE_MODEL).")
@click.option(
    "--tasks", metavar="LIST", help="Comma-separated task names to sample (default: every task)."
)
@click.option(
    "--prompt-template",
    "template_path",
    type=_PATH,
    help="A string.Template file with $fn, $task, $spec, $signature, $examples "
    "(default: the task's spec and signature, asking for one ```python block).",
)
@click.option("--temperature", type=click.FloatRange(0, 2), default=0.8, show_default=True)
@click.option("--top-p", "top_p", type=click.FloatRange(0, 1), help="Nucleus sampling.")
@click.option("--max-tokens", type=click.IntRange(1, 1_000_000), default=512, show_default=True)
@click.option("--stop", multiple=True, metavar="TEXT", help="A stop sequence (repeatable).")
@click.option(
    "--seed", type=int, help="Completion i is asked with seed + i (reproducible, not n copies)."
)
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    help="Seconds per request.",
)
@json_option("the run's counts")
@exit_codes
def sample(
    public_path: Path,
    out: Path,
    n: int,
    model: str | None,
    tasks: str | None,
    template_path: Path | None,
    temperature: float,
    top_p: float | None,
    max_tokens: int,
    stop: tuple[str, ...],
    seed: int | None,
    concurrency: int,
    timeout_s: float,
    as_json: bool,
) -> None:
    """Sample N completions per task from an OpenAI-compatible endpoint into OUT.

    The endpoint is the judge's (GRADEBOX_JUDGE_BASE_URL, GRADEBOX_JUDGE_API_KEY,
    or OPENAI_*); the model is --model or GRADEBOX_SAMPLE_MODEL. Each task's
    prompt is its public spec and signature (public.jsonl only: hidden cases are
    never read). The default template:

    \b
      Write the Python function `$fn`.
      Specification:
      $spec
      Signature:
      $signature
      Reply with the complete function in one ```python fenced code block.

    Each completion is a row {"id": "<task>#<i>", "fn": ..., "reply": ..., "model":
    ..., "meta": {...}}, written and fsync-ed as it arrives: a re-run asks only
    for the ids OUT lacks (none: no request), and a killed run loses nothing.
    Transient failures (429, 5xx, timeouts) are retried as the judge retries them.

    Exit 0 when OUT holds every completion, 2 when some could not be had (run
    again to fill them), the endpoint refused, or an input is bad.

    \b
    Example:
      GRADEBOX_JUDGE_BASE_URL=http://127.0.0.1:8000/v1 \\
        gradebox sample --public public.jsonl --out samples.jsonl -n 10 --model my-model
      gradebox grade --hidden hidden.jsonl --public public.jsonl \\
        --samples samples.jsonl --out results.jsonl
      gradebox passk results.jsonl -k 1,10
    """  # noqa: D301 - click needs a real \b to keep the example as written
    from gradebox.sampling import SampleConfig, Sampler, SampleStore  # noqa: PLC0415

    chosen = _tasks(public_path, tasks)
    template = None
    if template_path is not None:
        try:
            template = template_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput([f"{template_path}: cannot read the template: {exc}"]) from exc
    options: dict[str, Any] = {
        "n": n,
        "temperature": temperature,
        "top_p": top_p,
        "max_tokens": max_tokens,
        "stop": stop,
        "seed": seed,
        "concurrency": concurrency,
        "timeout_s": timeout_s,
    }
    if template is not None:
        options["template"] = template
    config = SampleConfig.from_env(os.environ, model=model, **options)
    sampler = Sampler(config)
    try:
        with SampleStore(out) as store:
            report = sampler.run(chosen, store)
    finally:
        sampler.close()
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(
            f"sampled {report.written} new completion(s) of {report.wanted} "
            f"({report.present} already in {out}; {len(report.failed)} failed; "
            f"{report.requests} request(s), {report.seconds:.1f}s)",
            err=True,
        )
        for sample_id, why in report.failed[:20]:
            click.echo(f"  {sample_id}: {why}", err=True)
    if report.failed:
        sys.exit(EXIT_ERROR)


def _tasks(public_path: Path, names: str | None) -> list[PublicTask]:
    """The public tasks to sample, in file order (only those named, when ``--tasks``)."""
    from gradebox.sampling import task_name  # noqa: PLC0415
    from sandbox.cases import load_public  # noqa: PLC0415
    from sandbox.errors import InputError  # noqa: PLC0415

    try:
        loaded, _ = load_public(public_path)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    by_name = {task_name(task): task for task in loaded.values()}
    if names is None:
        return list(by_name.values())
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise BadInput([f"--tasks: {unknown} not in {public_path}"])
    return [by_name[name] for name in dict.fromkeys(wanted)]
