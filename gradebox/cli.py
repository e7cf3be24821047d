"""The ``gradebox`` command line: a thin layer over the library.

Each command lives in its own module and only parses options, calls the
library and maps library errors to exit codes: 0 ok, 1 gate or check failed,
2 usage, input or infrastructure error.
"""

from __future__ import annotations

import click

from gradebox.cmd_diff import diff
from gradebox.cmd_grade import grade
from gradebox.cmd_passk import passk
from gradebox.cmd_suite import suite

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="gradebox")
def cli() -> None:
    """Grade AI-generated Python code: hidden tests in a sandbox first.

    \b
    Example:
      gradebox grade --hidden examples/hidden.jsonl --public examples/public.jsonl \\
                     --samples examples/samples.jsonl --out results.jsonl
    """  # noqa: D301 - click needs a real \b to keep the example as written


cli.add_command(grade)
cli.add_command(passk)
cli.add_command(diff)
cli.add_command(suite)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="gradebox")
