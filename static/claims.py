r"""Complexity claims: find one in prose, and try to falsify an O(1) claim.

Only a plain ``O(1)`` time claim is ever checked. Every other claim (``O(n)``,
``O(n log n)``, ``amortized O(1)``, several different claims at once) comes
back ``unchecked``: a static check cannot decide it, so it never guesses.

What counts as a claim in prose (:func:`find_claim`):

- a Big-O bound, ``O(1)``, ``O (1)``, ``O(n log n)``, ``O(n^2)``, ``\mathcal{O}(1)``,
  normalised (``O(nlogn)`` and ``O(n * log(n))`` both become ``O(n log n)``);
- ``constant time`` (``O(1)``), ``logarithmic time``, ``linear time``, ``quadratic time``;
- qualified: ``amortized`` / ``amortised``, ``average`` / ``on average`` / ``expected``
  and ``best case`` become a prefix (``amortized O(1)``); ``worst case`` is plain.

Not claims about the function, and skipped: space bounds (``O(1) space``,
``Space: O(1)``, ``O(1) extra memory``); bounds of single operations
(``a set for O(1) lookups``); bounds of alternatives (``instead of O(n)``,
``the naive approach is O(n^2)``, ``better than O(n)``, ``not O(1)``).
Several different time claims are returned together, in order, joined by
``"; "`` (``"O(n^2); O(n)"``), which :func:`check_claim` leaves unchecked.

How an ``O(1)`` claim is falsified (:func:`check_claim`): a ``for``, ``async for``
or ``while`` loop, or a list/set/dict comprehension or generator expression,
anywhere in the body of ``fn`` -- nested functions, lambdas and classes
included, since an inner helper is there to be called -- or in a top-level
function that ``fn`` calls by name (followed transitively); or a call back to
``fn`` from any of those (recursion, direct or mutual). With ``allow_loops`` the
claim is ``held`` without looking. ``held`` means "not falsified", not
"proven": iteration inside builtins (``sum``, ``sorted``, ``in`` on a list,
``str.join``) and inside methods is not seen.

The scan is linear in the text: every match looks at a bounded window around
itself (40 characters for a closing parenthesis, 60 before, 40 after), and
repeated claims are merged through a dict, so a long reply cannot stall a caller.

Code is parsed with :func:`static.source.parse_module` (thread-safe, silent).
This module imports no other layer.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import Literal

from static.source import parse_module

__all__ = ["ClaimStatus", "check_claim", "find_claim"]

ClaimStatus = Literal["none", "held", "false", "unchecked"]
"""Outcome of the claim check: no claim, not falsified, falsified, not checkable."""

_BIG_O = re.compile(r"(?<![\w\\])(?:\\mathcal\{O\}|O)\s?\(")
_WORDED = re.compile(r"\b(constant|logarithmic|linear|quadratic)[- ]time\b", re.IGNORECASE)
_WORDED_BOUND = {
    "constant": "O(1)",
    "logarithmic": "O(log n)",
    "linear": "O(n)",
    "quadratic": "O(n^2)",
}
_WORD = re.compile(r"[a-z][a-z'-]*")
_SENTENCE_END = re.compile(r"[.;!?\n]")
_QUALIFIERS = {
    "amortized": "amortized",
    "amortised": "amortized",
    "average": "average",
    "average-case": "average",
    "expected": "average",
    "best-case": "best-case",
}
_FILLER = frozenset({"extra", "additional", "auxiliary", "worst", "worst-case", "case"})
_FILLER_ALL = _FILLER | _QUALIFIERS.keys() | {"on", "in", "the"}
_SPACE_WORDS = frozenset({"space", "memory"})
_KIND_WORDS = _SPACE_WORDS | {"time", "runtime"}
_OPERATION_WORDS = frozenset(
    {
        "lookup",
        "lookups",
        "access",
        "accesses",
        "membership",
        "insert",
        "inserts",
        "insertion",
        "insertions",
        "deletion",
        "deletions",
        "append",
        "appends",
        "check",
        "checks",
        "operation",
        "operations",
        "retrieval",
        "indexing",
    }
)
_NOT_THIS = frozenset(
    {"not", "never", "instead", "than", "unlike", "naive", "brute", "brute-force"}
)
_LOOP_NODES: dict[type[ast.AST], str] = {
    ast.For: "`for` loop",
    ast.AsyncFor: "`async for` loop",
    ast.While: "`while` loop",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
}
_Functions = dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


def find_claim(text: str) -> str | None:
    """Find the time-complexity claim in prose.

    Args:
        text: Prose around the code (a reply with its code fences removed).

    Returns:
        The normalised claim (``"O(1)"``, ``"O(n log n)"``, ``"amortized O(1)"``),
        several different claims joined by ``"; "``, or ``None`` when the text
        makes no time claim about the solution.
    """
    found = dict.fromkeys(_bounds(text))  # first occurrences, in order, in linear time
    return "; ".join(found) if found else None


def check_claim(
    code: str, fn: str, claim: str | None, *, allow_loops: bool
) -> tuple[ClaimStatus, str]:
    """Check a complexity claim against the code of ``fn``.

    Args:
        code: The candidate's source. It is parsed, never run.
        fn: Name of the top-level function the claim is about.
        claim: The claim as given (normalised here, so ``"constant time"`` works);
            ``None`` or blank means no claim.
        allow_loops: The task allows loops, so an O(1) claim is not checked.

    Returns:
        The status and a one-line detail, e.g.
        ``("false", "line 3: `for` loop in `is_even`")``.
    """
    normalized = _normalize(claim)
    if normalized is None:
        return "none", "no complexity claim"
    if normalized != "O(1)":
        return "unchecked", f"{normalized!r} is not checked statically; only plain O(1) is"
    if allow_loops:
        return "held", "the task allows loops, so the O(1) claim is not checked"
    return _check_constant(code, fn)


def _normalize(claim: str | None) -> str | None:
    if claim is None or not claim.strip():
        return None
    return find_claim(claim) or " ".join(claim.split())


def _bounds(text: str) -> list[str]:
    matches: list[tuple[int, int, str]] = []
    for m in _BIG_O.finditer(text):
        close = _closing_paren(text, m.end())
        if close is not None:
            matches.append((m.start(), close + 1, _normalize_bound(text[m.end() : close])))
    for m in _WORDED.finditer(text):
        matches.append((m.start(), m.end(), _WORDED_BOUND[m.group(1).lower()]))
    matches.sort()
    claims = []
    previous_end = 0
    for start, end, bound in matches:
        before = _words(_clause_before(text, previous_end, start))[-4:]
        after = _words(_clause_after(text, end))[:4]
        previous_end = end
        if _is_about_solution_time(before, after):
            claims.append(_qualify(bound, before + after))
    return claims


def _closing_paren(text: str, start: int) -> int | None:
    depth = 1
    for i in range(start, min(len(text), start + 40)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _normalize_bound(inner: str) -> str:
    s = inner.replace("²", "^2").replace("³", "^3").replace("**", "^")
    s = re.sub(r"\s*\^\s*", "^", s)
    s = re.sub(r"log\s*\(\s*(\w+)\s*\)", r"log \1", s)
    s = re.sub(r"\s*[*·⋅]\s*", " ", s)
    s = re.sub(r"(?<=[a-z0-9])log", " log", s)
    s = re.sub(r"log(?=[a-z])", "log ", s)
    return f"O({' '.join(s.split())})"


def _clause_before(text: str, floor: int, start: int) -> str:
    window = text[max(floor, start - 60) : start]
    ends = list(_SENTENCE_END.finditer(window))
    return window[ends[-1].end() :] if ends else window


def _clause_after(text: str, end: int) -> str:
    window = text[end : end + 40]
    return re.split(r"[.,;:!?()\n]", window, maxsplit=1)[0]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _is_about_solution_time(before: list[str], after: list[str]) -> bool:
    if any(w in _NOT_THIS or w.endswith("n't") for w in before):
        return False
    following = [w for w in after if w not in _FILLER_ALL]
    if following and following[0] in _OPERATION_WORDS:
        return False
    if following and following[0] in _KIND_WORDS:
        return following[0] not in _SPACE_WORDS
    if " ".join(before).find("time and space") >= 0:
        return True
    kinds = [w for w in before if w in _KIND_WORDS]
    return not kinds or kinds[-1] not in _SPACE_WORDS


def _qualify(bound: str, context: list[str]) -> str:
    for word, following in itertools.pairwise([*context, ""]):
        if word in _QUALIFIERS:
            return f"{_QUALIFIERS[word]} {bound}"
        if word == "best" and following == "case":
            return f"best-case {bound}"
    return bound


def _check_constant(code: str, fn: str) -> tuple[ClaimStatus, str]:
    tree = parse_module(code)
    if tree is None:
        return "unchecked", "the code does not parse"
    functions: _Functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if fn not in functions:
        return "unchecked", f"no top-level function `{fn}` to check"
    found = _first_iteration(functions, fn)
    if found is not None:
        return "false", found
    return "held", f"no loop, comprehension or recursion in `{fn}` or the functions it calls"


def _first_iteration(functions: _Functions, fn: str) -> str | None:
    queue, seen = [fn], set[str]()
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        nodes = [n for stmt in functions[name].body for n in ast.walk(stmt)]
        where = f"`{fn}`" if name == fn else f"`{name}` (called from `{fn}`)"
        loops = sorted((n for n in nodes if type(n) in _LOOP_NODES), key=_line)
        if loops:
            return f"line {_line(loops[0])}: {_LOOP_NODES[type(loops[0])]} in {where}"
        callees = [(n.id, n) for n in _called_names(nodes) if n.id in functions]
        recursive = [n for name, n in callees if name == fn]
        if recursive:
            return f"line {_line(recursive[0])}: `{fn}` is called again in {where} (recursion)"
        queue.extend(name for name, _ in callees)
    return None


def _called_names(nodes: list[ast.AST]) -> list[ast.Name]:
    return [n.func for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0))
