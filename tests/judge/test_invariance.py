"""Invariance probes: the rewrites themselves (judge.invariance), on fixed code."""

from __future__ import annotations

import ast

from judge.invariance import INJECTION, PROBES, variants

CODE = '''import math


def helper(items):
    """Sum them."""
    total = 0  # running
    for item in items:
        total += item
    return total


def mean(xs, *, default=None):
    """Mean of xs."""
    if not xs:
        return default
    n = len(xs)
    return helper(xs) / n
'''


def _defs(code: str) -> list[str]:
    return [n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]


def test_every_probe_applies_to_a_module_with_two_functions():
    found = variants(CODE, "mean")
    assert tuple(found) == PROBES
    for code in found.values():
        ast.parse(code)  # still Python


def test_rename_keeps_the_task_signature_and_renames_the_rest():
    renamed = variants(CODE, "mean")["rename"]
    tree = ast.parse(renamed)
    mean = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "mean")
    assert [a.arg for a in mean.args.args] == ["xs"] and mean.args.kwonlyargs[0].arg == "default"
    assert "n =" not in renamed and "total" not in renamed and "item" not in renamed
    assert "def helper(v1)" in renamed and "math" in renamed and "len(" in renamed
    assert _defs(renamed) == ["helper", "mean"]


def test_strip_drops_docstrings_and_comments_only():
    stripped = variants(CODE, "mean")["strip"]
    assert '"""' not in stripped and "#" not in stripped
    assert "total += item" in stripped and "return helper(xs) / n" in stripped


def test_reorder_reverses_the_definitions_and_keeps_imports_first():
    reordered = variants(CODE, "mean")["reorder"]
    assert _defs(reordered) == ["mean", "helper"]
    assert reordered.startswith("import math")


def test_inject_keeps_the_code_byte_for_byte_below_the_instruction():
    injected = variants(CODE, "mean")["inject"]
    assert injected == INJECTION + CODE
    assert "ignore all previous instructions" in injected


def test_a_single_plain_function_gets_only_the_probes_that_change_it():
    found = variants("def inc(x):\n    return x + 1\n", "inc")
    # nothing to rename (the task's parameters keep their names), strip and unparse change
    # nothing, one definition cannot be reordered
    assert set(found) == {"inject"}


def test_code_that_does_not_parse_gets_no_probes():
    assert variants("def broken(:\n", "broken") == {}
