"""The one place library errors become exit codes and a line on stderr.

Every command is wrapped in :func:`exit_codes`: a :class:`~gradebox.errors.BadInput`
prints ``gradebox <command>: bad input:`` and each ``file:line: problem``; a
:class:`~gradebox.errors.SetupError` prints ``gradebox <command>: cannot start: ...``;
any other :class:`~gradebox.errors.GradeboxError` prints its message. All of them
exit 2, the code for "nothing was decided" (0 ok, 1 gate or check failed).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import click

from gradebox.errors import BadInput, GradeboxError, SetupError

__all__ = ["EXIT_ERROR", "EXIT_FAILED", "EXIT_OK", "exit_codes", "fail"]

EXIT_OK = 0
"""Every sample graded (or the check passed)."""
EXIT_FAILED = 1
"""A gate, a check or a diff failed: the answer is no."""
EXIT_ERROR = 2
"""Bad input, a refused sandbox, infrastructure: there is no answer."""

P = ParamSpec("P")
R = TypeVar("R")


def _command_path() -> str:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "gradebox"
    path = ctx.command_path
    return path if path.startswith("gradebox") else f"gradebox {path}"


def fail(exc: GradeboxError) -> NoReturn:
    """Say what went wrong on stderr, as the command's own line, and exit 2."""
    where = _command_path()
    if isinstance(exc, BadInput):
        click.echo(f"{where}: bad input:\n{exc}", err=True)
    elif isinstance(exc, SetupError):
        click.echo(f"{where}: cannot start: {exc}", err=True)
    else:
        click.echo(f"{where}: {exc}", err=True)
    sys.exit(EXIT_ERROR)


def exit_codes(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a click callback so every gradebox error ends it as :func:`fail` says."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GradeboxError as exc:
            fail(exc)

    return wrapper
