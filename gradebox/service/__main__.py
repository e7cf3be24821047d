"""``python -m gradebox.service``: serve, token and openapi without the main CLI."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gradebox.cli.serve import serve
from gradebox.cli.token import token

__all__ = ["main"]


@click.group()
def main() -> None:
    """The grading service's commands."""


@main.command("openapi")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Default: stdout.")
def openapi(out: Path | None) -> None:
    """Print (or write) the service's OpenAPI schema, as committed in openapi.json."""
    from gradebox.service.app import create_app  # noqa: PLC0415
    from gradebox.service.config import ServiceConfig  # noqa: PLC0415

    schema = create_app(ServiceConfig(db=Path("unused.sqlite"))).openapi()
    text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")


main.add_command(serve)
main.add_command(token)

if __name__ == "__main__":
    main()
