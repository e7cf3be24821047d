"""What the tools read: a candidate's text exactly as the sandbox compiles it.

The sandbox compiles the candidate as a ``str``, and ``compile()`` of a ``str``
ignores a PEP 263 coding cookie. The tools read *files*, and honour one: a
``# -*- coding: ascii -*-`` line plus one non-ASCII character makes bandit
skip the file as a syntax error and mypy read nothing at all, while the code
runs. So every file handed to a tool is written in UTF-8 from
:func:`for_tools`' text:

- **Coding cookies neutralised.** In the first two lines (where Python, mypy
  and bandit look for one), every ``coding:`` / ``coding=`` after a ``#``
  becomes ``coding`` plus a space: the same length, so lines and columns hold,
  and no longer an encoding declaration to any reader.
- **A leading BOM removed.** Tools drop it anyway (columns do not count it);
  removed, it cannot combine with a cookie into "encoding problem: latin-1
  with BOM".

When a tool still says it could not parse a file, :func:`uncompilable` says
whether the code compiles: if it does, the tool failed (a ``ToolError`` for that
file), and the candidate has no syntax error to report.

Candidate code is parsed and compiled in this process only through
:func:`parse`, :func:`parse_module` and :func:`syntax_problem` (the grader's
extract and gate, the claim check, the static layers' own reads). CPython 3.11
before 3.11.8 keeps the AST constructor's recursion depth in per-interpreter
state (python/cpython#106905): when one thread's conversion is interrupted (a
garbage collection running a Python finalizer lets another thread in) and
another thread converts meanwhile, one of them raises ``SystemError: AST
constructor recursion depth mismatch`` -- so a deep candidate in one thread can
break an honest one in another. Every parse and compile here takes one lock,
which costs no concurrency: the GIL is held for a whole parse anyway. A
``SystemError`` (from a parse elsewhere that skipped the lock) is retried.

They never print: whatever the compiler warns (``x is 1``, invalid escapes) for
:data:`CANDIDATE_FILENAME` is ignored by one warnings filter kept in place,
whichever thread parses, instead of ``warnings.catch_warnings()``, which swaps
process-wide state and is not thread-safe. Under ``-W error`` a warning would
otherwise even become a ``SyntaxError``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from static.findings import ToolError

__all__ = [
    "CANDIDATE_FILENAME",
    "for_tools",
    "parse",
    "parse_module",
    "syntax_problem",
    "uncompilable",
]

CANDIDATE_FILENAME = "<candidate>"
"""The file name candidate code is parsed and compiled under; its warnings are ignored."""

_BOM = "\ufeff"
_PARSE_LOCK = threading.Lock()
_PARSE_TRIES = 3
_QUIET_LOCK = threading.Lock()
_QUIET_FILTER = ("ignore", None, Warning, re.compile(re.escape(CANDIDATE_FILENAME) + r"\Z"), 0)
_T = TypeVar("_T")
_COOKIE = re.compile(r"coding[:=]")
_HEAD = re.compile(r"[^\n]*\n?")
_ENV = {"LC_ALL": "C.UTF-8", "NO_COLOR": "1"}
_COMPILE = (
    "import json, sys\n"
    "for path in sys.argv[1:]:\n"
    "    try:\n"
    "        compile(open(path, 'rb').read(), path, 'exec', dont_inherit=True)\n"
    "    except Exception:\n"
    "        print(json.dumps(path))\n"
)


def for_tools(code: str) -> str:
    """The text to write (in UTF-8) for the tools: no BOM, no coding cookie.

    Args:
        code: The candidate's source, as the sandbox compiles it.

    Returns:
        The same code with a leading BOM removed and the first two lines'
        coding declarations neutralised; every line keeps its number and length.
    """
    text = code.removeprefix(_BOM)
    lines: list[str] = []
    rest = 0
    for match in _HEAD.finditer(text):
        if len(lines) == 2 or not match.group():
            break
        lines.append(_neutral(match.group()))
        rest = match.end()
    return "".join(lines) + text[rest:]


def _neutral(line: str) -> str:
    # mypy's cookie pattern lets ``.`` run over a bare ``\r``, so the line is
    # everything up to ``\n``; a cookie always follows a ``#``.
    hash_at = line.find("#")
    if hash_at < 0:
        return line
    tail = line[hash_at:]
    while _COOKIE.search(tail):
        tail = _COOKIE.sub("coding ", tail)
    return line[:hash_at] + tail


def uncompilable(files: Sequence[Path], *, timeout_s: float, cwd: Path | None = None) -> set[Path]:
    """The files whose bytes do not compile, found in a child process.

    The compile runs in a child so that neither the compiler's warnings nor a
    compiler crash on a pathological candidate can reach the grader.

    Args:
        files: Files written from :func:`for_tools`.
        timeout_s: Wall-clock limit of the child.
        cwd: The child's working directory (relative paths are resolved there).

    Returns:
        The given paths that do not compile.

    Raises:
        ToolError: The child failed or printed something unexpected.
    """
    if not files:
        return set()
    argv = [sys.executable, "-I", "-S", "-W", "ignore", "-c", _COMPILE, *map(str, files)]
    try:
        proc = subprocess.run(
            argv, capture_output=True, timeout=timeout_s, cwd=cwd, env=_ENV, check=True
        )
        broken = {Path(json.loads(line)) for line in proc.stdout.decode().splitlines()}
    except (OSError, ValueError, TypeError, subprocess.SubprocessError) as exc:
        raise ToolError(f"the syntax prescreen failed: {exc}") from exc
    return {path for path in files if path in broken}


def parse(source: str, mode: str = "exec") -> ast.AST | None:
    """Parse candidate text without warnings; ``None`` when it is not Python.

    Args:
        source: The text; never run.
        mode: ``"exec"`` or ``"eval"``.

    Returns:
        The tree, or ``None`` on a syntax error, null bytes, or code too deep to parse.

    Raises:
        SystemError: CPython's AST constructor failed three times in a row.
    """
    try:
        return _locked(lambda: ast.parse(source, CANDIDATE_FILENAME, mode))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def parse_module(source: str) -> ast.Module | None:
    """:func:`parse` of a whole module; ``None`` when it is not Python."""
    tree = parse(source)
    return tree if isinstance(tree, ast.Module) else None


def syntax_problem(source: str) -> str | None:
    """Compile candidate text (never run it); what is wrong with it, or ``None``.

    ``compile`` also rejects what a bare parse accepts (``return`` outside a
    function). Any text gives an answer, never an exception.

    Args:
        source: Any text at all.

    Returns:
        ``None`` when it compiles, else one line such as ``line 3: invalid syntax``.

    Raises:
        SystemError: CPython's compiler failed three times in a row.
    """
    try:
        _locked(lambda: compile(source, CANDIDATE_FILENAME, "exec", dont_inherit=True))
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg
    except ValueError as exc:  # null bytes (3.11), lone surrogates (UnicodeEncodeError)
        return f"source cannot be compiled: {exc}"
    except RecursionError:
        return "nested too deeply to compile"
    except MemoryError:  # CPython's parser reports stack overflow as MemoryError
        return "nested too deeply or too large to compile"
    return None


def _locked(work: Callable[[], _T]) -> _T:
    tries = _PARSE_TRIES
    while True:
        try:
            with _PARSE_LOCK:
                _quiet()
                return work()
        except SystemError:  # python/cpython#106905: a parse outside the lock interfered
            tries -= 1
            if tries == 0:
                raise


def _quiet() -> None:
    # Checked on every parse: a ``catch_warnings()`` block elsewhere restores the
    # filters it found, dropping ours.
    if _QUIET_FILTER not in warnings.filters:
        with _QUIET_LOCK:
            if _QUIET_FILTER not in warnings.filters:
                warnings.filterwarnings("ignore", module=_QUIET_FILTER[3].pattern)
