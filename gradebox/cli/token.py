"""``gradebox token create|list|revoke``: the service's bearer tokens."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path

import click

from gradebox.model import task_id_problem
from gradebox.service.auth import MAX_EXPIRY_S, ROLES, create_token
from gradebox.service.store import Store, iso_time

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
    help="admin: register tasks, rubrics and tokens, read everything. grader: grade, read "
    "own runs.",
)
@click.option(
    "--expires",
    metavar="WHEN",
    help="When the token stops working: a duration from now (90m, 12h, 30d) or an ISO 8601 "
    "time with a zone (2027-01-01T00:00:00Z). Default: never.",
)
@click.option(
    "--task",
    "tasks",
    multiple=True,
    metavar="TASK",
    help="A task the token may grade (repeat for more). Default: every task. Any other task "
    "answers exactly as a task that does not exist.",
)
@_token_db
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"token", "role", "expires", "tasks"}.'
)
def create(
    role: str, expires: str | None, tasks: tuple[str, ...], db: Path, *, as_json: bool
) -> None:
    """Create a token and print it once; only its SHA-256 is stored.

    \b
    Example:
      gradebox token create --role grader --db /tmp/gradebox.sqlite
      gradebox token create --role grader --expires 30d --task is_even --db /tmp/gradebox.sqlite
    """  # noqa: D301 - click needs a real \b to keep the example as written
    when = parse_expiry(expires, now=time.time()) if expires is not None else None
    for task in tasks:
        if task_id_problem(task) is not None:
            raise click.BadParameter(f"{task!r} is not a task id", param_hint="--task")
    store = Store(db)
    try:
        value = create_token(store, role, expires=when, tasks=tasks or None)
    finally:
        store.close()
    if as_json:
        line = {
            "token": value,
            "role": role,
            "expires": None if when is None else iso_time(when),
            "tasks": sorted(set(tasks)) or None,
        }
        click.echo(json.dumps(line))
    else:
        click.echo(value)


@token.command("list")
@_token_db
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='One {"id", "role", "created", "expires", "tasks"} a line.',
)
def list_tokens(db: Path, *, as_json: bool) -> None:
    """List tokens by id, role, creation, expiry and tasks (never a secret).

    \b
    Example:
      gradebox token list --db /tmp/gradebox.sqlite
    """  # noqa: D301 - click needs a real \b to keep the example as written
    store = Store(db)
    try:
        rows = store.tokens()
    finally:
        store.close()
    now = time.time()
    for info in rows:
        line = info.to_json()
        if as_json:
            click.echo(json.dumps(line))
            continue
        expiry = "never" if info.expires is None else line["expires"]
        if info.expires is not None and info.expires <= now:
            expiry += " (expired)"
        scope = "all tasks" if info.tasks is None else ",".join(info.tasks)
        click.echo(f"{info.id}  {info.role:<6}  {line['created']}  expires {expiry}  {scope}")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_expiry(text: str, *, now: float) -> float:
    """``--expires``: a duration (``90m``, ``12h``, ``30d``) or an ISO 8601 time with a zone.

    Raises:
        click.BadParameter: Neither, or not in the future, or more than ten years ahead.
    """
    match = _DURATION.fullmatch(text.strip())
    try:
        if match:
            when = now + float(match.group(1)) * _UNIT_S[match.group(2)]
        else:
            parsed = datetime.fromisoformat(text.strip())
            if parsed.tzinfo is None:
                raise ValueError("no zone")
            when = parsed.timestamp()
    except ValueError as exc:
        raise click.BadParameter(
            f"{text!r}: give a duration (90m, 12h, 30d) or an ISO 8601 time with a zone "
            "(2027-01-01T00:00:00Z)",
            param_hint="--expires",
        ) from exc
    if not now < when <= now + MAX_EXPIRY_S:
        raise click.BadParameter(
            f"{text!r} must be in the future and at most ten years ahead", param_hint="--expires"
        )
    return when


@token.command("revoke")
@click.argument("token_id")
@_token_db
def revoke(token_id: str, db: Path) -> None:
    """Revoke a token by its id (the part after ``gbx_``): its next request is a 401.

    Exit 2 when no such token exists. A running server sees the change at once:
    every request reads the token from the database, and within a second its
    queued runs are cancelled ("token revoked"; samples in flight finish), its
    queued gates are not run, and its deferred judgements are not made.

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
