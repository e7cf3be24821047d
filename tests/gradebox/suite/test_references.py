"""Loading references: JSON Lines or a Python file, problems as file:line."""

from __future__ import annotations

import json

import pytest

from gradebox.errors import BadInput
from gradebox.suite.references import load_references


def test_jsonl_and_python_file(tmp_path, examples_dir):
    refs = load_references(examples_dir / "reference.jsonl")
    assert list(refs) == ["is_even", "mean", "split_pair", "fib", "dedupe"]
    py = tmp_path / "ref.py"
    py.write_text("import math\n\ndef a(x):\n    return x\n\ndef b(y):\n    return y\n")
    both = load_references(py)
    assert list(both) == ["a", "b"] and both["a"].code == both["b"].code


def test_every_bad_line_is_reported_with_its_line(tmp_path):
    path = tmp_path / "reference.jsonl"
    lines = [
        {"fn": "a", "code": "def a(x):\n    return x\n"},
        {"fn": "b", "code": "def b(:\n"},
        {"fn": "c", "code": "def other():\n    pass\n"},
        {"fn": "a", "code": "def a(x):\n    return 1\n"},
        {"fn": "d"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + "not json\n")
    with pytest.raises(BadInput) as err:
        load_references(path)
    problems = err.value.problems
    assert problems[0].startswith(f"{path}:2: code: syntax error")
    assert problems[1] == f"{path}:3: code: defines no top-level function named 'c'"
    assert problems[2] == f"{path}:4: fn: 'a' already has a reference on line 1"
    assert problems[3].startswith(f"{path}:5: ") and "code" in problems[3]
    assert problems[4].startswith(f"{path}:6: invalid JSON")


def test_python_file_problems(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\ndef f(:\n")
    with pytest.raises(BadInput, match=r"bad\.py:2: syntax error"):
        load_references(bad)
    with pytest.raises(BadInput, match="no such file"):
        load_references(tmp_path / "missing.py")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(BadInput, match="defines no top-level function"):
        load_references(empty)
