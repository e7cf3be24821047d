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
(``"parsed": false``): this layer never raises. Every walk is iterative, so
code as deep or as long as the compiler accepts (a 1000-branch ``elif`` chain)
is measured, never a ``RecursionError``.

Findings: ``GBX301`` (low) when a function's complexity exceeds
``max_complexity`` (default 10, McCabe's own threshold and ruff's default) and
``GBX302`` (low) when its nesting exceeds ``max_nesting`` (default 4).

This module uses only the standard library and imports no other layer
(:func:`static.source.parse` is the shared, thread-safe parse).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from static.findings import Finding
from static.source import parse

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
    nodes = list(ast.walk(tree))  # one walk for every measure below (~4x fewer node visits)
    if not measured and not _classes(nodes):
        return _empty(parsed=True), []
    metrics = {
        "parsed": True,
        "functions": [
            {"name": m.name, "line": m.line, "complexity": m.complexity, "max_nesting": m.nesting}
            for m in measured
        ],
        "docstring_coverage": _docstring_coverage(nodes),
        "annotation_coverage": _annotation_coverage(nodes),
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
    tree = parse(code)
    return tree if isinstance(tree, ast.Module) else None


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
    # Iterative, like every walk here: deep or long code must not hit the recursion limit.
    stack: list[tuple[str, ast.stmt]] = [(prefix, node) for node in reversed(body)]
    while stack:
        prefix, node = stack.pop()
        if isinstance(node, _Function):
            name = f"{prefix}{node.name}"
            yield name, node
            stack.extend((f"{name}.", child) for child in reversed(node.body))
        elif isinstance(node, ast.ClassDef):
            stack.extend((f"{prefix}{node.name}.", child) for child in reversed(node.body))
        else:
            stack.extend((prefix, child) for child in reversed(_nested(node)))


def _nested(node: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside ``node``, handler and case bodies included, in order."""
    nested: list[ast.stmt] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            nested.append(child)
        elif isinstance(child, ast.ExceptHandler | ast.match_case):
            nested.extend(child.body)
    return nested


def _complexity(fn: _Function) -> int:
    total, stack = 1, list(fn.body)
    while stack:
        stmt = stack.pop()
        total += _own_decisions(stmt)
        stack.extend(_counted_bodies(stmt))
    return total


def _own_decisions(stmt: ast.stmt) -> int:
    """What ``stmt`` itself adds; the statements in its bodies count on their own."""
    if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While | _Function):
        return 1  # an ``elif`` is an ``If`` in ``orelse`` and counts itself when visited
    if isinstance(stmt, ast.Try | ast.TryStar):
        return len(stmt.handlers) + (1 if stmt.orelse else 0)
    if isinstance(stmt, ast.Match):
        catch_all = bool(stmt.cases) and _is_catch_all(stmt.cases[-1])
        return len(stmt.cases) - (1 if catch_all else 0)
    return 0


def _counted_bodies(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements whose decisions count toward ``stmt``'s function."""
    if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While):
        return [*stmt.body, *stmt.orelse]
    if isinstance(stmt, ast.With | ast.AsyncWith | ast.ClassDef | _Function):
        return list(stmt.body)
    if isinstance(stmt, ast.Try | ast.TryStar):
        handlers = [s for h in stmt.handlers for s in h.body]
        return [*stmt.body, *handlers, *stmt.orelse, *stmt.finalbody]
    if isinstance(stmt, ast.Match):
        return [s for case in stmt.cases for s in case.body]
    return []


def _is_catch_all(case: ast.match_case) -> bool:
    return case.guard is None and _irrefutable(case.pattern)


def _irrefutable(pattern: ast.pattern) -> bool:
    stack = [pattern]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.MatchOr):
            stack.extend(current.patterns)
        elif isinstance(current, ast.MatchAs) and current.pattern is None:
            return True
    return False


def _depth(fn: _Function) -> int:
    """The deepest nesting level in ``fn``'s body, counted top-down from 0."""
    deepest = 0
    stack: list[tuple[ast.stmt, int]] = [(stmt, 0) for stmt in fn.body]
    while stack:
        stmt, level = stack.pop()
        if not isinstance(stmt, _NESTING):
            continue  # a nested def or class starts its own count
        deepest = max(deepest, level + 1)
        if isinstance(stmt, ast.If) and _is_elif(stmt):
            # The elif chain sits at this statement's level, not one deeper.
            stack.append((stmt.orelse[0], level))
        stack.extend((child, level + 1) for body in _child_bodies(stmt) for child in body)
    return deepest


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


def _classes(nodes: list[ast.AST]) -> list[ast.ClassDef]:
    return [n for n in nodes if isinstance(n, ast.ClassDef)]


def _docstring_coverage(nodes: list[ast.AST]) -> float | None:
    defs = [n for n in nodes if isinstance(n, _Function | ast.ClassDef)]
    documented = sum(1 for n in defs if ast.get_docstring(n, clean=False) is not None)
    return round(documented / len(defs), 4) if defs else None


def _annotation_coverage(nodes: list[ast.AST]) -> float | None:
    methods = {
        id(stmt) for node in _classes(nodes) for stmt in node.body if isinstance(stmt, _Function)
    }
    annotated = total = 0
    for fn in (n for n in nodes if isinstance(n, _Function)):
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
