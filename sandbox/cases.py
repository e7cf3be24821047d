"""Loading and validating ``hidden.jsonl`` and ``public.jsonl``.

Each line is one JSON object, checked against a JSON schema shipped with the
package (``sandbox/schemas/*.schema.json``), then decoded: tagged values with
:func:`sandbox.child.wire.from_wire` (no ``$opaque`` in case files) and an
expected ``error`` name with :func:`resolve_error_name`.

Every problem is reported as ``file:line: what is wrong`` and all of them are
collected before anything is raised, so one run shows every bad line. A file
that cannot be used at all (missing, unreadable, empty, or without a single
good line) always raises: grading against an empty suite would pass
everything.
"""

from __future__ import annotations

import builtins
import importlib
import json
import keyword
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from sandbox.child.wire import WireError, from_wire
from sandbox.errors import InputError
from sandbox.shapes import ShapeMemo
from sandbox.types import HiddenCase, PublicTask

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = [
    "hidden_file_schema",
    "load_hidden",
    "load_public",
    "parse_hidden_case",
    "parse_public_task",
    "read_jsonl",
    "resolve_error_name",
]

#: Standard-library modules never imported to resolve an error name: they act
#: on import (open a browser, print, start a GUI, write grammar caches) or are
#: test scaffolding.
_IMPORT_DENYLIST = frozenset(
    {
        "antigravity",
        "ensurepip",
        "idlelib",
        "lib2to3",
        "readline",
        "rlcompleter",
        "test",
        "this",
        "tkinter",
        "turtle",
        "turtledemo",
        "venv",
    }
)

#: Longest problem message kept; jsonschema repeats the offending value.
_MAX_MESSAGE = 300

_T = TypeVar("_T")


class _LineError(ValueError):
    """A problem found while parsing one line (duplicate key, bad number)."""


@dataclass(frozen=True, slots=True)
class _Line:
    """One non-blank line of a JSON Lines file."""

    number: int
    """1-based line number."""
    text: str
    """The decoded text, without the line ending."""


def resolve_error_name(name: str) -> str:
    """Map an expected-error name to the canonical dotted name of its class.

    A bare name is looked up in :mod:`builtins`; a dotted name is resolved by
    importing its standard-library module. Third-party modules, private
    names (leading ``_``) and modules that act on import are refused.

    Args:
        name: As written in a case file, e.g. ``TypeError`` or ``json.JSONDecodeError``.

    Returns:
        ``module.qualname`` of the class, e.g. ``builtins.TypeError`` or
        ``json.decoder.JSONDecodeError`` (aliases resolve to the real class:
        ``IOError`` gives ``builtins.OSError``).

    Raises:
        ValueError: If the name does not resolve to a builtin or standard-library
            subclass of ``BaseException``.

    Example:
        >>> resolve_error_name("json.JSONDecodeError")
        'json.decoder.JSONDecodeError'
    """
    parts = name.split(".")
    if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise ValueError(f"{name!r} is not a dotted Python name")
    if any(p.startswith("_") for p in parts):
        # Private names, and ``__main__`` modules that run on import.
        raise ValueError(f"{name!r}: private names (leading '_') are not accepted")
    obj = _lookup_builtin(name) if len(parts) == 1 else _lookup_stdlib(name, parts)
    if not (isinstance(obj, type) and issubclass(obj, BaseException)):
        raise ValueError(f"{name!r} is not an exception class")
    return f"{obj.__module__}.{obj.__qualname__}"


def _lookup_builtin(name: str) -> object:
    if not hasattr(builtins, name):
        raise ValueError(
            f"{name!r} is not a builtin exception; name a standard-library one "
            "with its module, e.g. json.JSONDecodeError"
        )
    return getattr(builtins, name)


def _lookup_stdlib(name: str, parts: list[str]) -> object:
    top = parts[0]
    if top not in sys.stdlib_module_names or top in _IMPORT_DENYLIST:
        raise ValueError(
            f"{name!r} is not in an allowed standard-library module; expected errors must be "
            "builtin or standard-library classes"
        )
    # The longest importable prefix is the module; the rest is attribute access.
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj: object = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        except Exception as exc:  # a stdlib module can fail to import in many ways
            raise ValueError(f"{name!r}: module {module_name} cannot be imported ({exc})") from exc
        for attr in parts[split:]:
            if not hasattr(obj, attr):
                raise ValueError(f"{name!r}: {module_name} has no public class of that name")
            obj = getattr(obj, attr)
        return obj
    raise ValueError(f"{name!r}: module {top} cannot be imported")


def load_hidden(path: Path, *, skip_bad_lines: bool = False) -> tuple[list[HiddenCase], list[str]]:
    """Load and validate a ``hidden.jsonl`` file.

    Args:
        path: The file.
        skip_bad_lines: Return the good cases and the problems instead of
            raising when some lines are bad.

    Returns:
        The decoded cases in file order, and the problems found (empty unless
        ``skip_bad_lines``), each as ``file:line: what is wrong``.

    Raises:
        InputError: When any line is bad (unless ``skip_bad_lines``), and always
            when the file is missing, unreadable, empty or has no good line.
    """
    cases, found = read_jsonl(path, hidden_file_schema(), parse_hidden_case, by_shape=True)
    return cases, _finish(path, found, bool(cases), skip_bad_lines=skip_bad_lines)


def hidden_file_schema() -> dict[str, Any]:
    """The schema of a ``hidden.jsonl`` line: every kind of case.

    ``hidden.schema.json`` is the function case (also what the service accepts);
    ``hidden_kinds.schema.json`` adds stdio and program cases, ``rel_tol`` and
    ``compare``, and replaces its ``required`` and ``allOf``.
    """
    schema = _schema("hidden.schema.json")
    kinds = _schema("hidden_kinds.schema.json")
    schema["properties"] = {**schema["properties"], **kinds["properties"]}
    schema["required"] = ["fn"]
    schema["allOf"] = kinds["allOf"]
    return schema


def load_public(
    path: Path, *, skip_bad_lines: bool = False
) -> tuple[dict[str, PublicTask], list[str]]:
    """Load and validate a ``public.jsonl`` file.

    A task (its ``task`` id, else its ``fn``) defined twice is a problem on the
    second line; with ``skip_bad_lines`` the first definition is kept.

    Args:
        path: The file.
        skip_bad_lines: Return the good tasks and the problems instead of
            raising when some lines are bad.

    Returns:
        The tasks by id (in file order), and the problems found (empty
        unless ``skip_bad_lines``), each as ``file:line: what is wrong``.

    Raises:
        InputError: When any line is bad (unless ``skip_bad_lines``), and always
            when the file is missing, unreadable, empty or has no good line.
    """
    tasks, found = _collect(path, "public.schema.json", parse_public_task)
    by_id: dict[str, PublicTask] = {}
    for task in tasks:
        first = by_id.setdefault(task.task, task)
        if first is not task:
            what = "task" if task.task != task.fn else "fn"
            message = f"{what}: task {task.task!r} is already defined on line {first.line}"
            found.append((task.line, message))
    return by_id, _finish(path, found, bool(by_id), skip_bad_lines=skip_bad_lines)


def _collect(
    path: Path,
    schema_name: str,
    build: Callable[[dict[str, Any], int], tuple[_T | None, list[str]]],
) -> tuple[list[_T], list[tuple[int, str]]]:
    """Read, validate and build every line; return the items and ``(line, problem)``."""
    return read_jsonl(path, _schema(schema_name), build)


def read_jsonl(
    path: Path,
    schema: dict[str, Any],
    build: Callable[[dict[str, Any], int], tuple[_T | None, list[str]]],
    *,
    by_shape: bool = False,
) -> tuple[list[_T], list[tuple[int, str]]]:
    """Read a JSON Lines file, check each line against ``schema``, and build items.

    Shared by every JSON Lines input (cases here, samples in the grader) so all of
    them report problems the same way.

    Args:
        path: The file.
        schema: A JSON schema (draft 2020-12) for one line.
        build: Turns a valid object and its line number into an item, or returns
            ``(None, problems)``.
        by_shape: Check a line whose shape an earlier line showed valid no more
            (:class:`sandbox.shapes.ShapeMemo`; the same lines pass and fail, with the
            same messages): for files of many lines that differ in values the schema
            checks by type only, such as hidden cases.

    Returns:
        The items built, and every problem as ``(line number, message)``.

    Raises:
        InputError: The file is missing, unreadable or empty.
    """
    lines, found = _read_lines(path)
    if not lines and not found:
        raise InputError([f"{path}: file is empty"])
    validator = _Validator(schema)
    memo = ShapeMemo.of(schema) if by_shape else None
    good: list[_T] = []
    for line in lines:
        item, problems = _check_line(line, validator, build, memo)
        found.extend((line.number, p) for p in problems)
        if item is not None:
            good.append(item)
    return good, found


def _finish(
    path: Path, found: list[tuple[int, str]], any_good: bool, *, skip_bad_lines: bool
) -> list[str]:
    """Format problems in line order; raise unless skipping and something is left."""
    problems = [
        f"{path}:{number}: {message}" for number, message in sorted(found, key=_line_number)
    ]
    if problems and not skip_bad_lines:
        raise InputError(problems)
    if not any_good:
        raise InputError([*problems, f"{path}: no valid line"])
    return problems


def _schema(name: str) -> dict[str, Any]:
    text = (resources.files("sandbox") / "schemas" / name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _read_lines(path: Path) -> tuple[list[_Line], list[tuple[int, str]]]:
    """Split a file into non-blank lines, decoding each as strict UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError([f"{path}: no such file"]) from exc
    except OSError as exc:
        raise InputError([f"{path}: cannot read ({exc.strerror or exc})"]) from exc
    data = data.removeprefix(b"\xef\xbb\xbf")  # RFC 8259 lets a parser ignore a BOM
    lines: list[_Line] = []
    found: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as exc:
            found.append((number, f"not valid UTF-8 (byte {exc.start + 1} of the line)"))
            continue
        if text.strip(" \t\r"):
            lines.append(_Line(number, text))
    return lines, found


def _check_line(
    line: _Line,
    validator: _Validator,
    build: Callable[[dict[str, Any], int], tuple[_T | None, list[str]]],
    memo: ShapeMemo | None = None,
) -> tuple[_T | None, list[str]]:
    """Parse, schema-check and build one line; return the item or its problems."""
    obj, problems = _parse_line(line.text)
    if problems:
        return None, problems
    try:
        shape = memo.shape(obj) if memo is not None else None
        if memo is None or shape is None or shape not in memo.valid:
            problems = validator.problems(obj)
            if problems or not isinstance(obj, dict):  # the schema requires an object
                return None, problems
            if memo is not None and shape is not None:
                memo.valid.add(shape)
        if not isinstance(obj, dict):  # pragma: no cover - a shape is an object's
            return None, []
        return build(obj, line.number)
    except RecursionError:
        return None, ["nested too deeply"]


def _parse_line(text: str) -> tuple[object, list[str]]:
    try:
        return _parse_json(text), []
    except _LineError as exc:
        return None, [str(exc)]
    except json.JSONDecodeError as exc:
        return None, [f"invalid JSON: {exc.msg} (column {exc.colno})"]
    except ValueError as exc:  # e.g. an int beyond the interpreter's digit limit
        return None, [f"invalid JSON: {_clip(str(exc))}"]
    except RecursionError:
        return None, ["nested too deeply"]


def _parse_json(text: str) -> object:
    return json.loads(
        text,
        object_pairs_hook=_unique_keys,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
    )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _LineError(f"invalid JSON: duplicate key {_clip(repr(key))}")
        obj[key] = value
    return obj


def _reject_constant(name: str) -> NoReturn:
    raise _LineError(
        f'invalid JSON: {name} is not JSON; write {{"$float": "nan" | "inf" | "-inf"}}'
    )


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _LineError(f"invalid JSON: number {_clip(text)} is out of range for a float")
    return value


class _Validator:
    """One schema's check of a line: a compiled fast check, ``jsonschema``'s words for a miss.

    ``jsonschema_rs`` accepts or refuses a line (~25 ms to import against ~100 ms for
    ``jsonschema``, which a run of valid files then never loads); a line it refuses, or
    any it cannot take, goes to ``jsonschema``, whose verdict and messages are the ones
    reported. So a line is refused only when ``jsonschema`` refuses it, in its words.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._slow: Draft202012Validator | None = None
        self._fast: Callable[[object], bool] | None = None
        try:
            import jsonschema_rs  # noqa: PLC0415 - loaded on use: the sandbox alone never needs it

            self._fast = jsonschema_rs.Draft202012Validator(schema).is_valid
        except Exception:  # not installed, or a schema it cannot compile
            self._fast = None

    def problems(self, obj: object) -> list[str]:
        """What is wrong with ``obj`` against the schema (none when it is valid)."""
        if self._fast is not None:
            try:
                if self._fast(obj):
                    return []
            except Exception:  # noqa: S110 - a value it cannot take: jsonschema decides
                pass
        if self._slow is None:
            # Loaded here, not at import: a run whose lines are all valid never needs it.
            from jsonschema import Draft202012Validator  # noqa: PLC0415

            self._slow = Draft202012Validator(self._schema)
        return list(_schema_problems(self._slow, obj))


def _schema_problems(validator: Draft202012Validator, obj: object) -> Iterator[str]:
    errors = sorted(
        validator.iter_errors(obj), key=lambda e: ([str(p) for p in e.absolute_path], e.message)
    )
    # Where a value has the wrong type, its other constraints only add noise.
    wrong_type = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    for error in errors:
        if error.validator != "type" and tuple(error.absolute_path) in wrong_type:
            continue
        where = "/".join(_pointer_token(p) for p in error.absolute_path)
        message = error.schema.get("x-message", error.message) if error.schema else error.message
        yield _clip(f"{where}: {message}" if where else str(message))


def _pointer_token(part: str | int) -> str:
    """Escape one JSON pointer segment (RFC 6901)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def parse_hidden_case(obj: dict[str, Any], number: int) -> tuple[HiddenCase | None, list[str]]:
    """Build one hidden case from an object that passed the schema, with what is wrong with it.

    Args:
        obj: One ``hidden.jsonl`` object (already checked against the schema).
        number: Its line number, for messages.

    Returns:
        The case (``None`` when it cannot be built) and the problems found.
    """
    problems = _fn_problems(obj["fn"]) + _task_problems(obj.get("task"))
    kind = obj.get("kind", "function")
    if kind == "function":
        args, kwargs, expect, error = _decode_call(obj, "", problems)
    else:  # stdio: expect is plain text (the schema says so); program: no values at all
        args, kwargs, expect, error = (), {}, obj.get("expect"), None
    if kind == "program":
        problems += _program_problems(obj["program"])
    if problems:
        return None, problems
    tol, rel_tol, timeout_s = obj.get("tol"), obj.get("rel_tol"), obj.get("timeout_s")
    case = HiddenCase(
        fn=obj["fn"],
        args=args,
        kwargs=kwargs,
        expect=expect,
        error=error,
        tol=None if tol is None else float(tol),
        timeout_s=None if timeout_s is None else float(timeout_s),
        name=obj.get("name"),
        line=number,
        kind=kind,
        compare=obj.get("compare"),
        rel_tol=None if rel_tol is None else float(rel_tol),
        stdin=obj.get("stdin", ""),
        program=obj.get("program", ""),
        test=obj.get("test", ""),
        args_wire=obj.get("args", []),
        kwargs_wire=obj.get("kwargs", {}),
        task=obj.get("task", ""),
    )
    return case, []


def _program_problems(source: str) -> list[str]:
    """A test program must compile here: a syntax error is the task's fault, not a candidate's."""
    try:
        compile(source, "<test>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return [f"program: does not compile{where}: {_clip(str(exc))}"]
    except RecursionError:
        return ["program: nested too deeply"]
    return []


def parse_public_task(obj: dict[str, Any], number: int) -> tuple[PublicTask | None, list[str]]:
    """Build one public task from an object that passed the schema, with what is wrong with it.

    Args:
        obj: One ``public.jsonl`` object (already checked against the schema).
        number: Its line number, for messages.

    Returns:
        The task (``None`` when it cannot be built) and the problems found.
    """
    problems = _fn_problems(obj["fn"]) + _task_problems(obj.get("task"))
    examples = obj.get("examples", [])
    for index, example in enumerate(examples):
        _decode_call(example, f"examples/{index}/", problems)
    if problems:
        return None, problems
    banned = obj.get("banned_imports")
    task = PublicTask(
        fn=obj["fn"],
        spec=obj.get("spec", ""),
        signature=obj.get("signature", ""),
        examples=tuple(examples),
        allow_loops=obj.get("allow_loops", False),
        helpers_allowed=obj.get("helpers_allowed", False),
        banned_imports=None if banned is None else tuple(banned),
        rubric=obj.get("rubric", "default"),
        static=json.dumps(obj["static"], sort_keys=True) if obj.get("static") else "",
        line=number,
        task=obj.get("task", ""),
    )
    return task, []


def _task_problems(task: str | None) -> list[str]:
    # The schema's pattern lets a trailing newline through (Python's ``$``).
    if task is not None and any(ord(c) < 32 or ord(c) == 127 for c in task):
        return [f"task: {_clip(repr(task))} has a control character"]
    return []


def _fn_problems(fn: str) -> list[str]:
    # The schema's pattern lets a trailing newline through (Python's ``$``).
    if not fn.isidentifier() or keyword.iskeyword(fn):
        return [f"fn: {_clip(repr(fn))} is not a Python identifier"]
    return []


def _decode_call(
    obj: dict[str, Any], prefix: str, problems: list[str]
) -> tuple[tuple[object, ...], dict[str, object], object, str | None]:
    """Decode ``args``/``kwargs``/``expect``/``error`` of a schema-valid object.

    Problems are appended to ``problems``, each naming its field.
    """
    args = tuple(
        _decode(arg, f"{prefix}args[{index}]", problems) for index, arg in enumerate(obj["args"])
    )
    kwargs = {
        key: _decode(value, f"{prefix}kwargs.{key}", problems)
        for key, value in obj.get("kwargs", {}).items()
    }
    expect = _decode(obj["expect"], f"{prefix}expect", problems) if "expect" in obj else None
    error: str | None = None
    if "error" in obj:
        try:
            error = resolve_error_name(obj["error"])
        except ValueError as exc:
            problems.append(f"{prefix}error: {exc}")
    return args, kwargs, expect, error


def _decode(raw: object, field: str, problems: list[str]) -> object:
    try:
        return from_wire(raw, allow_opaque=False)
    except WireError as exc:
        message = str(exc)
        # wire names places as ``$[0].key``; name the field instead of ``$``.
        problems.append(_clip(field + message[1:] if message.startswith("$") else message))
        return None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _line_number(problem: tuple[int, str]) -> int:
    return problem[0]
