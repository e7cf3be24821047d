"""The gate: cheap static rejects before a sandbox process is spent.

Three checks, none of which runs the candidate's code:

- **syntax**: :func:`static.source.syntax_problem`, a ``compile`` under
  ``"<candidate>"``, which also catches what a bare parse accepts (``return``
  outside a function). Any input gives a result, never an exception: null
  bytes, lone surrogates, nesting deep enough to exhaust the parser's stack and
  huge sources are syntax errors.
- **banned imports**: an AST scan of ``import`` and ``from ... import`` anywhere
  in the code (inside functions too). ``import os``, ``import os.path``,
  ``from os import path``, ``from os.path import join`` and ``import os as o``
  all count as ``os``; a dotted entry such as ``os.path`` matches that module and
  its submodules only. Relative imports (``from . import os``) are the
  candidate's own modules and are ignored.
- **O(1) claim**: :func:`static.claims.check_claim`; an explicit ``claim`` wins over
  a claim found in ``claim_text``.

The import check is a fast reject, **not** a security boundary.
``__import__("os")``, ``importlib.import_module`` reached through a builtin,
``getattr(__builtins__, ...)``, ``exec`` of a string and the like are
deliberately not chased here: that arms race belongs to the sandbox, which must
hold when this check is bypassed or switched off (an empty ``banned``).

Every parse and compile goes through :mod:`static.source`, so the gate is safe
from any number of threads at once and never prints a warning.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from static.claims import ClaimStatus, check_claim, find_claim
from static.source import parse_module, syntax_problem

__all__ = ["DEFAULT_BANNED", "GateResult", "SyntaxStatus", "check_syntax", "find_banned", "gate"]

DEFAULT_BANNED: tuple[str, ...] = (
    "os",
    "subprocess",
    "socket",
    "shutil",
    "ctypes",
    "importlib",
    "pathlib",
)
"""The import denylist used when neither the task nor the run sets one."""

SyntaxStatus = Literal["ok", "error"]
"""Whether the candidate compiles."""


@dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate found for one candidate."""

    syntax: SyntaxStatus
    """``error`` when the code does not compile."""
    syntax_detail: str
    """Where and why it does not compile (``line 3: invalid syntax``); ``""`` when ok."""
    banned: tuple[str, ...]
    """The denylist entries the code imports, sorted; empty when none (or no parse)."""
    claim: ClaimStatus
    """The complexity-claim check: ``none``, ``held``, ``false`` or ``unchecked``."""
    claim_detail: str
    """Why the claim check ended as it did."""

    @property
    def fired(self) -> bool:
        """True when the candidate is rejected: a syntax error, a banned import or a false claim."""
        return self.syntax == "error" or bool(self.banned) or self.claim == "false"


def gate(
    code: str,
    *,
    fn: str,
    banned: Sequence[str],
    claim_text: str,
    claim: str | None,
    allow_loops: bool,
) -> GateResult:
    """Run the gate's checks on candidate code, without running the code.

    Args:
        code: The candidate's source (from :func:`gradebox.pipeline.extract.extract`).
        fn: The task's function name, which a complexity claim is about.
        banned: Module names whose import rejects the candidate; empty switches
            the import check off. See :data:`DEFAULT_BANNED`.
        claim_text: Prose a claim is read from when ``claim`` is ``None``.
        claim: An explicit claim (``"O(1)"``); wins over ``claim_text``. A blank
            string means "no claim" and suppresses reading the prose.
        allow_loops: The task allows loops, so an O(1) claim is not checked.

    Returns:
        The findings; ``fired`` says whether the candidate is rejected.

    Raises:
        TypeError: ``banned`` is a single string rather than a sequence of names.
    """
    syntax, syntax_detail = check_syntax(code)
    found = find_banned(code, banned) if syntax == "ok" else ()
    stated = claim if claim is not None else find_claim(claim_text)
    status, detail = check_claim(code, fn, stated, allow_loops=allow_loops)
    return GateResult(syntax, syntax_detail, found, status, detail)


def check_syntax(code: str) -> tuple[SyntaxStatus, str]:
    """Compile the code (never run it) and report whether it is valid Python.

    Args:
        code: Any text at all.

    Returns:
        ``("ok", "")`` or ``("error", detail)`` with a detail like ``line 3: invalid syntax``.
    """
    problem = syntax_problem(code)
    return ("ok", "") if problem is None else ("error", problem)


def find_banned(code: str, banned: Sequence[str]) -> tuple[str, ...]:
    """List the denylist entries that the code imports.

    Args:
        code: The candidate's source; code that does not parse imports nothing.
        banned: Module names (``"os"``, or dotted ``"os.path"``); blank entries are ignored.

    Returns:
        The matched entries of ``banned``, sorted and without repeats.

    Raises:
        TypeError: ``banned`` is a single string rather than a sequence of names.
    """
    if isinstance(banned, str):
        raise TypeError(f"banned must be a sequence of module names, not the string {banned!r}")
    entries = {name.strip() for name in banned if name.strip()}
    tree = parse_module(code) if entries else None
    if tree is None:
        return ()
    imported = [name for node in ast.walk(tree) for name in _imported_modules(node)]
    return tuple(sorted(e for e in entries if any(_within(m, e) for m in imported)))


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        # ``from os import path`` may import the submodule ``os.path``.
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names if a.name != "*")]
    return []


def _within(module: str, entry: str) -> bool:
    return module == entry or module.startswith(entry + ".")
