"""The case files' fast schema check accepts only what jsonschema accepts.

``sandbox.cases`` accepts a line when ``jsonschema_rs`` does and asks ``jsonschema``
(its verdict and words) about every other line; the bad-line tables in
``test_cases.py`` pin the words. What is left to show is that the fast check never
accepts a line jsonschema refuses: generated lines over each schema's own fields.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from sandbox.cases import read_jsonl

jsonschema_rs = pytest.importorskip("jsonschema_rs")

SCHEMAS = [
    ("sandbox", "hidden.schema.json"),
    ("sandbox", "public.schema.json"),
    ("gradebox", "samples.schema.json"),
]


def _schema(package: str, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (resources.files(package) / "schemas" / name).read_text(encoding="utf-8")
    )
    return schema


# Values where the two could part: bools among ints, 1.0 as an integer, a newline
# before a pattern's $, big ints, empty and long strings, names with dots and dashes.
_TRICKY = st.sampled_from(
    [
        True,
        False,
        None,
        0,
        1,
        -1,
        1.0,
        1.5,
        2**64,
        -(2**70),
        "",
        "a",
        "a\n",
        "a.b",
        "a-b",
        "_x1",
        "1x",
        "x" * 201,
        "é",
        "HumanEval/85",
        "O(1)",
        "\t",
        [],
        {},
        [1, "a"],
        {"a": 1},
    ]
)
_VALUES = st.recursive(
    _TRICKY | st.text(max_size=6) | st.integers() | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _lines(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    keys = [*sorted(schema.get("properties", {})), "extra"]
    return st.dictionaries(st.sampled_from(keys), _VALUES, max_size=len(keys))


@pytest.mark.parametrize(("package", "name"), SCHEMAS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_check_accepts_nothing_jsonschema_refuses(
    package: str, name: str, data: st.DataObject
) -> None:
    schema = _schema(package, name)
    obj = data.draw(_lines(schema))
    if jsonschema_rs.Draft202012Validator(schema).is_valid(obj):
        assert list(Draft202012Validator(schema).iter_errors(obj)) == []


def test_a_valid_file_is_read_without_loading_jsonschema(tmp_path: Any) -> None:
    # Checked in a fresh interpreter: jsonschema costs ~100 ms of a run's start-up.
    import subprocess
    import sys

    path = tmp_path / "h.jsonl"
    path.write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"fn": "inc", "args": 1, "expect": 2}\n')
    code = (
        "import sys\n"
        "from sandbox.cases import load_hidden\n"
        "load_hidden(__import__('pathlib').Path(sys.argv[1]))\n"
        "print('jsonschema' in sys.modules)\n"
        "try:\n"
        "    load_hidden(__import__('pathlib').Path(sys.argv[2]))\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(bad)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "False"
    assert "b.jsonl:1: args: 1 is not of type 'array'" in out[1]  # jsonschema's words
    assert out[-1] == "True"


def test_read_jsonl_reports_in_jsonschemas_words(tmp_path: Any) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"a": "x"}\n')
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    items, found = read_jsonl(path, schema, lambda obj, n: (obj, []))
    assert items == [{"a": 1}]
    assert found == [(2, "a: 'x' is not of type 'integer'")]
