"""Extract the candidate code from a raw model reply (or take a code sample as is).

The rules, in the order they apply. Fences are found by a plain line scan (no
markdown library: only fences matter, and CommonMark's fence rule is a few lines).

Fences
    A fence opens on a line of three or more backticks or tildes, indented by
    any amount (fences inside list items are indented), followed by an info
    string; it closes on a line of the same character, at least as long, and
    nothing else. An unclosed fence runs to the end of the reply (a truncated
    reply). The opening indentation is removed from the block's lines. Text
    outside fences is the prose, returned as ``claim_text``.

Which blocks are Python
    Tagged ``python``, ``py``, ``python3`` or ``py3`` (any case; ``{.python}`` and
    ``python title=x.py`` work). Any other tag (``bash``, ``json``, ``text``,
    ``console``, ``pycon``, ``output``) is ignored, and so is a block of any tag
    that starts with ``>>>`` (an interactive session). An untagged block counts
    when it parses and has a statement other than a bare expression (so
    ``True`` or ``[1, 2]`` under "Output:" is ignored), or when it does not
    parse but has a line starting ``def``, ``async def`` or ``class`` (broken
    code, left for the gate's syntax check). Empty blocks are ignored.

Several Python blocks
    A *usage block* parses, refers to ``fn`` (a call, a reference or an import
    of that name) without binding it, and defines nothing at top level except
    pytest-style ``test*`` functions and ``Test*`` classes. Usage blocks are
    dropped when exactly one other Python block remains; that block is the
    code. Otherwise (two definitions, or a block of imports next to the
    function: code split across blocks) the contract is ``multiple_blocks``.

No fences
    The whole reply is the code when it parses and has a statement other than a
    bare expression (a one-word reply parses as a name); otherwise ``no_code``.

The function
    ``fn`` must be a plain ``def`` directly in the module body. ``async def``,
    a class, a lambda assigned to the name, or a ``def`` nested elsewhere is
    ``missing_function``, with a detail saying which. ``fn`` bound by two
    top-level definitions is ``multiple_functions`` even when helpers are
    allowed. Without ``helpers_allowed``, any other top-level ``def`` or
    ``async def`` is ``multiple_functions``; classes (and their methods),
    imports, constants and assigned lambdas are allowed.

Code that does not parse is passed through as ``ok``: the gate reports it as a
syntax error, not a contract failure. Parsing goes through
:func:`static.source.parse_module`, the one thread-safe, silent parse.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from static.source import parse_module

__all__ = ["Contract", "Extraction", "extract"]

Contract = Literal["ok", "no_code", "multiple_blocks", "multiple_functions", "missing_function"]
"""Whether the reply kept the task's code contract, and if not, how it broke it."""

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TAG = re.compile(r"\{?\.?([\w+#-]*)")
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_DEFINITION_LINE = ("def ", "async def ", "class ")
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class Extraction:
    """The candidate code taken from one sample, and whether it kept the contract."""

    code: str
    """The code to run; ``""`` for ``no_code`` and ``multiple_blocks``. For a
    function-level failure it is the chosen code, for reports."""
    contract: Contract
    """``ok``, or which part of the contract the sample broke."""
    detail: str
    """One line for humans: which block was taken, or what is wrong."""
    claim_text: str
    """The reply's prose outside code fences, where complexity claims are read;
    ``""`` for a ``code`` sample or a reply that is all code."""


@dataclass(frozen=True, slots=True)
class _Block:
    tag: str
    code: str
    line: int
    closed: bool


def extract(
    *, reply: str | None, code: str | None, fn: str, helpers_allowed: bool = False
) -> Extraction:
    """Take the candidate code out of a sample and check the code contract.

    Args:
        reply: A raw model answer (prose and fenced code). Give this or ``code``.
        code: Code as is (a ``code`` sample). Give this or ``reply``.
        fn: The name of the function the task asks for.
        helpers_allowed: Accept top-level functions other than ``fn``.

    Returns:
        The code and the contract status; never raises for any reply text.

    Raises:
        ValueError: Neither or both of ``reply`` and ``code`` were given.
    """
    if (reply is None) == (code is None):
        raise ValueError("give exactly one of reply= or code= (a sample has one or the other)")
    if code is not None:
        if not code.strip():
            return Extraction("", "no_code", "the code sample is empty", "")
        return _checked(code, "code sample", "", fn, helpers_allowed)
    return _from_reply(reply or "", fn, helpers_allowed)


def _from_reply(reply: str, fn: str, helpers_allowed: bool) -> Extraction:
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    blocks, prose = _scan(text)
    if not blocks:
        if _is_program(text):
            return _checked(text, "whole reply (no fences)", "", fn, helpers_allowed)
        return Extraction("", "no_code", "no code fences, and the reply is not Python", text)
    candidates = [b for b in blocks if _is_python_block(b)]
    if not candidates:
        return Extraction("", "no_code", f"no Python block among {_describe(blocks)}", prose)
    main = [b for b in candidates if not _is_usage(b.code, fn)]
    if len(candidates) > 1 and len(main) != 1:
        detail = f"{len(candidates)} Python blocks ({_describe(candidates)}); "
        detail += f"exactly one may define code, the rest may only use `{fn}`"
        return Extraction("", "multiple_blocks", detail, prose)
    chosen = candidates[0] if len(candidates) == 1 else main[0]
    return _checked(chosen.code, _where(chosen, len(candidates) - 1), prose, fn, helpers_allowed)


def _scan(text: str) -> tuple[list[_Block], str]:
    lines = text.split("\n")
    blocks: list[_Block] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            prose.append(lines[i])
            i += 1
            continue
        end = _closing_line(lines, i + 1, opening["fence"])
        body = [_unindent(line, len(opening["indent"])) for line in lines[i + 1 : end]]
        code = "\n".join(body) + "\n" if body else ""
        blocks.append(_Block(_tag(opening["info"]), code, i + 1, end < len(lines)))
        i = end + 1
    return blocks, "\n".join(prose).strip()


def _closing_line(lines: list[str], start: int, fence: str) -> int:
    for j in range(start, len(lines)):
        stripped = lines[j].strip()
        if len(stripped) >= len(fence) and stripped == fence[0] * len(stripped):
            return j
    return len(lines)


def _unindent(line: str, width: int) -> str:
    cut = len(line) - len(line.lstrip(" \t"))
    return line[min(cut, width) :]


def _tag(info: str) -> str:
    match = _TAG.match(info.strip())
    return match.group(1).lower() if match else ""


def _is_python_block(block: _Block) -> bool:
    if not block.code.strip() or block.code.lstrip().startswith(">>>"):
        return False
    if block.tag:
        return block.tag in _PYTHON_TAGS
    if parse_module(block.code) is None:
        lines = (line.lstrip() for line in block.code.split("\n"))
        return any(line.startswith(_DEFINITION_LINE) for line in lines)
    return _is_program(block.code)


def _is_program(code: str) -> bool:
    tree = parse_module(code)
    return tree is not None and any(not isinstance(s, ast.Expr) for s in tree.body)


def _is_usage(code: str, fn: str) -> bool:
    tree = parse_module(code)
    if tree is None:
        return False
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == fn]
    imported = [a for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    refers = bool(names) or any((a.asname or a.name) == fn for a in imported)
    binds = any(isinstance(n.ctx, ast.Store) for n in names)
    return refers and not binds and all(_is_test_definition(s, fn) for s in tree.body)


def _is_test_definition(stmt: ast.stmt, fn: str) -> bool:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return stmt.name.startswith("test") and stmt.name != fn
    if isinstance(stmt, ast.ClassDef):
        return stmt.name.startswith("Test") and stmt.name != fn
    return True


def _describe(blocks: list[_Block]) -> str:
    return ", ".join(f"{b.tag or 'untagged'} at reply line {b.line}" for b in blocks)


def _where(block: _Block, dropped: int) -> str:
    where = f"{block.tag or 'untagged'} block at reply line {block.line}"
    if not block.closed:
        where += " (unclosed fence: the reply may be truncated)"
    if dropped:
        where += f"; {dropped} usage block(s) ignored"
    return where


def _checked(code: str, where: str, prose: str, fn: str, helpers_allowed: bool) -> Extraction:
    tree = parse_module(code)
    if tree is None:
        return Extraction(code, "ok", f"{where}; does not parse (left to the gate)", prose)
    contract, problem = _check_functions(tree, fn, helpers_allowed)
    return Extraction(code, contract, f"{where}; {problem}" if problem else where, prose)


def _check_functions(tree: ast.Module, fn: str, helpers_allowed: bool) -> tuple[Contract, str]:
    defs = [s for s in tree.body if isinstance(s, _Def)]
    named = [d for d in defs if d.name == fn]
    if len(named) > 1:
        lines = ", ".join(str(d.lineno) for d in named)
        return "multiple_functions", f"`{fn}` is defined {len(named)} times (lines {lines})"
    if not named or not isinstance(named[0], ast.FunctionDef):
        return "missing_function", _missing(tree, fn, named[0] if named else None)
    helpers = [d.name for d in defs if not isinstance(d, ast.ClassDef) and d.name != fn]
    if helpers and not helpers_allowed:
        listed = ", ".join(f"`{name}`" for name in helpers)
        return "multiple_functions", f"top-level functions besides `{fn}`: {listed}"
    return "ok", ""


def _missing(tree: ast.Module, fn: str, found: _Def | None) -> str:
    if isinstance(found, ast.AsyncFunctionDef):
        return f"`{fn}` is `async def` (line {found.lineno}); the task calls a plain function"
    if isinstance(found, ast.ClassDef):
        return f"`{fn}` is a class (line {found.lineno}), not a function"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == fn and isinstance(node.ctx, ast.Store):
            return f"`{fn}` is assigned (line {node.lineno}), not defined with `def`"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == fn:
            return f"`{fn}` is only defined nested (line {node.lineno}), not at top level"
    defined = [f"`{s.name}`" for s in tree.body if isinstance(s, _Def)]
    return f"no top-level `def {fn}`; defined: {', '.join(defined) or 'nothing'}"
