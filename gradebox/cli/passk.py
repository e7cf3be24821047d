"""``gradebox passk``: pass@k per task and averaged, from a results file or gate rows."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import json_option, ks_option
from gradebox.runs.passk import estimate, format_passk
from gradebox.runs.rundir import read_scored_rows

__all__ = ["passk"]


@click.command(context_settings={"max_content_width": 100})
@click.argument("results", type=click.Path(path_type=Path))
@ks_option("1,5,10")
@json_option("the report")
@click.option(
    "--exclude-infra",
    is_flag=True,
    help="Leave samples with an infrastructure error out of n (they are still counted).",
)
@exit_codes
def passk(results: Path, ks: tuple[int, ...], as_json: bool, exclude_infra: bool) -> None:
    """pass@k per task and averaged over tasks, from RESULTS (results.jsonl or a run dir).

    Uses the unbiased estimator 1 - C(n-c, k) / C(n, k), where a task has n
    samples of which c pass. Samples are grouped by their row's task (its id;
    fn in rows from before task ids). A task with fewer than k samples has no
    pass@k (n/a in the table, null in JSON), and the mean over tasks says how
    many tasks it covers. Samples with timeouts and infrastructure errors are
    counted per task.

    RESULTS may also be the rows of gradebox gate (gate.jsonl): one row per
    prediction, grouped by instance id; a prediction passes when its verdict
    is pass.

    Exit 0 on success, 2 for a bad file (each bad line as file:line).

    \b
    Example:
      gradebox passk results.jsonl -k 1,5,10
      gradebox passk runs/nightly --json --exclude-infra
      gradebox passk gate.jsonl -k 1,5
    """  # noqa: D301 (click needs a real \b, not a raw string)
    rows = read_scored_rows(results)
    report = estimate(rows, ks, exclude_infra=exclude_infra)
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(format_passk(report))
