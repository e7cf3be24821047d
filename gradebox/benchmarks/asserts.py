"""Turning a benchmark's ``assert`` statements into hidden cases, read with ``ast`` (never run).

A statement converts when everything the grader needs is a literal
(:func:`ast.literal_eval`): the arguments and the expected value, so the
expected value stays outside the sandbox. Recognised shapes, with ``call``
standing for ``candidate(<literal args>)`` (or the entry point's name):

==========================================  ============================================
``assert call == L`` (or ``L == call``)     ``expect: L`` (the harness's ``==`` is laxer:
                                            see :class:`Converted.lax`)
``assert call is True`` / ``False`` / ``None``  ``expect`` that constant, type-strict
``assert call`` / ``assert not call``       ``expect: True`` / ``False`` (truthiness: lax)
``assert abs(call - L) < T`` (``<=``,       ``expect: L, tol: T``
``abs(L - call)``)
``assert math.isclose(call, L, ...)``       ``expect: L`` with ``rel_tol`` (default 1e-9)
                                            and ``abs_tol`` as ``tol``
``with pytest.raises(E): call``             ``error: E``
``try: call; assert False`` ``except E:``   ``error: E``
==========================================  ============================================

Anything else (a loop, a value computed by the test, randomness) does not
convert and stays for a test program (:mod:`gradebox.benchmarks.programs`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Literal

from sandbox.cases import resolve_error_name
from sandbox.child.wire import WireError, from_wire, to_wire

__all__ = ["Converted", "Lax", "contains_assert", "convert_statement", "is_trivial"]

Lax = Literal["none", "eq", "truthy", "falsy"]
"""Where the benchmark's own check is laxer than gradebox's type-strict compare:
``eq`` (Python ``==``: ``1 == 1.0 == True``), ``truthy``/``falsy`` (any true or
false value passes)."""


@dataclass(frozen=True, slots=True)
class Converted:
    """One assert turned into a function case: arguments and expectation as tagged JSON."""

    args: tuple[Any, ...]
    """Positional arguments, as tagged JSON."""
    kwargs: dict[str, Any]
    """Keyword arguments, as tagged JSON."""
    expect: Any = None
    """The expected value, as tagged JSON (unset when ``error`` is)."""
    error: str | None = None
    """The expected exception, a builtin or dotted standard-library class name."""
    tol: float | None = None
    """Absolute tolerance."""
    rel_tol: float | None = None
    """Relative tolerance."""
    lax: Lax = "none"
    """How the benchmark's own check is laxer than the type-strict compare."""
    value: Any = None
    """The expected value as Python data (for the reference check)."""
    line: int = 0
    """Line of the statement in the benchmark's test source."""


class _NotLiteral(Exception):
    """A part of the statement is not a literal: the statement does not convert."""


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult)


def _arithmetic(node: ast.expr) -> Any:
    """``2.0/3.0``, ``1 - 0.5``: the four operations on number literals, as Python computes them.

    Integers stay integers except under ``/``; operands are bounded, so this can
    never be asked to build a huge number.
    """
    if isinstance(node, ast.BinOp) and type(node.op) in (*_ARITHMETIC, ast.Div):
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Div):
            return left / right if right else _fail()
        if isinstance(node.op, ast.Add):
            return left + right
        return left - right if isinstance(node.op, ast.Sub) else left * right
    value = ast.literal_eval(node)
    if type(value) not in (int, float) or abs(value) > 1e15:
        raise ValueError("not a small number")
    return value


def _fail() -> Any:
    raise ValueError("division by zero")


def _literal(node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        try:
            value = _arithmetic(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise _NotLiteral from exc
    try:  # plain data only: a complex number would travel as $opaque
        from_wire(to_wire(value), allow_opaque=False)
    except (WireError, RecursionError) as exc:
        raise _NotLiteral from exc
    return value


def _call_args(node: ast.expr, names: frozenset[str]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The literal arguments of ``candidate(...)``; raises :class:`_NotLiteral` otherwise."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise _NotLiteral
    if node.func.id not in names:
        raise _NotLiteral
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        raise _NotLiteral
    args = tuple(_literal(a) for a in node.args)
    kwargs = {str(k.arg): _literal(k.value) for k in node.keywords}
    return args, kwargs


def _case(call: ast.expr, names: frozenset[str], value: Any, line: int, **extra: Any) -> Converted:
    args, kwargs = _call_args(call, names)
    return Converted(
        args=tuple(to_wire(a) for a in args),
        kwargs={k: to_wire(v) for k, v in kwargs.items()},
        expect=to_wire(value),
        value=value,
        line=line,
        **extra,
    )


def _from_test(test: ast.expr, names: frozenset[str], line: int) -> Converted:
    """Convert the condition of an ``assert``; raises :class:`_NotLiteral` when it does not."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _case(test.operand, names, False, line, lax="falsy")
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in names:
        return _case(test, names, True, line, lax="truthy")
    if isinstance(test, ast.Call):
        return _isclose(test, names, line)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        raise _NotLiteral
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq):
        try:
            return _case(left, names, _literal(right), line, lax="eq")
        except _NotLiteral:
            return _case(right, names, _literal(left), line, lax="eq")
    constant = isinstance(right, ast.Constant) and right.value in (True, False, None)
    if isinstance(op, ast.Is) and constant and isinstance(right, ast.Constant):
        return _case(left, names, right.value, line)
    if isinstance(op, ast.Lt | ast.LtE):
        return _abs_diff(left, _literal(right), names, line)
    raise _NotLiteral


def _abs_diff(node: ast.expr, tol: Any, names: frozenset[str], line: int) -> Converted:
    """``abs(call - L) < T`` or ``abs(L - call) < T``."""
    if type(tol) not in (int, float) or tol < 0:
        raise _NotLiteral
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "abs"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.BinOp)
        and isinstance(node.args[0].op, ast.Sub)
    ):
        raise _NotLiteral
    diff = node.args[0]
    for call, other in ((diff.left, diff.right), (diff.right, diff.left)):
        try:
            value = _literal(other)
        except _NotLiteral:
            continue
        if type(value) in (int, float):
            return _case(call, names, float(value), line, tol=float(tol), lax="eq")
    raise _NotLiteral


def _isclose(test: ast.Call, names: frozenset[str], line: int) -> Converted:
    func = test.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr == "isclose"
        and isinstance(func.value, ast.Name)
        and func.value.id == "math"
        and len(test.args) == 2
    ):
        raise _NotLiteral
    options = {str(k.arg): _literal(k.value) for k in test.keywords}
    if set(options) - {"rel_tol", "abs_tol"}:
        raise _NotLiteral
    rel, absolute = options.get("rel_tol", 1e-9), options.get("abs_tol", 0.0)
    for call, other in ((test.args[0], test.args[1]), (test.args[1], test.args[0])):
        try:
            value = _literal(other)
        except _NotLiteral:
            continue
        if type(value) in (int, float):
            return _case(
                call, names, float(value), line, tol=float(absolute), rel_tol=float(rel), lax="eq"
            )
    raise _NotLiteral


def _error_name(node: ast.expr | None) -> str:
    if node is None:
        raise _NotLiteral
    name = ast.unparse(node)
    try:
        resolve_error_name(name)
    except ValueError as exc:
        raise _NotLiteral from exc
    return name


def _raises(stmt: ast.stmt, names: frozenset[str]) -> Converted:
    """``with pytest.raises(E): call`` or ``try: call; assert False  except E: pass``."""
    body: list[ast.stmt]
    if isinstance(stmt, ast.With) and len(stmt.items) == 1:
        ctx = stmt.items[0].context_expr
        if not (
            isinstance(ctx, ast.Call)
            and ast.unparse(ctx.func) in ("pytest.raises", "raises")
            and len(ctx.args) == 1
            and not ctx.keywords
        ):
            raise _NotLiteral
        error, body = _error_name(ctx.args[0]), stmt.body
    elif isinstance(stmt, ast.Try) and len(stmt.handlers) == 1 and not stmt.orelse:
        handler = stmt.handlers[0]
        if stmt.finalbody or not all(isinstance(s, ast.Pass) for s in handler.body):
            raise _NotLiteral
        error = _error_name(handler.type)
        body = [s for s in stmt.body if not _is_assert_false(s)]
        if len(body) == len(stmt.body):  # no "assert False": nothing says it must raise
            raise _NotLiteral
    else:
        raise _NotLiteral
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        raise _NotLiteral
    args, kwargs = _call_args(body[0].value, names)
    return Converted(
        args=tuple(to_wire(a) for a in args),
        kwargs={k: to_wire(v) for k, v in kwargs.items()},
        error=error,
        line=stmt.lineno,
    )


def _is_assert_false(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assert):
        return isinstance(stmt.test, ast.Constant) and not stmt.test.value
    return isinstance(stmt, ast.Raise)


def convert_statement(stmt: ast.stmt, names: frozenset[str]) -> Converted | None:
    """One top-level statement of a check, as a case; ``None`` when it does not convert.

    Args:
        stmt: The statement.
        names: Names the candidate is called by (``candidate``, the entry point).
    """
    try:
        if isinstance(stmt, ast.Assert):
            return _from_test(stmt.test, names, stmt.lineno)
        if isinstance(stmt, ast.With | ast.Try):
            return _raises(stmt, names)
    except _NotLiteral:
        return None
    return None


def contains_assert(stmt: ast.stmt) -> bool:
    """Whether a statement checks anything (an ``assert`` or a ``raise`` anywhere inside)."""
    return any(isinstance(n, ast.Assert | ast.Raise) for n in ast.walk(stmt))


def is_trivial(stmt: ast.stmt) -> bool:
    """``assert True`` (with or without a message): checks nothing."""
    return (
        isinstance(stmt, ast.Assert)
        and isinstance(stmt.test, ast.Constant)
        and bool(stmt.test.value)
    )
