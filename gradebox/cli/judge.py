"""``gradebox judge probe|agree``: what the judge endpoint can do, and how far to trust it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from gradebox.cli.errors import EXIT_FAILED, EXIT_OK, exit_codes
from gradebox.cli.options import json_option, judge_extra_body_option
from gradebox.errors import SetupError

__all__ = ["judge"]

_PATH = click.Path(path_type=Path, dir_okay=False)


@click.group(context_settings={"max_content_width": 100})
def judge() -> None:
    """Measure the LLM judge: probe its endpoint, compare it with people's labels.

    \b
    Example:
      gradebox judge probe --json
      gradebox judge agree --labels labels.jsonl runs/today
    """  # noqa: D301 - click needs a real \b to keep the example as written


@judge.command(context_settings={"max_content_width": 100})
@click.option(
    "--judge-model", "model", metavar="NAME", help="Model (default: $GRADEBOX_JUDGE_MODEL)."
)
@judge_extra_body_option(
    "Provider options merged into every request (as for gradebox grade).", "extra_body"
)
@click.option(
    "--judge-max-tokens",
    "max_tokens",
    type=click.IntRange(1, 1_000_000),
    help="Cap on each reply's tokens, to find out which parameter name the endpoint takes.",
)
@click.option(
    "--judge-cache",
    "cache",
    type=_PATH,
    help="Where to keep the finding for later runs (default: gradebox grade's judge cache).",
)
@click.option("--no-judge-cache", "no_cache", is_flag=True, help="Do not keep the finding.")
@click.option(
    "--judge-rubric",
    "rubric",
    metavar="NAME|PATH",
    help="Probe with this rubric's prompt, as gradebox grade --judge-rubric does (default: "
    "the built-in 'default'). A slow local server then spends the probe on the prompt it "
    "will answer, and grade finds the finding in the cache.",
)
@json_option("the probe report")
@exit_codes
def probe(
    model: str | None,
    extra_body: dict[str, Any] | None,
    max_tokens: int | None,
    cache: Path | None,
    no_cache: bool,
    rubric: str | None,
    as_json: bool,
) -> None:
    """Find out what the judge endpoint can do, and keep it for the next runs.

    Asks one fixed item (never a candidate) on each rung of the ladder until a
    reply validates against the reply schema: strict json_schema, json_schema
    without strict, json_object with the schema (llama-cpp-python's form), json_object,
    then the schema in the prompt only. An error saying a rung's format is not
    accepted (any status: llama-cpp-python answers 500) moves to the next rung; the
    server's kind is named when it tells (models' owned_by, headers, errors). A refusal of
    temperature 0 (reasoning models) is detected from the error and the model is
    asked at its default temperature: runs are then non-deterministic and judge
    each sample 3 times unless --judge-repeat says otherwise. The endpoint comes
    from GRADEBOX_JUDGE_BASE_URL / GRADEBOX_JUDGE_MODEL (or OPENAI_*), as for grade.

    Exit 0 when some rung validated, 1 when none did (replies will be
    needs_review), 2 when the endpoint is not configured or cannot be reached.

    \b
    Example:
      GRADEBOX_JUDGE_BASE_URL=http://127.0.0.1:8080/v1 GRADEBOX_JUDGE_MODEL=qwen \\
        gradebox judge probe --json
    """  # noqa: D301 - click needs a real \b to keep the example as written
    from gradebox.pipeline.judge import SkippedJudge, open_judge_stage  # noqa: PLC0415
    from judge.errors import EndpointError  # noqa: PLC0415

    stage = open_judge_stage(
        os.environ,
        rubric_names=["default"],
        rubric=rubric,
        model=model,
        cache_path=cache,
        no_cache=no_cache,
        extra_body=extra_body,
        max_output_tokens=max_tokens,
    )
    if isinstance(stage, SkippedJudge):
        raise SetupError(stage.notice)
    try:
        report = stage.judge.probe(refresh=True)
    except EndpointError as exc:
        raise SetupError(f"the judge endpoint cannot be probed: {exc}") from exc
    finally:
        stage.close()
    data = report.to_json()
    data["repeat"] = 1 if report.capabilities.deterministic else 3
    if as_json:
        click.echo(json.dumps(data))
    else:
        click.echo(_probe_text(data))
    sys.exit(EXIT_OK if report.validated else EXIT_FAILED)


def _probe_text(data: dict[str, Any]) -> str:
    caps = data["capabilities"]
    lines = [f"judge endpoint {data['base_url']} model {data['model']}"]
    lines += [f"  {t['rung']:<22} {t['outcome']:<10} {t['detail']}" for t in data["trials"]]
    temperature = (
        "temperature 0 (deterministic)"
        if caps["deterministic"]
        else "the server's default temperature (NOT deterministic: 3 repeats by default)"
    )
    verdict = "validated" if data["validated"] else "NO rung validated: rows will be needs_review"
    lines.append(
        f"rung {caps['rung']} ({verdict}); {temperature}; token cap as {caps['token_param']}"
    )
    lines += [f"  adjusted: {note}" for note in data["adjustments"]]
    if data.get("server"):
        lines.append(f"  server: {data['server']} ({data['server_evidence']})")
    if data["system_fingerprints"]:
        lines.append("  system_fingerprint: " + ", ".join(data["system_fingerprints"]))
    return "\n".join(lines)


@judge.command(context_settings={"max_content_width": 100})
@click.argument("results", type=click.Path(path_type=Path))
@click.option(
    "--labels",
    "labels_path",
    type=_PATH,
    required=True,
    help='labels.jsonl: {"id": ..., "verdict": "match"|"mismatch", "scores": {...}} per line.',
)
@click.option(
    "--min-kappa",
    type=click.FloatRange(-1.0, 1.0),
    help="Exit 1 when Cohen's kappa of the verdicts is below this, or cannot be computed.",
)
@json_option("the agreement figures")
@exit_codes
def agree(results: Path, labels_path: Path, min_kappa: float | None, as_json: bool) -> None:
    """Compare the judge in RESULTS (results.jsonl or a run dir) with people's labels.

    Prints the confusion table of the judge's intent verdict against the labels,
    Cohen's kappa and Scott's pi with bootstrap 95% intervals, the judge's
    leniency P(judge match | people: mismatch) and strictness, and per criterion
    exact agreement and quadratic-weighted kappa. Below 10 items a chance-corrected
    figure is "too few items", not a number. When RESULTS was judged with
    --judge-repeat, also the judge's own consistency: the verdict flip rate per
    judgement (minority votes / all votes: how often one judgement disagrees with
    its item's majority) and per item (items whose repeated verdicts disagree /
    items: grows with the number of repeats), each with a Wilson 95% interval.

    Exit 0, or 1 with --min-kappa when kappa is below it (or undefined); 2 for a
    bad file (each bad line as file:line).

    \b
    Example:
      gradebox judge agree --labels labels.jsonl runs/today --min-kappa 0.6
    """  # noqa: D301 - click needs a real \b to keep the example as written
    from gradebox.judging import flip_rates  # noqa: PLC0415
    from gradebox.judging.labels import compare, read_labels  # noqa: PLC0415
    from gradebox.runs.rundir import read_results  # noqa: PLC0415

    labels = read_labels(labels_path)
    rows = read_results(results)
    found = compare(labels, rows)
    flips = flip_rates(rows)
    data = {**found.to_json(), "flips": None if flips is None else flips.to_json()}
    if as_json:
        click.echo(json.dumps(data))
    else:
        click.echo(_agree_text(data))
    kappa = found.verdicts.kappa
    if min_kappa is not None and (kappa is None or kappa < min_kappa):
        sys.exit(EXIT_FAILED)


def _fig(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _agree_text(data: dict[str, Any]) -> str:
    v = data["verdicts"]
    (mm, mx), (xm, xx) = v["table"]
    lines = [
        f"judge vs people: {v['n']} verdicts compared ({data['labels']} labels; "
        f"{data['unscored']} without a scored judgement, {len(data['unknown_ids'])} ids "
        "not in RESULTS)",
        "                  people match  people mismatch",
        f"  judge match     {mm:>12}  {mx:>15}",
        f"  judge mismatch  {xm:>12}  {xx:>15}",
    ]
    if v["note"]:
        lines.append(f"  kappa, pi: {v['note']}")
    else:
        lines.append(
            f"  kappa {_fig(v['kappa'], v['kappa_ci'])}   pi {_fig(v['pi'], v['pi_ci'])}   "
            f"observed {v['observed']:.2f}"
        )
    for name, what in (
        ("leniency", "match | people: mismatch"),
        ("strictness", "mismatch | people: match"),
    ):
        r = data[name]
        if r:
            lines.append(f"  {name} P(judge {what}) {r['k']}/{r['n']} {_fig(r['rate'], r['ci'])}")
    if data["criteria"]:
        lines.append("  per criterion (exact agreement; quadratic-weighted kappa):")
    for c in data["criteria"]:
        exact = c["exact"]
        exact_text = "n/a" if exact is None else f"{exact['rate']:.2f}"
        kappa = c["note"] or _fig(c["weighted_kappa"], c["weighted_kappa_ci"])
        lines.append(f"    {c['criterion']:<10} n={c['n']:<4} exact {exact_text}  kappa_w {kappa}")
    if data["unknown_ids"]:
        lines.append("  not in RESULTS: " + ", ".join(data["unknown_ids"]))
    return "\n".join(lines + _flip_text(data.get("flips")))


def _flip_text(flips: dict[str, Any] | None) -> list[str]:
    if not flips:
        return []
    lines = [f"judge vs itself (--judge-repeat): {flips['items']} items judged repeatedly"]
    for key, what in (
        ("verdict_flip_rate_per_judgement", "verdict flip rate per judgement (minority/all votes)"),
        ("verdict_flip_rate_per_item", "verdict flip rate per item (items that flipped/items)"),
    ):
        r = flips.get(key)
        if r:
            lines.append(f"  {what} {r['k']}/{r['n']} {_fig(r['rate'], r['ci'])}")
    return lines
