"""The mutator, on a table of small references (tests/cases/suites/mutants.jsonl)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from gradebox.suite.mutants import KINDS, make_mutants

TABLE = Path(__file__).resolve().parents[2] / "cases" / "suites" / "mutants.jsonl"
ROWS = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_mutants_of_each_reference_are_exactly_the_expected_ones(row):
    got = [f"{m.id} | {m.description}" for m in make_mutants(row["code"])]
    assert got == row["expect"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_mutant_compiles_differs_and_has_a_diff(row):
    original = ast.dump(ast.parse(row["code"]))
    dumps = set()
    for m in make_mutants(row["code"]):
        tree = ast.parse(m.code)
        compile(m.code, "<mutant>", "exec")
        assert ast.dump(tree) != original
        dumps.add(ast.dump(tree))
        assert m.diff.startswith("--- reference\n+++ mutant ")
    assert len(dumps) == len(make_mutants(row["code"])), "identical mutants are kept once"


def test_annotations_docstrings_and_fstrings_are_left_alone():
    code = 'def f(x: "int" = 3) -> list[int]:\n    """Doc 1."""\n    return [f"{x + 1}"]\n'
    got = [m.id for m in make_mutants(code)]
    # Only the default value, and the return statement as a whole: nothing inside
    # the annotations, the docstring or the f-string.
    assert got == ["CONST:1:18:+1", "CONST:1:18:-1", "DROP:3:5:pass", "RET:3:12:none"]


def test_edits_keep_comments_and_layout_around_the_mutation():
    code = "def f(x):\n    # keep me\n    y = x  +  1  # and me\n    return y\n"
    m = next(m for m in make_mutants(code) if m.kind == "AOR")
    assert m.code == "def f(x):\n    # keep me\n    y = (x - 1)  # and me\n    return y\n"
    assert m.id == "AOR:3:12:-"


def test_cap_selects_round_robin_over_kinds_and_is_deterministic():
    code = "def f(xs):\n" + "".join(f"    xs[{i}] = xs[{i}] + {i} < {i + 1}\n" for i in range(20))
    everything = make_mutants(code, cap=10_000)
    capped = make_mutants(code, cap=12)
    assert capped == make_mutants(code, cap=12)
    assert len(capped) == 12 < len(everything)
    kinds = {m.kind for m in capped}
    assert kinds == {m.kind for m in everything}  # every operator that applies is represented
    assert set(kinds) <= set(KINDS)
    assert [m.id for m in capped] == sorted(
        (m.id for m in capped), key=lambda i: [int(p) for p in i.split(":")[1:3]]
    )


def test_a_mutant_that_does_not_compile_is_dropped():
    # Dropping the only statement of the body would leave ``pass``; swapping the
    # returns of a generator function would not parse differently from itself.
    code = "def f(x):\n    return x\n"
    assert [m.id for m in make_mutants(code)] == ["DROP:2:5:pass", "RET:2:12:none"]


def test_syntax_error_is_raised():
    with pytest.raises(SyntaxError):
        make_mutants("def f(:\n")
