"""``gradebox token create|list|revoke``: the service's bearer tokens."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from gradebox.service.auth import ROLES, create_token
from gradebox.service.store import Store

__all__ = ["token"]

_DB = click.Path(path_type=Path, dir_okay=False)

_token_db = click.option(
    "--db",
    type=_DB,
    default=Path("gradebox.sqlite"),
    show_default=True,
    help="The service's SQLite file.",
)
"""``--db`` of every ``token`` command."""


@click.group(context_settings={"max_content_width": 100})
def token() -> None:
    """Manage the service's bearer tokens (stored hashed; shown once)."""


@token.command("create")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    required=True,
    help="admin: register tasks, read everything. grader: grade, read own runs.",
)
@_token_db
@click.option("--json", "as_json", is_flag=True, help='Print {"token": ..., "role": ...}.')
def create(role: str, db: Path, *, as_json: bool) -> None:
    """Create a token and print it once; only its SHA-256 is stored.

    \b
    Example:
      gradebox token create --role grader --db /tmp/gradebox.sqlite
    """  # noqa: D301 - click needs a real \b to keep the example as written
    store = Store(db)
    try:
        value = create_token(store, role)
    finally:
        store.close()
    click.echo(json.dumps({"token": value, "role": role}) if as_json else value)


@token.command("list")
@_token_db
@click.option("--json", "as_json", is_flag=True, help='One {"id", "role", "created"} a line.')
def list_tokens(db: Path, *, as_json: bool) -> None:
    """List tokens by id and role (the tokens themselves are never stored).

    \b
    Example:
      gradebox token list --db /tmp/gradebox.sqlite
    """  # noqa: D301 - click needs a real \b to keep the example as written
    store = Store(db)
    try:
        rows = store.tokens()
    finally:
        store.close()
    for token_id, role, created in rows:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
        line = {"id": token_id, "role": role, "created": when}
        click.echo(json.dumps(line) if as_json else f"{token_id}  {role:<6}  {when}")


@token.command("revoke")
@click.argument("token_id")
@_token_db
def revoke(token_id: str, db: Path) -> None:
    """Revoke a token by its id (the part after ``gbx_``): its next request is a 401.

    Exit 2 when no such token exists. A running server sees the change at once:
    every request reads the token from the database.

    \b
    Example:
      gradebox token revoke 0123456789abcdef --db /tmp/gradebox.sqlite
    """  # noqa: D301 - click needs a real \b to keep the example as written
    store = Store(db)
    try:
        found = store.revoke_token(token_id)
    finally:
        store.close()
    if not found:
        raise click.UsageError(f"no token with id {token_id!r} (see `gradebox token list`)")
    click.echo(f"revoked {token_id}")
