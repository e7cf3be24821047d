"""``gradebox diff``: compare two runs; exit 1 when anything newly fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from gradebox.cli.errors import exit_codes
from gradebox.cli.options import json_option, ks_option
from gradebox.errors import BadInput
from gradebox.runs.diff import diff_runs, format_diff
from gradebox.runs.rundir import read_results

__all__ = ["diff"]


@click.command(context_settings={"max_content_width": 100})
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@ks_option("1,5")
@json_option("the comparison")
@exit_codes
def diff(old: Path, new: Path, ks: tuple[int, ...], as_json: bool) -> None:
    """Compare two runs (results.jsonl files or run dirs), matching samples by id.

    Lists samples that newly fail, newly pass, still fail on a different set of
    hidden cases, or changed verdict or reason; samples added or removed; and
    pass@k per task and averaged, old -> new.

    Exit 1 when any sample newly fails (its verdict is now 'fail' and was not),
    so CI can gate on a regression; 0 otherwise; 2 for a bad file (each bad
    line as file:line).

    \b
    Example:
      gradebox diff runs/yesterday/results.jsonl runs/today/results.jsonl
      gradebox diff old.jsonl new.jsonl -k 1,5 --json
    """  # noqa: D301 (click needs a real \b, not a raw string)
    problems: list[str] = []
    rows = []
    for path in (old, new):
        try:
            rows.append(read_results(path))
        except BadInput as exc:
            problems += exc.problems
    if problems:
        raise BadInput(problems)
    result = diff_runs(rows[0], rows[1], ks)
    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        click.echo(format_diff(result, old_name=str(old), new_name=str(new)))
    sys.exit(1 if result.regressed else 0)
