"""AST mutants of a reference solution: a small mutator of our own.

Why not mutmut or cosmic-ray: both mutate files on disk and judge a mutant by
running a test command in the grader's own environment. Here every mutant must
run in the sandbox against the hidden cases, like any candidate, so all we need
is mutant *source*; a mutator over :mod:`ast` is ~300 lines and has no state.

Each mutation is a text edit of the reference at the AST node's position, so
the code around it keeps its comments and layout and the diffs are readable.
A mutant that does not compile, or that parses to the reference's own AST, is
dropped; identical mutants are kept once.

Operators (``kind``; stable, used in mutant ids ``KIND:line:col:variant``):

=====  ==========================================================================
CMP    comparison swap: ``<``/``<=``/``>``/``>=`` to the boundary and the opposite
       side, ``==``/``!=``, ``is``/``is not``, ``in``/``not in``
AOR    arithmetic swap: ``+ -``, ``* /``, ``/ //``, ``% //``, ``** *``, bit and
       shift operators, also in augmented assignments
BOOL   ``and`` / ``or``
CONST  off-by-one on an int constant (``n`` to ``n + 1`` and ``n - 1``)
SLICE  off-by-one on a slice bound that is not a constant (``a[:i]`` to ``a[:i + 1]``)
NEG    negated condition of ``if``, ``while``, a conditional expression or a
       comprehension filter; ``not x`` to ``x``
DROP   a statement in a function body replaced by ``pass``
RET    swapped return values: ``return a, b`` to ``return b, a``, ``True`` /
       ``False``, ``return None``, and two returns of a function exchanging values
=====  ==========================================================================

Annotations, f-strings, docstrings and ``match`` patterns are never mutated.
When there are more mutants than the cap, the selection is deterministic:
round-robin over the kinds in the order above, each kind in source order
(skipping drafts that do not compile or repeat an earlier mutant).
"""

from __future__ import annotations

import ast
import bisect
import copy
import difflib
import itertools
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["KINDS", "Mutant", "MutantKind", "make_mutants", "used_by"]

MutantKind = Literal["CMP", "AOR", "BOOL", "CONST", "SLICE", "NEG", "DROP", "RET"]
"""The mutation operators; see the module docstring."""

KINDS: tuple[MutantKind, ...] = ("CMP", "AOR", "BOOL", "CONST", "SLICE", "NEG", "DROP", "RET")
"""Operator order, for the round-robin selection under the cap."""

_CMP: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_AOR: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div,),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div,),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,),
    ast.BitOr: (ast.BitAnd,),
    ast.BitXor: (ast.BitOr,),
    ast.LShift: (ast.RShift,),
    ast.RShift: (ast.LShift,),
}
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.LShift: "<<", ast.RShift: ">>", ast.And: "and", ast.Or: "or",
}  # fmt: skip
_SKIP_FIELDS = frozenset({"annotation", "returns", "type_comment", "pattern", "type_params"})
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutant of a reference."""

    id: str
    """Stable while the reference is unchanged: ``KIND:line:col:variant``."""
    kind: MutantKind
    """The operator that made it."""
    line: int
    """Line of the mutation in the reference."""
    description: str
    """What changed, e.g. ``>= -> >``."""
    code: str
    """The mutant's full source."""
    diff: str
    """A unified diff from the reference."""


@dataclass(frozen=True, slots=True)
class _Edit:
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Draft:
    kind: MutantKind
    line: int
    col: int
    variant: str
    description: str
    edits: tuple[_Edit, ...]


def make_mutants(code: str, *, cap: int = 60, fn: str | None = None) -> list[Mutant]:
    """Mutants of ``code``, at most ``cap``, chosen deterministically.

    Args:
        code: The reference's source (must parse).
        cap: Most mutants returned.
        fn: Mutate only this top-level function and what it uses of the module
            (the functions it calls, the classes and constants it names, and
            theirs, transitively): a reference file holding several tasks'
            functions charges each task only its own mutants. ``None`` (or a name
            the module does not define) mutates the whole module.

    Returns:
        Mutants in source order (line, then column).

    Raises:
        SyntaxError: ``code`` does not parse.
    """
    tree = _parse(code)
    source = _Source(code)
    scope = used_by(tree, fn) if fn is not None else None
    drafts = list(_Collector(source).collect(tree, scope))
    chosen = _select(code, ast.dump(tree), _round_robin(drafts), cap)
    chosen.sort(key=lambda pair: (pair[0].line, pair[0].col, KINDS.index(pair[0].kind)))
    return _finish(code, chosen)


def _parse(code: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(code)


class _Source:
    """Maps AST positions (line, UTF-8 byte column) to offsets in the text."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.lines = _LINE.findall(code)
        self.starts = [0]
        for text in self.lines:
            self.starts.append(self.starts[-1] + len(text))

    def offset(self, lineno: int, col: int) -> int:
        text = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        return self.starts[lineno - 1] + len(text.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.code[start:end]

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and character column of a text offset."""
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def operator_at(self, left: ast.AST, right: ast.AST, symbol: str) -> tuple[int, int]:
        """Line and column of the operator between two operands (first word of ``symbol``)."""
        start = self.offset(left.end_lineno, left.end_col_offset)  # type: ignore[attr-defined]
        end = self.offset(right.lineno, right.col_offset)  # type: ignore[attr-defined]
        found = self.code.find(symbol.split(maxsplit=1)[0], start, end)
        return self.position(found if found >= 0 else start)

    def column(self, node: ast.AST) -> int:
        """1-based character column of the node's start."""
        line: int = node.lineno  # type: ignore[attr-defined]
        return self.offset(line, node.col_offset) - self.starts[line - 1] + 1  # type: ignore[attr-defined]


class _Collector:
    """Walks a module and yields every candidate mutation as a draft."""

    def __init__(self, source: _Source) -> None:
        self.src = source

    def collect(self, tree: ast.Module, scope: list[ast.stmt] | None = None) -> Iterator[_Draft]:
        if scope is None:
            yield from self._visit(tree, in_function=False)
            return
        for stmt in scope:
            yield from self._visit(stmt, in_function=False)

    def _visit(self, node: ast.AST, *, in_function: bool) -> Iterator[_Draft]:
        if isinstance(node, ast.JoinedStr):
            return
        yield from self._mutations(node)
        if _is_negative_int(node):
            return  # ``-5`` is one constant: its inner 5 is not mutated again
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from self._function(node)
            in_function = True
        if in_function and isinstance(node, ast.stmt):
            for body in _bodies(node):
                yield from self._drops(body)
        for name, value in ast.iter_fields(node):
            if name in _SKIP_FIELDS:
                continue
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST):
                    yield from self._visit(child, in_function=in_function)

    def _mutations(self, node: ast.AST) -> Iterator[_Draft]:
        if isinstance(node, ast.Compare):
            yield from self._compare(node)
        elif isinstance(node, ast.BinOp):
            yield from self._binop(node)
        elif isinstance(node, ast.AugAssign):
            yield from self._augassign(node)
        elif isinstance(node, ast.BoolOp):
            yield from self._boolop(node)
        elif (value := _int_value(node)) is not None:
            yield from self._constant(node, value)
        elif isinstance(node, ast.Slice):
            yield from self._slice(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield self._expr(node, node.operand, "NEG", "not", "`not x` -> `x`")
        elif isinstance(node, ast.If | ast.While | ast.IfExp):
            yield from self._negate(node.test, type(node).__name__.lower())
        elif isinstance(node, ast.comprehension):
            for test in node.ifs:
                yield from self._negate(test, "comprehension filter")
        elif isinstance(node, ast.Return):
            yield from self._return(node)

    # ------------------------------------------------------------- operators

    def _compare(self, node: ast.Compare) -> Iterator[_Draft]:
        for i, op in enumerate(node.ops):
            for new in _CMP.get(type(op), ()):
                mutated = copy.deepcopy(node)
                mutated.ops[i] = new()
                old_s, new_s = _SYMBOL[type(op)], _SYMBOL[new]
                left = node.left if i == 0 else node.comparators[i - 1]
                at = self.src.operator_at(left, node.comparators[i], old_s)
                yield self._expr(node, mutated, "CMP", new_s, f"{old_s} -> {new_s}", at)

    def _binop(self, node: ast.BinOp) -> Iterator[_Draft]:
        for new in _AOR.get(type(node.op), ()):
            mutated = copy.deepcopy(node)
            mutated.op = new()
            old_s, new_s = _SYMBOL[type(node.op)], _SYMBOL[new]
            at = self.src.operator_at(node.left, node.right, old_s)
            yield self._expr(node, mutated, "AOR", new_s, f"{old_s} -> {new_s}", at)

    def _augassign(self, node: ast.AugAssign) -> Iterator[_Draft]:
        for new in _AOR.get(type(node.op), ()):
            mutated = copy.deepcopy(node)
            mutated.op = new()
            old_s, new_s = _SYMBOL[type(node.op)], _SYMBOL[new]
            text = ast.unparse(mutated)
            at = self.src.operator_at(node.target, node.value, old_s + "=")
            yield self._draft(node, "AOR", new_s + "=", f"{old_s}= -> {new_s}=", text, at)

    def _boolop(self, node: ast.BoolOp) -> Iterator[_Draft]:
        new: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        mutated = copy.deepcopy(node)
        mutated.op = new
        old_s, new_s = _SYMBOL[type(node.op)], _SYMBOL[type(new)]
        at = self.src.operator_at(node.values[0], node.values[1], old_s)
        yield self._expr(node, mutated, "BOOL", new_s, f"{old_s} -> {new_s}", at)

    def _constant(self, node: ast.AST, value: int) -> Iterator[_Draft]:
        for delta, variant in ((1, "+1"), (-1, "-1")):
            new = value + delta
            text = f"({new})" if new < 0 else str(new)
            yield self._draft(node, "CONST", variant, f"{value} -> {new}", text)

    def _slice(self, node: ast.Slice) -> Iterator[_Draft]:
        for name in ("lower", "upper"):
            bound = getattr(node, name)
            if bound is None or _int_value(bound) is not None:
                continue  # constants are CONST's
            text = self.src.text(bound)
            for sign in ("+", "-"):
                new = f"({text}) {sign} 1"
                desc = f"{name} bound {text} -> {new}"
                yield self._draft(bound, "SLICE", f"{name}{sign}1", desc, f"({new})")

    def _negate(self, test: ast.expr, where: str) -> Iterator[_Draft]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return  # dropping the ``not`` is the same mutant
        text = f"(not ({self.src.text(test)}))"
        yield self._draft(test, "NEG", "not", f"negate the {where} condition", text)

    def _return(self, node: ast.Return) -> Iterator[_Draft]:
        value = node.value
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            flipped = not value.value
            yield self._draft(value, "RET", "flip", f"return {flipped}", str(flipped))
        elif isinstance(value, ast.Tuple) and len(value.elts) >= 2:
            swapped = copy.deepcopy(value)
            swapped.elts[0], swapped.elts[1] = swapped.elts[1], swapped.elts[0]
            yield self._expr(value, swapped, "RET", "swap", "swap the first two returned values")
        else:
            yield self._draft(value, "RET", "none", "return None", "None")

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[_Draft]:
        """Two returns of the function exchanging their values (not nested functions)."""
        returns = [(r, r.value) for r in _own_returns(node) if r.value is not None]
        for (first, one), (second, other) in itertools.pairwise(returns):
            a, b = self.src.text(one), self.src.text(other)
            if a == b:
                continue
            edits = (_Edit(*self.src.span(one), f"({b})"), _Edit(*self.src.span(other), f"({a})"))
            desc = f"exchange the values returned on lines {first.lineno} and {second.lineno}"
            yield _Draft("RET", first.lineno, self.src.column(first), "xchg", desc, edits)

    def _drops(self, body: list[ast.stmt]) -> Iterator[_Draft]:
        for index, stmt in enumerate(body):
            if not _droppable(stmt, first=index == 0):
                continue
            if self.src.text(stmt).startswith("elif"):
                continue
            shown = self.src.text(stmt).splitlines()[0].strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            yield self._draft(stmt, "DROP", "pass", f"drop `{shown}`", "pass")

    # --------------------------------------------------------------- helpers

    def _expr(
        self,
        node: ast.AST,
        new: ast.AST,
        kind: MutantKind,
        variant: str,
        desc: str,
        at: tuple[int, int] | None = None,
    ) -> _Draft:
        return self._draft(node, kind, variant, desc, f"({ast.unparse(new)})", at)

    def _draft(
        self,
        node: ast.AST,
        kind: MutantKind,
        variant: str,
        desc: str,
        text: str,
        at: tuple[int, int] | None = None,
    ) -> _Draft:
        """A one-edit draft replacing ``node``'s text with ``text`` (parenthesised as needed).

        ``at`` (line, column) names the mutation's place when it is not the node's
        start, e.g. the operator of a binary operation.
        """
        start, end = self.src.span(node)
        line, col = at or (node.lineno, self.src.column(node))  # type: ignore[attr-defined]
        return _Draft(kind, line, col, variant, desc, (_Edit(start, end, text),))


_Binding = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign


def _bound_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def used_by(tree: ast.Module, fn: str) -> list[ast.stmt] | None:
    """The top-level statements ``fn`` depends on, in source order.

    That is its ``def`` and, transitively, every top-level function, class or
    assignment whose name it reads.

    ``None`` when the module has no top-level ``def fn`` (then everything is in scope).
    """
    bindings = [s for s in tree.body if isinstance(s, _Binding)]
    by_name: dict[str, list[ast.stmt]] = {}
    for binding in bindings:
        for name in _bound_names(binding):
            by_name.setdefault(name, []).append(binding)
    roots = [
        s for s in by_name.get(fn, []) if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    if not roots:
        return None
    keep: dict[int, ast.stmt] = {}
    todo: list[ast.stmt] = list(roots)
    while todo:
        current = todo.pop()
        if id(current) in keep:
            continue
        keep[id(current)] = current
        for node in ast.walk(current):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                todo += by_name.get(node.id, [])
    return [s for s in tree.body if id(s) in keep]


def _int_value(node: ast.AST) -> int | None:
    """The value of an int literal (``5`` or ``-5``), else None; bools are not ints."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _is_negative_int(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and _int_value(node) is not None


def _bodies(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(stmt, "handlers", []):
        yield handler.body
    for case in getattr(stmt, "cases", []):
        yield case.body


def _droppable(stmt: ast.stmt, *, first: bool) -> bool:
    skip = (ast.Pass, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal)
    if isinstance(stmt, skip):
        return False
    is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    return not (first and is_doc and isinstance(stmt.value.value, str))  # type: ignore[attr-defined]


def _own_returns(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
        stack[0:0] = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
    return found


def _apply(code: str, edits: tuple[_Edit, ...]) -> str:
    out = code
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def _round_robin(drafts: list[_Draft]) -> Iterator[_Draft]:
    """Drafts in selection order: one of each kind in turn, each kind in source order."""
    queues = [[d for d in drafts if d.kind == kind] for kind in KINDS]
    for rank in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if rank < len(queue):
                yield queue[rank]


def _select(
    code: str, original_dump: str, ordered: Iterator[_Draft], cap: int
) -> list[tuple[_Draft, str]]:
    """The first ``cap`` drafts that compile and differ from the reference and each other.

    Checking lazily in selection order keeps the cost near ``cap`` compilations
    however long the reference is.
    """
    seen = {original_dump}
    kept: list[tuple[_Draft, str]] = []
    for draft in ordered:
        if len(kept) >= cap:
            break
        text = _apply(code, draft.edits)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                tree = ast.parse(text)
                compile(tree, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        dump = ast.dump(tree)
        if dump not in seen:
            seen.add(dump)
            kept.append((draft, text))
    return kept


def _finish(code: str, chosen: list[tuple[_Draft, str]]) -> list[Mutant]:
    mutants: list[Mutant] = []
    used: set[str] = set()
    original = code.splitlines(keepends=True)
    for draft, text in chosen:
        base = f"{draft.kind}:{draft.line}:{draft.col}:{draft.variant}"
        mutant_id, n = base, 1
        while mutant_id in used:
            n += 1
            mutant_id = f"{base}#{n}"
        used.add(mutant_id)
        diff = "".join(
            difflib.unified_diff(
                original, text.splitlines(keepends=True), "reference", f"mutant {mutant_id}", n=1
            )
        )
        mutants.append(Mutant(mutant_id, draft.kind, draft.line, draft.description, text, diff))
    return mutants
