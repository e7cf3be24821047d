"""Mutants of a reference file holding several tasks: each task is charged only its own.

A reference ``.py`` with several tasks' functions used to be mutated whole for
every task, so each task's score counted the other tasks' surviving mutants
(a correct suite scored 6/25). Now a task's mutants come from its own function
and what it uses of the module (helpers it calls, constants it reads).
"""

from __future__ import annotations

import ast
from pathlib import Path

from gradebox.model import Task
from gradebox.suite import check_suite, load_references
from gradebox.suite.mutants import make_mutants, used_by
from sandbox.types import make_case

REFERENCE = """\
LIMIT = 3


def _clip(x):
    return min(x, LIMIT)


def f(x):
    return _clip(x) + 1


def g(a, b):
    if a > b:
        return a - b
    return b - a


def unused(y):
    return y * 2
"""


def _lines_of(name: str) -> set[int]:
    tree = ast.parse(REFERENCE)
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    return set(range(node.lineno, node.end_lineno + 1))


def test_a_task_is_mutated_in_its_function_and_the_helpers_it_uses() -> None:
    f_lines = {m.line for m in make_mutants(REFERENCE, fn="f")}
    assert f_lines, "f has mutants"
    allowed = _lines_of("f") | _lines_of("_clip") | {1}  # LIMIT = 3 is read by _clip
    assert f_lines <= allowed
    assert f_lines & _lines_of("_clip") and 1 in f_lines
    g_lines = {m.line for m in make_mutants(REFERENCE, fn="g")}
    assert g_lines and g_lines <= _lines_of("g")
    everything = {m.line for m in make_mutants(REFERENCE, cap=1000)}
    assert everything & _lines_of("unused") and everything & _lines_of("g")


def test_an_unknown_fn_keeps_the_whole_module_in_scope() -> None:
    tree = ast.parse(REFERENCE)
    assert used_by(tree, "nope") is None
    assert make_mutants(REFERENCE, fn="nope") == make_mutants(REFERENCE)


def test_suite_check_charges_each_task_only_its_own_mutants(sandbox, tmp_path: Path) -> None:
    ref = tmp_path / "reference.py"
    ref.write_text(REFERENCE)
    refs = load_references(ref)
    f_cases = [make_case("f", x, expect=min(x, 3) + 1) for x in (-5, 0, 2, 3, 4, 10)]
    g_cases = [make_case("g", a, b, expect=abs(a - b)) for a, b in ((5, 1), (1, 5), (2, 2), (0, 7))]
    tasks = {"f": Task("f", tuple(f_cases)), "g": Task("g", tuple(g_cases))}
    report = check_suite(tasks, {}, refs, sandbox, runs=2)
    by_fn = {t.fn: t for t in report.tasks}
    for fn in ("f", "g"):
        mutation = by_fn[fn].mutation
        assert mutation.skipped is None
        lines = {s.mutant.line for s in mutation.survived}
        assert not lines & _lines_of("unused"), f"{fn} is charged unused()'s mutants"
        other = "g" if fn == "f" else "f"
        assert not lines & _lines_of(other), f"{fn} is charged {other}'s mutants"
        assert len(mutation.results) == len(make_mutants(REFERENCE, fn=fn))
    # g's only survivor is the equivalent `a > b` -> `a >= b`: 10 of 11, not 10 of 25.
    assert [s.mutant.description for s in by_fn["g"].mutation.survived] == ["> -> >="]
