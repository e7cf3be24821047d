"""Options several commands share, declared once (``grade``, ``serve``, ``suite``, ...).

Each is a decorator that adds its ``click`` options to a command; the values
arrive under the same parameter names everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = [
    "isolation_option",
    "jobs_option",
    "json_option",
    "judge_extra_body_option",
    "ks_option",
    "limit_options",
    "sandbox_python_option",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_PATH = click.Path(path_type=Path, dir_okay=False)


def isolation_option(f: _F) -> _F:
    """``--isolation auto|bwrap|none``."""
    return click.option(
        "--isolation",
        type=click.Choice(["auto", "bwrap", "none"]),
        default="auto",
        show_default=True,
        help="auto = bwrap or refuse. 'none' runs candidates WITHOUT isolation "
        "(trusted code only).",
    )(f)


def sandbox_python_option(f: _F) -> _F:
    """``--sandbox-python PATH``."""
    return click.option(
        "--sandbox-python", type=_PATH, help="Interpreter that runs candidates (3.11+)."
    )(f)


def jobs_option(what: str) -> Callable[[_F], _F]:
    """``--jobs/-j N``: ``what`` (default: this machine's CPU count; arrives as ``jobs``)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(1, 256),
        default=os.cpu_count() or 1,
        show_default=True,
        help=what,
    )


def _parse_extra_body(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> dict[str, Any] | None:
    """Click callback: ``--judge-extra-body`` as a JSON object; anything else is a usage error."""
    if value is None:
        return None
    from judge.config import parse_extra_body  # noqa: PLC0415 - only with the option
    from judge.errors import JudgeConfigError  # noqa: PLC0415

    try:
        return parse_extra_body(value)
    except JudgeConfigError as exc:
        raise click.BadParameter(str(exc)) from exc


def judge_extra_body_option(what: str, name: str = "judge_extra_body") -> Callable[[_F], _F]:
    """``--judge-extra-body JSON``: provider options for every judge request (as ``name``)."""
    return click.option(
        "--judge-extra-body", name, metavar="JSON", callback=_parse_extra_body, help=what
    )


def limit_options(f: _F) -> _F:
    """The limits on each candidate, in ``--help`` order: per case, per candidate, memory, tree."""
    for option in reversed(
        [
            click.option(
                "--case-timeout",
                type=click.FloatRange(0.01, 600),
                default=2.0,
                show_default=True,
                help="Seconds per case unless the case sets timeout_s.",
            ),
            click.option(
                "--candidate-timeout",
                type=click.FloatRange(0.1, 3600),
                default=20.0,
                show_default=True,
                help="Seconds for all cases of one candidate together.",
            ),
            click.option(
                "--memory-mb",
                type=click.IntRange(64, 65536),
                default=1024,
                show_default=True,
                help="Address-space limit per candidate process.",
            ),
            click.option(
                "--no-tree-limits",
                is_flag=True,
                help="Accept per-process memory/process limits only, when no cgroup can cap a "
                "candidate's whole process tree (not root, nothing delegated).",
            ),
        ]
    ):
        f = option(f)
    return f


def json_option(what: str) -> Callable[[_F], _F]:
    """``--json``: print ``what`` as JSON (the value arrives as ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON.")


def _parse_ks(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    """Click callback: ``"1,5,10"`` -> ``(1, 5, 10)``; a bad list is a usage error (exit 2)."""
    from gradebox.runs.passk import parse_ks  # noqa: PLC0415 - only the commands that take -k

    try:
        return parse_ks(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def ks_option(example: str) -> Callable[[_F], _F]:
    """``-k LIST``: comma-separated pass@k values (arrive as ``ks``, a sorted tuple)."""
    return click.option(
        "-k",
        "ks",
        default="1",
        show_default=True,
        metavar="LIST",
        callback=_parse_ks,
        help=f"Comma-separated k values for pass@k, e.g. {example}.",
    )
