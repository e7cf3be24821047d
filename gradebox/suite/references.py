"""Reference solutions: one per task, from a JSON Lines file or a Python file.

``reference.jsonl`` holds one ``{"fn": ..., "code": ...}`` object a line
(optionally ``task``: the task's id when it is not ``fn``, and
``equivalent_mutants``: ids of mutants a person judged equivalent).
A ``.py`` file is the reference of every task whose function it defines at top
level. Either way the code must parse and define ``fn``; every problem is
reported as ``file:line: what is wrong``. The code is only parsed here, never
run: references run in the sandbox like any candidate.
"""

from __future__ import annotations

import ast
import json
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from gradebox.errors import BadInput
from sandbox.cases import read_jsonl
from sandbox.errors import InputError

__all__ = ["Reference", "load_references", "top_level_functions"]


@dataclass(frozen=True, slots=True)
class Reference:
    """A trusted solution of one task."""

    fn: str
    """The entry point (the function ``code`` defines)."""
    code: str
    """Python source that defines ``fn`` at top level."""
    equivalent_mutants: tuple[str, ...] = ()
    """Mutant ids a person judged equivalent; left out of the mutation score."""
    line: int = 0
    """Line in the source file, for messages (1 for a ``.py`` file)."""
    task: str = ""
    """The id of the task it solves; left empty, it is ``fn``."""

    def __post_init__(self) -> None:
        """Fill in the task id of a reference that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)


def load_references(path: Path) -> dict[str, Reference]:
    """Load reference solutions from ``reference.jsonl`` or a ``.py`` file.

    Args:
        path: The file; a ``.py`` suffix means Python source, anything else JSON Lines.

    Returns:
        References by task id (a ``.py`` file's: by function name), in file order.

    Raises:
        BadInput: Every problem, as ``file:line: what is wrong``.
    """
    if path.suffix == ".py":
        return _load_python(path)
    return _load_jsonl(path)


def top_level_functions(code: str) -> list[str]:
    """Names of the functions defined at the top level of ``code`` (parsed, never run).

    Raises:
        SyntaxError: The code does not parse.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        tree = ast.parse(code)
    return [
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _load_python(path: Path) -> dict[str, Reference]:
    try:
        code = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise BadInput([f"{path}: no such file"]) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput([f"{path}: cannot read ({exc})"]) from exc
    try:
        names = top_level_functions(code)
    except SyntaxError as exc:
        raise BadInput([f"{path}:{exc.lineno or 1}: syntax error: {exc.msg}"]) from exc
    if not names:
        raise BadInput([f"{path}: defines no top-level function"])
    return {name: Reference(fn=name, code=code, line=1) for name in names}


def _load_jsonl(path: Path) -> dict[str, Reference]:
    schema: dict[str, Any] = json.loads(
        (resources.files("gradebox.suite") / "schemas" / "reference.schema.json").read_text(
            encoding="utf-8"
        )
    )
    try:
        items, found = read_jsonl(path, schema, _reference)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    refs: dict[str, Reference] = {}
    for ref in items:
        first = refs.setdefault(ref.task, ref)
        if first is not ref:
            what = "task" if ref.task != ref.fn else "fn"
            message = f"{what}: {ref.task!r} already has a reference on line {first.line}"
            found.append((ref.line, message))
    problems = [f"{path}:{n}: {m}" for n, m in sorted(found)]
    if problems:
        raise BadInput(problems)
    if not refs:
        raise BadInput([f"{path}: no valid line"])
    return refs


def _reference(obj: dict[str, Any], line: int) -> tuple[Reference | None, list[str]]:
    fn, code = obj["fn"], obj["code"]
    if any(ord(c) < 32 or ord(c) == 127 for c in obj.get("task", "")):
        return None, [f"task: {obj['task'][:100]!r} has a control character"]
    try:
        names = top_level_functions(code)
    except SyntaxError as exc:
        return None, [f"code: syntax error on its line {exc.lineno}: {exc.msg}"]
    except ValueError as exc:  # null bytes
        return None, [f"code: cannot be parsed ({exc})"]
    if fn not in names:
        return None, [f"code: defines no top-level function named {fn!r}"]
    mutants = tuple(obj.get("equivalent_mutants", []))
    return Reference(fn, code, mutants, line, obj.get("task", "")), []
