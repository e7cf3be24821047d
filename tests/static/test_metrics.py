"""Tests for static.metrics: hand-computed complexity and nesting, coverage ratios, findings."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from static.metrics import check

# Each case: id, code, {function: (complexity, max_nesting)} computed by hand.
CASES = [
    ("flat", "def f():\n    return 1\n", {"f": (1, 0)}),
    (
        "if-elif-else",
        # 1 + if + elif; the elif chain is one nesting level
        "def f(x):\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n"
        "    else:\n        return 0\n",
        {"f": (3, 1)},
    ),
    (
        "else-if-is-deeper-than-elif",
        "def f(x):\n    if x:\n        pass\n    else:\n        if x is None:\n            pass\n",
        {"f": (3, 2)},
    ),
    (
        "boolean-operators-and-ternaries-add-nothing",
        "def f(a, b):\n    return a and b or (a if b else not a)\n",
        {"f": (1, 0)},
    ),
    (
        "comprehensions-add-nothing",
        "def f(xs):\n    return [x for x in xs if x if x > 1]\n",
        {"f": (1, 0)},
    ),
    (
        "loops-with-else",
        # 1 + for + while; loop else adds nothing
        "def f(xs):\n    for x in xs:\n        while x:\n            x -= 1\n        else:\n"
        "            pass\n    else:\n        pass\n",
        {"f": (3, 2)},
    ),
    (
        "try-handlers-else-finally",
        # 1 + 2 handlers + else; finally adds nothing; try is one level
        "def f(g):\n    try:\n        g()\n    except ValueError:\n        pass\n"
        "    except (TypeError, KeyError):\n        pass\n    else:\n        pass\n"
        "    finally:\n        pass\n",
        {"f": (4, 1)},
    ),
    (
        "with-adds-nesting-not-complexity",
        "def f(p):\n    with open(p) as a:\n        with open(p) as b:\n            return a, b\n",
        {"f": (1, 2)},
    ),
    (
        "match-with-catch-all",
        # 1 + 3 cases - 1 for the final wildcard
        "def f(c):\n    match c:\n        case 1:\n            return 1\n        case 2 | 3:\n"
        "            return 2\n        case _:\n            return 3\n",
        {"f": (3, 1)},
    ),
    (
        "match-guarded-capture-is-not-catch-all",
        "def f(c):\n    match c:\n        case 1:\n            return 1\n"
        "        case x if x:\n            return 2\n",
        {"f": (3, 1)},
    ),
    (
        "nested-def-counts-in-outer-not-in-nesting",
        # outer: 1 + inner def (1) + inner if (1) + outer if (1) = 4
        "def outer(x):\n    def inner(y):\n        if y:\n            return 1\n        return 0\n"
        "    if x:\n        return inner(x)\n    return 0\n",
        {"outer": (4, 1), "outer.inner": (2, 1)},
    ),
    (
        "methods-and-async",
        "class C:\n    async def m(self, xs):\n        async for x in xs:\n"
        "            async with x:\n                if x:\n                    pass\n",
        {"C.m": (3, 3)},
    ),
    (
        "deep",
        "def f(xs):\n    for a in xs:\n        if a:\n            for b in a:\n"
        "                if b:\n                    while b:\n                        b -= 1\n",
        {"f": (6, 5)},
    ),
]


CODE = {case_id: code for case_id, code, _ in CASES}


@pytest.mark.parametrize(("code", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hand_computed_complexity_and_nesting(
    code: str, expected: dict[str, tuple[int, int]]
) -> None:
    metrics, _ = check(code)
    got = {f["name"]: (f["complexity"], f["max_nesting"]) for f in metrics["functions"]}
    assert got == expected


def test_row_shape() -> None:
    code = (
        "class Shape:\n"
        '    """A shape."""\n\n'
        "    def area(self) -> float:\n"
        '        """Area."""\n'
        "        return 0.0\n\n"
        "    @staticmethod\n"
        "    def unit(size, *args: int, scale: float = 1.0, **kw):\n"
        "        if size:\n"
        "            return size\n"
        "        return scale\n\n\n"
        "def helper(x: int) -> int:\n"
        "    return x\n"
    )
    metrics, findings = check(code)
    assert metrics == {
        "parsed": True,
        "functions": [
            {"name": "Shape.area", "line": 4, "complexity": 1, "max_nesting": 0},
            {"name": "Shape.unit", "line": 9, "complexity": 2, "max_nesting": 1},
            {"name": "helper", "line": 15, "complexity": 1, "max_nesting": 0},
        ],
        # Shape and area documented; unit and helper not: 2 / 4
        "docstring_coverage": 0.5,
        # area: return (self skipped) 1/1; unit (static, so `size` counts): size, args,
        # scale, kw, return -> 2/5; helper: 2/2. Total 5/8.
        "annotation_coverage": 0.625,
        "max_complexity": 2,
        "max_nesting": 1,
    }
    assert json.loads(json.dumps(metrics)) == metrics
    assert findings == []


def test_no_functions() -> None:
    metrics, findings = check("X = 1\nprint(X)\n")
    assert metrics["parsed"] is True
    assert metrics["functions"] == []
    assert metrics["docstring_coverage"] is None
    assert metrics["annotation_coverage"] is None
    assert metrics["max_complexity"] is None
    assert findings == []


def test_class_without_methods_counts_for_docstrings() -> None:
    metrics, _ = check('class A:\n    """Doc."""\n\n\nclass B:\n    pass\n')
    assert metrics["docstring_coverage"] == 0.5
    assert metrics["annotation_coverage"] is None


@pytest.mark.parametrize("code", ["def f(:\n", "x = '\\N{nope}'\n", "\0", "(" * 500 + ")" * 500])
def test_unparseable_code_never_raises(code: str) -> None:
    metrics, findings = check(code)
    assert metrics["parsed"] is False
    assert metrics["functions"] == []
    assert findings == []


def test_findings_above_thresholds_only() -> None:
    deep = CODE["deep"]  # complexity 6, nesting 5
    _, at_limit = check(deep, max_complexity=6, max_nesting=5)
    assert at_limit == []
    _, over = check(deep, max_complexity=5, max_nesting=4)
    assert [(f.rule, f.severity, f.line, f.col, f.layer) for f in over] == [
        ("GBX301", "low", 1, 1, "metrics"),
        ("GBX302", "low", 1, 1, "metrics"),
    ]
    assert over[0].message == "`f` is too complex (6 > 5)"
    assert over[1].message == "`f` nests 5 blocks deep (> 4)"


def test_default_thresholds() -> None:
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(10))
    _, findings = check(f"def f(x):\n{branches}    return -1\n")
    assert [f.rule for f in findings] == ["GBX301"]  # 11 > 10
    _, findings = check(CODE["deep"])
    assert [f.rule for f in findings] == ["GBX302"]  # 5 > 4


def _ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


@pytest.mark.skipif(_ruff() is None, reason="ruff binary not installed")
def test_complexity_agrees_with_ruff_c901(tmp_path: Path) -> None:
    code = "\n\n".join(case[1] for case in CASES)
    (tmp_path / "corpus.py").write_text(code, encoding="utf-8")
    out = subprocess.run(
        [
            str(_ruff()),
            "check",
            "--isolated",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=0",
            "--output-format",
            "json",
            "corpus.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    reported = json.loads(out.stdout)
    theirs = sorted((r["location"]["row"], _reported_complexity(r["message"])) for r in reported)
    metrics, _ = check(code)
    ours = sorted((f["line"], f["complexity"]) for f in metrics["functions"])
    assert ours == theirs


def _reported_complexity(message: str) -> int:
    match = re.search(r"\((\d+) > 0\)", message)
    assert match is not None, message
    return int(match[1])


@given(st.text(max_size=200))
def test_any_text_is_safe(code: str) -> None:
    metrics, findings = check(code)
    assert set(metrics) >= {"functions", "docstring_coverage", "annotation_coverage"}
    assert all(f.rule in {"GBX301", "GBX302"} for f in findings)


# Attacks: code as long or as deep as the compiler accepts must be measured, not raise.


def _elif_chain(branches: int) -> str:
    arms = "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, branches))
    return f"def f(x):\n    if x == 0:\n        return 0\n{arms}    return -1\n"


def _compiles(code: str) -> None:
    compile(code, "<candidate>", "exec", dont_inherit=True)  # the sandbox would run it


def test_a_1000_branch_elif_chain_is_measured_not_a_recursion_error() -> None:
    code = _elif_chain(1000)
    _compiles(code)
    metrics, findings = check(code)
    assert metrics["functions"] == [{"name": "f", "line": 1, "complexity": 1001, "max_nesting": 1}]
    assert [f.rule for f in findings] == ["GBX301"]


def test_a_1000_term_expression_and_deep_blocks_are_measured() -> None:
    terms = "def f(x):\n    return x" + " + 1" * 1000 + "\n"
    deep = "def g(x):\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(90))
    deep += "    " * 91 + "return 1\n"
    for code in (terms, deep):
        _compiles(code)
    assert check(terms)[0]["max_complexity"] == 1
    assert (check(deep)[0]["max_complexity"], check(deep)[0]["max_nesting"]) == (91, 90)


def test_many_nested_functions_and_or_patterns_are_measured() -> None:
    nested = "".join("    " * i + f"def f{i}():\n" for i in range(90)) + "    " * 90 + "pass\n"
    pattern = "".join(f"({i} | " for i in range(150)) + "150" + ")" * 150  # nested or-patterns
    match = f"def m(x):\n    match x:\n        case {pattern} | _:\n            return 1\n"
    for code in (nested, match):
        _compiles(code)
    assert len(check(nested)[0]["functions"]) == 90
    assert check(match)[0]["functions"][0]["complexity"] == 1  # the last case catches all
