"""Complexity and documentation metrics, as numbers for the results row.

Per function (methods and nested functions included, named ``Class.method`` and
``outer.inner``):

- ``complexity``: McCabe cyclomatic complexity counted the way ruff's ``C901``
  (and PyCQA ``mccabe``) count it, so the lint layer and this row never disagree:
  1, plus 1 for each ``if``/``elif``, ``for``, ``while``, ``except`` handler,
  ``try ... else``, ``match`` case (minus one when the last case is a bare
  wildcard or capture without a guard) and nested ``def`` (whose own decisions
  count too). ``else``, ``with``, boolean operators, conditional expressions and
  comprehensions add nothing. Implemented on the AST rather than with ``radon``
  (which also counts boolean operators and comprehensions, so its numbers
  differ from ``C901``) or ``mccabe`` (a flake8 plugin built around a path-graph
  visitor, with no typed API).
- ``max_nesting``: the deepest stack of compound statements (``if``, ``for``,
  ``while``, ``with``, ``try``, ``match`` and their ``async`` forms) inside the
  function's own body; an ``elif`` chain is one level. A flat body is 0. A nested
  ``def`` or ``class`` starts its own count.

Per module: ``docstring_coverage`` (functions and classes with a docstring /
all of them), ``annotation_coverage`` (annotated parameters and returns / all of
them; ``self`` and ``cls`` of methods are not counted), ``max_complexity`` and
``max_nesting``. A ratio with nothing to count is ``None``, and code that does
not parse gives the same keys with no functions and ``None`` numbers
(``"parsed": false``): this layer never raises.

Findings: ``GBX301`` (low) when a function's complexity exceeds
``max_complexity`` (default 10, McCabe's own threshold and ruff's default) and
``GBX302`` (low) when its nesting exceeds ``max_nesting`` (default 4).

This module uses only the standard library and imports no other layer.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from static.findings import Finding

__all__ = ["check"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTING = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
)


def check(
    code: str, *, max_complexity: int = 10, max_nesting: int = 4
) -> tuple[dict[str, Any], list[Finding]]:
    """Measure complexity, nesting, docstring and annotation coverage.

    Args:
        code: The candidate's source; parsed, never run.
        max_complexity: A function above this complexity gets ``GBX301``.
        max_nesting: A function nested deeper than this gets ``GBX302``.

    Returns:
        The metrics dict for the row and the findings, in source order.
    """
    tree = _parse(code)
    if tree is None:
        return _empty(parsed=False), []
    measured = [
        _Measured(name, fn.lineno, fn.col_offset + 1, _complexity(fn), _depth(fn))
        for name, fn in _functions(tree.body, prefix="")
    ]
    if not measured and not _classes(tree):
        return _empty(parsed=True), []
    metrics = {
        "parsed": True,
        "functions": [
            {"name": m.name, "line": m.line, "complexity": m.complexity, "max_nesting": m.nesting}
            for m in measured
        ],
        "docstring_coverage": _docstring_coverage(tree),
        "annotation_coverage": _annotation_coverage(tree),
        "max_complexity": max((m.complexity for m in measured), default=None),
        "max_nesting": max((m.nesting for m in measured), default=None),
    }
    return metrics, _findings(measured, max_complexity, max_nesting)


@dataclass(frozen=True, slots=True)
class _Measured:
    name: str
    line: int
    col: int  # 1-based; only indentation precedes ``def``, so bytes are characters
    complexity: int
    nesting: int


def _parse(code: str) -> ast.Module | None:
    # Parsing can warn (invalid escapes); a library must not print.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _empty(*, parsed: bool) -> dict[str, Any]:
    return {
        "parsed": parsed,
        "functions": [],
        "docstring_coverage": None,
        "annotation_coverage": None,
        "max_complexity": None,
        "max_nesting": None,
    }


def _functions(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, _Function]]:
    """Every function in source order, with a qualified name; nested ones included."""
    for node in body:
        for child in _walk_scope(node):
            if isinstance(child, _Function):
                name = f"{prefix}{child.name}"
                yield name, child
                yield from _functions(child.body, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                yield from _functions(child.body, f"{prefix}{child.name}.")


def _walk_scope(node: ast.stmt) -> Iterator[ast.stmt]:
    """``node`` and the statements nested in it, stopping at (and yielding) defs and classes."""
    yield node
    if isinstance(node, _Function | ast.ClassDef):
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield from _walk_scope(child)
        elif isinstance(child, ast.ExceptHandler | ast.match_case):
            for stmt in child.body:
                yield from _walk_scope(stmt)


def _complexity(fn: _Function) -> int:
    return 1 + _decisions(fn.body)


def _decisions(body: list[ast.stmt]) -> int:
    return sum(_statement_decisions(stmt) for stmt in body)


def _statement_decisions(stmt: ast.stmt) -> int:
    if isinstance(stmt, ast.If):
        # An ``elif`` is an ``If`` in ``orelse`` and counts itself when visited.
        return 1 + _decisions(stmt.body) + _decisions(stmt.orelse)
    if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
        return 1 + _decisions(stmt.body) + _decisions(stmt.orelse)
    if isinstance(stmt, ast.With | ast.AsyncWith | ast.ClassDef):
        return _decisions(stmt.body)
    if isinstance(stmt, ast.Try | ast.TryStar):
        handlers = sum(1 + _decisions(h.body) for h in stmt.handlers)
        orelse = (1 if stmt.orelse else 0) + _decisions(stmt.orelse)
        return _decisions(stmt.body) + handlers + orelse + _decisions(stmt.finalbody)
    if isinstance(stmt, ast.Match):
        cases = sum(1 + _decisions(case.body) for case in stmt.cases)
        return cases - (1 if stmt.cases and _is_catch_all(stmt.cases[-1]) else 0)
    if isinstance(stmt, _Function):
        return 1 + _decisions(stmt.body)
    return 0


def _is_catch_all(case: ast.match_case) -> bool:
    return case.guard is None and _irrefutable(case.pattern)


def _irrefutable(pattern: ast.pattern) -> bool:
    if isinstance(pattern, ast.MatchOr):
        return any(_irrefutable(p) for p in pattern.patterns)
    return isinstance(pattern, ast.MatchAs) and pattern.pattern is None


def _depth(fn: _Function) -> int:
    return max((_stmt_depth(stmt) for stmt in fn.body), default=0)


def _stmt_depth(stmt: ast.stmt) -> int:
    if not isinstance(stmt, _NESTING):
        return 0
    inner = [*_child_bodies(stmt)]
    deepest = max((_stmt_depth(s) for body in inner for s in body), default=0)
    if isinstance(stmt, ast.If) and _is_elif(stmt):
        # The elif chain sits at this statement's level, not one deeper.
        deepest = max(deepest, _stmt_depth(stmt.orelse[0]) - 1)
    return 1 + deepest


def _child_bodies(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    if isinstance(stmt, ast.If) and _is_elif(stmt):
        yield stmt.body
        return
    for field in ("body", "orelse", "finalbody"):
        yield getattr(stmt, field, [])
    yield from (h.body for h in getattr(stmt, "handlers", []))
    yield from (case.body for case in getattr(stmt, "cases", []))


def _is_elif(stmt: ast.If) -> bool:
    return (
        len(stmt.orelse) == 1
        and isinstance(stmt.orelse[0], ast.If)
        and stmt.orelse[0].col_offset == stmt.col_offset
    )


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]


def _docstring_coverage(tree: ast.Module) -> float | None:
    nodes = [n for n in ast.walk(tree) if isinstance(n, _Function | ast.ClassDef)]
    documented = sum(1 for n in nodes if ast.get_docstring(n, clean=False) is not None)
    return round(documented / len(nodes), 4) if nodes else None


def _annotation_coverage(tree: ast.Module) -> float | None:
    methods = {
        id(stmt)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for stmt in node.body
        if isinstance(stmt, _Function)
    }
    annotated = total = 0
    for fn in (n for n in ast.walk(tree) if isinstance(n, _Function)):
        args = fn.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if id(fn) in methods and params and not _is_static(fn):
            params = params[1:]  # self / cls
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        annotated += sum(1 for p in params if p.annotation is not None)
        annotated += 1 if fn.returns is not None else 0
        total += len(params) + 1
    return round(annotated / total, 4) if total else None


def _is_static(fn: _Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _findings(measured: list[_Measured], max_complexity: int, max_nesting: int) -> list[Finding]:
    findings: list[Finding] = []
    for m in measured:
        if m.complexity > max_complexity:
            message = f"`{m.name}` is too complex ({m.complexity} > {max_complexity})"
            findings.append(Finding("metrics", "GBX301", "low", m.line, m.col, message))
        if m.nesting > max_nesting:
            message = f"`{m.name}` nests {m.nesting} blocks deep (> {max_nesting})"
            findings.append(Finding("metrics", "GBX302", "low", m.line, m.col, message))
    return findings
