"""Loading hidden.jsonl / public.jsonl: every bad input is reported as file:line."""

from __future__ import annotations

import json
import math
import sys
from importlib import resources
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from sandbox.cases import load_hidden, load_public, resolve_error_name
from sandbox.errors import InputError


def _write(tmp_path: Path, lines: list[str] | bytes, name: str = "hidden.jsonl") -> Path:
    path = tmp_path / name
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _problems(path: Path, loader=load_hidden) -> list[str]:
    with pytest.raises(InputError) as info:
        loader(path)
    return info.value.problems


GOOD = '{"fn": "is_even", "args": [2], "expect": true}'
# The schema patterns as jsonschema quotes them (repr doubles the backslash).
IDENT = r"'^[A-Za-z_][A-Za-z0-9_]*$'"
DOTTED = r"'^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$'"


# --- schemas ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["hidden.schema.json", "public.schema.json"])
def test_schemas_ship_as_package_data_and_are_valid(name):
    text = (resources.files("sandbox") / "schemas" / name).read_text(encoding="utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False


# --- hidden.jsonl: good input -------------------------------------------------


def test_hidden_decodes_every_field(tmp_path):
    path = _write(
        tmp_path,
        [
            GOOD,
            "",
            '{"fn": "is_even", "args": [true], "error": "TypeError", "name": "bool"}',
            '{"fn": "mean", "args": [[0.1, 0.2]], "expect": 0.15, "tol": 1e-9, "timeout_s": 5}',
            '{"fn": "split", "args": ["a,b"], "kwargs": {"sep": ","}, '
            '"expect": {"$tuple": ["a", "b"]}}',
            '{"fn": "f", "args": [{"$set": [1]}, {"$int": "0x10000000000000000"}], '
            '"kwargs": {"b": {"$bytes": "AAE="}}, "expect": {"$dict": [[1, {"$float": "nan"}]]}}',
            '{"fn": "parse", "args": ["{"], "error": "json.JSONDecodeError"}',
        ],
    )
    cases, problems = load_hidden(path)
    assert problems == []
    assert [c.line for c in cases] == [1, 3, 4, 5, 6, 7]
    even, boolean, mean, split, tagged, parse = cases
    assert even.args == (2,) and even.expect is True and even.error is None
    assert even.kwargs == {} and even.kwargs_wire == {} and even.args_wire == [2]
    assert boolean.error == "builtins.TypeError" and boolean.name == "bool"
    assert mean.tol == 1e-9 and type(mean.timeout_s) is float and mean.timeout_s == 5.0
    assert split.kwargs == {"sep": ","} and split.expect == ("a", "b")
    assert tagged.args == ({1}, 2**64)
    assert tagged.kwargs == {"b": b"\x00\x01"}
    assert math.isnan(tagged.expect[1])
    # The wire form is kept exactly as written: that is what the sandbox receives.
    assert tagged.args_wire == [{"$set": [1]}, {"$int": "0x10000000000000000"}]
    assert tagged.kwargs_wire == {"b": {"$bytes": "AAE="}}
    assert parse.error == "json.decoder.JSONDecodeError"


def test_hidden_accepts_crlf_and_bom(tmp_path):
    path = _write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode() + b"\r\n" + GOOD.encode() + b"\r\n")
    cases, _ = load_hidden(path)
    assert [c.line for c in cases] == [1, 2]


def test_unicode_line_separator_inside_a_string_is_not_a_line_break(tmp_path):
    path = _write(tmp_path, ['{"fn": "f", "args": ["a\u2028b"], "expect": "x\u0085y"}'])
    (case,), _ = load_hidden(path)
    assert case.args == ("a\u2028b",)


# --- hidden.jsonl: bad files --------------------------------------------------


@pytest.mark.parametrize("skip", [False, True])
def test_missing_file(tmp_path, skip):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as info:
        load_hidden(path, skip_bad_lines=skip)
    assert info.value.problems == [f"{path}: no such file"]


def test_directory_is_unreadable(tmp_path):
    problems = _problems(tmp_path)
    assert len(problems) == 1 and problems[0].startswith(f"{tmp_path}: cannot read (")


@pytest.mark.parametrize("content", [b"", b"\n\n  \n\t\r\n"], ids=["empty", "blank-lines"])
@pytest.mark.parametrize("skip", [False, True])
def test_empty_file(tmp_path, content, skip):
    path = _write(tmp_path, content)
    with pytest.raises(InputError) as info:
        load_hidden(path, skip_bad_lines=skip)
    assert info.value.problems == [f"{path}: file is empty"]


# --- hidden.jsonl: bad lines --------------------------------------------------

BAD_LINES = [
    (
        "malformed-json",
        '{"fn": "f", "args": [1',
        "invalid JSON: Expecting ',' delimiter (column 23)",
    ),
    ("not-json-at-all", "fn=f", "invalid JSON: Expecting value (column 1)"),
    ("trailing-garbage", GOOD + " x", "invalid JSON: Extra data (column 48)"),
    (
        "nan-literal",
        '{"fn": "f", "args": [NaN], "expect": 1}',
        'invalid JSON: NaN is not JSON; write {"$float": "nan" | "inf" | "-inf"}',
    ),
    (
        "overflowing-number",
        '{"fn": "f", "args": [1e400], "expect": 1}',
        "invalid JSON: number 1e400 is out of range for a float",
    ),
    (
        "duplicate-key",
        '{"fn": "f", "args": [], "expect": 1, "expect": 2}',
        "invalid JSON: duplicate key 'expect'",
    ),
    ("not-an-object", "[1, 2]", "[1, 2] is not of type 'object'"),
    ("args-not-array", '{"fn": "f", "args": "x", "expect": 1}', "args: 'x' is not of type 'array'"),
    ("missing-fn", '{"args": [], "expect": 1}', "'fn' is a required property"),
    ("missing-args", '{"fn": "f", "expect": 1}', "'args' is a required property"),
    (
        "unknown-field",
        '{"fn": "f", "args": [], "expect": 1, "expected": 1}',
        "Additional properties are not allowed ('expected' was unexpected)",
    ),
    (
        "neither-expect-nor-error",
        '{"fn": "f", "args": []}',
        "exactly one of 'expect' or 'error' is required",
    ),
    (
        "both-expect-and-error",
        '{"fn": "f", "args": [], "expect": 1, "error": "TypeError"}',
        "exactly one of 'expect' or 'error' is required",
    ),
    (
        "fn-not-identifier",
        '{"fn": "is-even", "args": [], "expect": 1}',
        f"fn: 'is-even' does not match {IDENT}",
    ),
    (
        "fn-trailing-newline",
        '{"fn": "f\\n", "args": [], "expect": 1}',
        "fn: 'f\\n' is not a Python identifier",
    ),
    (
        "fn-keyword",
        '{"fn": "class", "args": [], "expect": 1}',
        "fn: 'class' is not a Python identifier",
    ),
    ("fn-not-string", '{"fn": 3, "args": [], "expect": 1}', "fn: 3 is not of type 'string'"),
    (
        "kwargs-not-object",
        '{"fn": "f", "args": [], "kwargs": [1], "expect": 1}',
        "kwargs: [1] is not of type 'object'",
    ),
    (
        "kwargs-tag-as-name",
        '{"fn": "f", "args": [], "kwargs": {"$tuple": [1]}, "expect": 1}',
        f"kwargs: '$tuple' does not match {IDENT}",
    ),
    (
        "tol-negative",
        '{"fn": "f", "args": [], "expect": 1.0, "tol": -1}',
        "tol: -1 is less than the minimum of 0",
    ),
    (
        "tol-string",
        '{"fn": "f", "args": [], "expect": 1.0, "tol": "0.1"}',
        "tol: '0.1' is not of type 'number'",
    ),
    (
        "tol-bool",
        '{"fn": "f", "args": [], "expect": 1.0, "tol": true}',
        "tol: True is not of type 'number'",
    ),
    (
        "timeout-zero",
        '{"fn": "f", "args": [], "expect": 1, "timeout_s": 0}',
        "timeout_s: 0 is less than or equal to the minimum of 0",
    ),
    (
        "timeout-too-long",
        '{"fn": "f", "args": [], "expect": 1, "timeout_s": 601}',
        "timeout_s: 601 is greater than the maximum of 600",
    ),
    (
        "name-not-string",
        '{"fn": "f", "args": [], "expect": 1, "name": 1}',
        "name: 1 is not of type 'string'",
    ),
    (
        "error-not-dotted-name",
        '{"fn": "f", "args": [], "error": "Type Error"}',
        f"error: 'Type Error' does not match {DOTTED}",
    ),
    (
        "error-unknown",
        '{"fn": "f", "args": [], "error": "NoSuchError"}',
        "error: 'NoSuchError' is not a builtin exception; name a standard-library one with its "
        "module, e.g. json.JSONDecodeError",
    ),
    (
        "error-not-exception",
        '{"fn": "f", "args": [], "error": "int"}',
        "error: 'int' is not an exception class",
    ),
    (
        "error-third-party",
        '{"fn": "f", "args": [], "error": "numpy.AxisError"}',
        "error: 'numpy.AxisError' is not in an allowed standard-library module; expected errors "
        "must be builtin or standard-library classes",
    ),
    (
        "unknown-tag",
        '{"fn": "f", "args": [{"$tupel": [1]}], "expect": 1}',
        "args[0]: unknown tag object ['$tupel'] (known tags: $tuple, $set, $frozenset, $bytes, "
        "$float, $dict, $int)",
    ),
    (
        "opaque-not-allowed-in-cases",
        '{"fn": "f", "args": [], "expect": {"$opaque": "x.Y"}}',
        "expect: unknown tag object ['$opaque'] (known tags: $tuple, $set, $frozenset, $bytes, "
        "$float, $dict, $int)",
    ),
    (
        "tag-with-extra-key",
        '{"fn": "f", "args": [], "expect": {"$tuple": [], "x": 1}}',
        "expect: unknown tag object ['$tuple', 'x'] (known tags: $tuple, $set, $frozenset, "
        "$bytes, $float, $dict, $int)",
    ),
    (
        "bad-tag-body-nested",
        '{"fn": "f", "args": [[1, {"$float": "NaN"}]], "expect": 1}',
        "args[0][1].$float: expected one of nan, inf, -inf",
    ),
    (
        "bad-kwargs-value",
        '{"fn": "f", "args": [], "kwargs": {"data": {"$bytes": "!!"}}, "expect": 1}',
        "kwargs.data.$bytes: not valid base64",
    ),
    (
        "unhashable-set-element",
        '{"fn": "f", "args": [], "expect": {"$set": [[1]]}}',
        "expect.$set: unhashable element (unhashable type: 'list')",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [r[1:] for r in BAD_LINES], ids=[r[0] for r in BAD_LINES]
)
def test_bad_line_is_reported_with_file_and_line(tmp_path, text, message):
    path = _write(tmp_path, [GOOD, "", text, GOOD])
    assert _problems(path) == [f"{path}:3: {message}"]


def test_several_schema_problems_on_one_line_are_all_reported(tmp_path):
    path = _write(tmp_path, ['{"fn": "1", "args": {}, "tol": -1}'])
    assert _problems(path) == [
        f"{path}:1: exactly one of 'expect' or 'error' is required",
        f"{path}:1: args: {{}} is not of type 'array'",
        f"{path}:1: fn: '1' does not match {IDENT}",
        f"{path}:1: tol: -1 is less than the minimum of 0",
    ]


def test_several_decode_problems_on_one_line_are_all_reported(tmp_path):
    text = '{"fn": "f", "args": [{"$x": 1}, {"$int": "zz"}], "error": "Nope"}'
    path = _write(tmp_path, [GOOD, text])
    assert _problems(path) == [
        f"{path}:2: args[0]: unknown tag object ['$x'] (known tags: $tuple, $set, $frozenset, "
        "$bytes, $float, $dict, $int)",
        f"{path}:2: args[1].$int: not a hex integer",
        f"{path}:2: error: 'Nope' is not a builtin exception; name a standard-library one with "
        "its module, e.g. json.JSONDecodeError",
    ]


def test_non_utf8_byte_is_reported_with_its_line(tmp_path):
    path = _write(tmp_path, GOOD.encode() + b'\n{"fn": "f", "args": ["\xff"], "expect": 1}\n')
    assert _problems(path) == [f"{path}:2: not valid UTF-8 (byte 23 of the line)"]


def test_lone_surrogate_escape_is_a_problem(tmp_path):
    # JSON allows "\ud800", but no candidate can return or receive one (the wire
    # carries valid Unicode only), so a case holding one could never be graded.
    path = _write(tmp_path, [GOOD, '{"fn": "f", "args": ["\\ud800"], "expect": 1}'])
    (problem,) = _problems(path)
    assert problem.startswith(f"{path}:2:") and "not valid Unicode" in problem


def test_deep_nesting_is_a_problem_not_a_crash(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = _write(tmp_path, [GOOD, f'{{"fn": "f", "args": {deep}, "expect": 1}}'])
    assert _problems(path) == [f"{path}:2: nested too deeply"]


def test_int_beyond_digit_limit_is_a_problem(tmp_path):
    digits = "9" * (sys.get_int_max_str_digits() + 1)
    path = _write(tmp_path, [GOOD, f'{{"fn": "f", "args": [{digits}], "expect": 1}}'])
    (problem,) = _problems(path)
    assert problem.startswith(f"{path}:2: invalid JSON: Exceeds the limit")


def test_all_problems_are_collected_in_line_order(tmp_path):
    path = _write(
        tmp_path,
        b'{"fn": "f", "args": "x", "expect": 1}\n'
        + GOOD.encode()
        + b"\n\xfe\n{oops\n"
        + b'{"fn": "f", "args": [], "error": "Nope"}\n',
    )
    problems = _problems(path)
    assert [p.split(": ", 1)[0] for p in problems] == [
        f"{path}:1",
        f"{path}:3",
        f"{path}:4",
        f"{path}:5",
    ]


def test_skip_bad_lines_returns_good_cases_and_problems(tmp_path):
    path = _write(tmp_path, [GOOD, '{"fn": "f"}', GOOD.replace("[2]", "[4]")])
    cases, problems = load_hidden(path, skip_bad_lines=True)
    assert [c.line for c in cases] == [1, 3]
    assert [c.args for c in cases] == [(2,), (4,)]
    assert len(problems) == 2
    assert all(p.startswith(f"{path}:2: ") for p in problems)


def test_skip_bad_lines_still_refuses_a_file_with_no_good_line(tmp_path):
    # An empty suite would pass every candidate.
    path = _write(tmp_path, ["{", "[]"])
    with pytest.raises(InputError) as info:
        load_hidden(path, skip_bad_lines=True)
    assert info.value.problems[-1] == f"{path}: no valid line"
    assert info.value.problems[0].startswith(f"{path}:1: invalid JSON")


def test_input_error_message_lists_problems(tmp_path):
    path = _write(tmp_path, ["{"] * 25)
    with pytest.raises(InputError) as info:
        load_hidden(path)
    assert len(info.value.problems) == 25
    assert str(info.value).endswith("... and 5 more")


# --- resolve_error_name -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("TypeError", "builtins.TypeError"),
        ("BaseException", "builtins.BaseException"),
        ("KeyboardInterrupt", "builtins.KeyboardInterrupt"),
        ("Warning", "builtins.Warning"),
        ("IOError", "builtins.OSError"),
        ("json.JSONDecodeError", "json.decoder.JSONDecodeError"),
        ("json.decoder.JSONDecodeError", "json.decoder.JSONDecodeError"),
        ("socket.timeout", "builtins.TimeoutError"),
        ("xml.etree.ElementTree.ParseError", "xml.etree.ElementTree.ParseError"),
        ("concurrent.futures.CancelledError", "concurrent.futures._base.CancelledError"),
        ("decimal.InvalidOperation", "decimal.InvalidOperation"),
    ],
)
def test_resolve_error_name(name, canonical):
    assert resolve_error_name(name) == canonical


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "is not a dotted Python name"),
        ("a..b", "is not a dotted Python name"),
        ("class", "is not a dotted Python name"),
        ("NoSuchError", "is not a builtin exception"),
        ("print", "is not an exception class"),
        ("int", "is not an exception class"),
        ("json.loads", "is not an exception class"),
        ("json.NoSuchError", "json has no public class of that name"),
        ("numpy.AxisError", "not in an allowed standard-library module"),
        ("gradebox.Error", "not in an allowed standard-library module"),
        ("this.Error", "not in an allowed standard-library module"),
        ("antigravity.Error", "not in an allowed standard-library module"),
        ("tkinter.TclError", "not in an allowed standard-library module"),
        ("asyncio.__main__.Error", "private names"),
        ("__main__.Error", "private names"),
        ("_thread.error", "private names"),
        ("json.__builtins__", "private names"),
    ],
)
def test_resolve_error_name_rejects(name, fragment):
    with pytest.raises(ValueError) as info:
        resolve_error_name(name)
    assert fragment in str(info.value)


def test_resolve_error_name_does_not_import_denied_modules():
    before = {"this", "antigravity"} & set(sys.modules)
    for name in ("this.X", "antigravity.X"):
        with pytest.raises(ValueError):
            resolve_error_name(name)
    assert {"this", "antigravity"} & set(sys.modules) == before


# --- public.jsonl -------------------------------------------------------------

PUBLIC_GOOD = json.dumps(
    {
        "fn": "is_even",
        "spec": "Return True if n is even.",
        "signature": "def is_even(n: int) -> bool",
        "examples": [{"args": [2], "expect": True}, {"args": [True], "error": "TypeError"}],
        "allow_loops": False,
        "helpers_allowed": True,
        "banned_imports": ["os", "os.path"],
        "rubric": "default",
    }
)


def test_public_decodes(tmp_path):
    path = _write(tmp_path, [PUBLIC_GOOD, "", '{"fn": "mean"}'], name="public.jsonl")
    tasks, problems = load_public(path)
    assert problems == []
    assert list(tasks) == ["is_even", "mean"]
    even, mean = tasks["is_even"], tasks["mean"]
    assert even.line == 1 and even.helpers_allowed is True and even.allow_loops is False
    assert even.banned_imports == ("os", "os.path")
    assert even.examples[1] == {"args": [True], "error": "TypeError"}  # kept raw
    assert mean.line == 3 and mean.banned_imports is None and mean.rubric == "default"
    assert mean.spec == "" and mean.examples == ()


def test_public_empty_banned_imports_switches_the_check_off(tmp_path):
    path = _write(tmp_path, ['{"fn": "f", "banned_imports": []}'], name="public.jsonl")
    tasks, _ = load_public(path)
    assert tasks["f"].banned_imports == ()


def test_public_duplicate_fn(tmp_path):
    path = _write(tmp_path, [PUBLIC_GOOD, '{"fn": "other"}', PUBLIC_GOOD], name="public.jsonl")
    assert _problems(path, load_public) == [
        f"{path}:3: fn: task 'is_even' is already defined on line 1"
    ]
    tasks, problems = load_public(path, skip_bad_lines=True)
    assert tasks["is_even"].line == 1 and len(problems) == 1


PUBLIC_BAD = [
    (
        "extra-field",
        '{"fn": "f", "hidden": 1}',
        "Additional properties are not allowed ('hidden' was unexpected)",
    ),
    (
        "allow-loops-string",
        '{"fn": "f", "allow_loops": "yes"}',
        "allow_loops: 'yes' is not of type 'boolean'",
    ),
    (
        "banned-not-module",
        '{"fn": "f", "banned_imports": ["os", "not a module"]}',
        f"banned_imports/1: 'not a module' does not match {DOTTED}",
    ),
    (
        "banned-string-not-list",
        '{"fn": "f", "banned_imports": "os,socket"}',
        "banned_imports: 'os,socket' is not of type 'array'",
    ),
    (
        "rubric-path",
        '{"fn": "f", "rubric": "../secrets"}',
        "rubric: '../secrets' does not match '^[A-Za-z0-9_][A-Za-z0-9_.-]*$'",
    ),
    (
        "example-without-expect",
        '{"fn": "f", "examples": [{"args": [1]}]}',
        "examples/0: exactly one of 'expect' or 'error' is required",
    ),
    (
        "example-args-not-array",
        '{"fn": "f", "examples": [{"args": 1, "expect": 1}]}',
        "examples/0/args: 1 is not of type 'array'",
    ),
    (
        "example-unknown-tag",
        '{"fn": "f", "examples": [{"args": [{"$tupel": []}], "expect": 1}]}',
        "examples/0/args[0]: unknown tag object ['$tupel'] (known tags: $tuple, $set, "
        "$frozenset, $bytes, $float, $dict, $int)",
    ),
    (
        "example-bad-error",
        '{"fn": "f", "examples": [{"args": [], "error": "Nope"}]}',
        "examples/0/error: 'Nope' is not a builtin exception; name a standard-library one with "
        "its module, e.g. json.JSONDecodeError",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [r[1:] for r in PUBLIC_BAD], ids=[r[0] for r in PUBLIC_BAD]
)
def test_public_bad_line(tmp_path, text, message):
    path = _write(tmp_path, [PUBLIC_GOOD, text], name="public.jsonl")
    assert _problems(path, load_public) == [f"{path}:2: {message}"]


@pytest.mark.parametrize("skip", [False, True])
def test_public_missing_and_empty(tmp_path, skip):
    missing = tmp_path / "public.jsonl"
    with pytest.raises(InputError) as info:
        load_public(missing, skip_bad_lines=skip)
    assert info.value.problems == [f"{missing}: no such file"]
    empty = _write(tmp_path, b"\n", name="empty.jsonl")
    with pytest.raises(InputError) as info:
        load_public(empty, skip_bad_lines=skip)
    assert info.value.problems == [f"{empty}: file is empty"]


def test_public_non_utf8(tmp_path):
    path = _write(
        tmp_path, PUBLIC_GOOD.encode() + b'\n{"fn": "f", "spec": "caf\xe9"}\n', name="p.jsonl"
    )
    assert _problems(path, load_public) == [f"{path}:2: not valid UTF-8 (byte 25 of the line)"]
