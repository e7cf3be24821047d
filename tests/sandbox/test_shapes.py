"""Checking hidden.jsonl by shape accepts and refuses exactly what a check of every line does."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from sandbox.cases import hidden_file_schema, parse_hidden_case, read_jsonl
from sandbox.shapes import ShapeMemo, _canonical, type_only_properties

ROOT = Path(__file__).resolve().parents[2]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e300])
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
TEMPLATES: list[dict[str, Any]] = [
    {"fn": "f", "args": [1], "expect": 2},
    {"fn": "f", "args": [], "error": "ValueError"},
    {"fn": "g", "args": [1], "kwargs": {"k": 1}, "expect": [1], "tol": 0.1, "timeout_s": 1},
    {"fn": "s", "kind": "stdio", "stdin": "1 2", "expect": "3", "compare": "tokens"},
    {"fn": "p", "kind": "program", "program": "def t():\n    pass\n", "test": "t"},
    {"fn": "f", "kind": "function", "args": [[1, 2]], "expect": {"$tuple": [1]}},
]
KEYS = sorted({*hidden_file_schema()["properties"], "extra"})
SMALL = st.sampled_from(
    [None, True, 0, 1, -1, 0.5, 700, "", "x", "f", "tokens", "strict", "stdio", "program",
     "function", "TypeError", "json.JSONDecodeError", [], [1], {}, {"a": 1}]
)  # fmt: skip


@st.composite
def lines(draw: st.DrawFn) -> dict[str, Any]:
    """A line near a valid one: a template with values swapped, keys added or dropped."""
    line = dict(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(KEYS))
        action = draw(st.sampled_from(["json", "small", "drop"]))
        if action == "drop":
            line.pop(key, None)
        else:
            line[key] = draw(JSON if action == "json" else SMALL)
    return line


def _read(rows: list[dict[str, Any]], *, by_shape: bool) -> tuple[list[Any], list[Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hidden.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return read_jsonl(path, hidden_file_schema(), parse_hidden_case, by_shape=by_shape)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines(), min_size=1, max_size=12))
def test_by_shape_finds_what_a_check_of_every_line_finds(rows: list[dict[str, Any]]) -> None:
    assert _read(rows, by_shape=True) == _read(rows, by_shape=False)


def test_the_corpus_reads_the_same_by_shape() -> None:
    hidden: list[Any] = list(TEMPLATES)
    for row in map(json.loads, (ROOT / "tests/cases/bad_inputs.jsonl").read_text().splitlines()):
        for text in (row.get("hidden") or "").splitlines():
            try:
                hidden.append(json.loads(text))
            except ValueError:
                continue  # refused before any schema check
    assert len(hidden) > len(TEMPLATES)
    assert _read(hidden * 2, by_shape=True) == _read(hidden * 2, by_shape=False)


@given(JSON)
def test_a_canonical_value_has_exactly_the_json_types_of_the_value(value: Any) -> None:
    checker = Draft202012Validator.TYPE_CHECKER
    types = ["array", "boolean", "integer", "null", "number", "object", "string"]

    def kinds(v: Any) -> list[str]:
        return [t for t in types if checker.is_type(v, t)]

    assert kinds(_canonical(value)) == kinds(value)


def test_the_hidden_schema_checks_args_expect_and_stdin_by_type_only() -> None:
    assert type_only_properties(hidden_file_schema()) == {"args", "expect", "stdin"}


def test_a_property_with_any_other_check_keeps_its_value() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array"}, "b": {"type": "array"}},
        "allOf": [{"if": {"required": ["a"]}, "then": {"properties": {"b": {"maxItems": 1}}}}],
    }
    assert type_only_properties(schema) == {"a"}


def test_a_schema_not_analysed_gets_no_memo() -> None:
    for root in (
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"patternProperties": {"^a": {"type": "string"}}},
        {"additionalProperties": {"type": "string"}},
        {"enum": [{"a": 1}]},
        {"allOf": [{"dependentSchemas": {"a": {}}}]},
    ):
        assert ShapeMemo.of({"type": "object", **root}) is None, root


def test_lines_of_one_shape_are_checked_once() -> None:
    memo = ShapeMemo.of(hidden_file_schema())
    assert memo is not None
    one = memo.shape({"fn": "f", "args": [1, [2]], "expect": {"a": 1}})
    two = memo.shape({"fn": "f", "args": [], "expect": {}})
    assert one == two
    assert memo.shape({"fn": "g", "args": [], "expect": {}}) != one  # fn is checked by value
    assert memo.shape({"fn": "f", "args": [], "expect": "s"}) != one  # a stdio case needs a str
    assert memo.shape({"fn": "f", "args": 1, "expect": {}}) != one
