"""Request bodies, once parsed (:mod:`..api.bodies`): checked with the schemas of the files.

A task body is ``{"public": {...}, "hidden": [case, ...], "limits": {...},
"disclosure": "cases" | "counts" | "verdict", "static": {...}}``:
``public`` is a ``public.jsonl`` line and each case a ``hidden.jsonl`` line.
The path names the task's id (any text without control characters, at most
200 characters: ``HumanEval/85``); ``task`` in the body, when given, must be
the same. The entry point is ``public.fn``, which defaults to the id when the
id is a Python identifier (tasks from before task ids), and each case's ``fn``
defaults to it. Samples are ``samples.jsonl`` lines (``id`` optional) and name
their task by ``task`` (or, as before, by ``fn``). Every problem comes back with
a JSON pointer and a message that never repeats a value from the body (see
:mod:`.problems`).
"""

from __future__ import annotations

import contextlib
import json
import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from gradebox.model import Sample, Task, task_id_problem
from gradebox.service.config import DEFAULT_DISCLOSURE, DISCLOSURES, Disclosure
from gradebox.service.engine.static import check_task_static
from gradebox.service.problems import ApiError, Problem
from sandbox.cases import parse_hidden_case, parse_public_task
from sandbox.child.wire import WireError, from_wire
from sandbox.types import HiddenCase, Limits

__all__ = [
    "LIMIT_KEYS",
    "CheckedTask",
    "build_task",
    "check_samples",
    "check_task",
    "sample_from_json",
]

LIMIT_KEYS = ("case_timeout_s", "candidate_timeout_s", "memory_mb", "max_timeouts")
"""The limits a task may set (each at most the server's own)."""


def _schema(package: str, name: str) -> dict[str, object]:
    text = (resources.files(package) / "schemas" / name).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _sample_schema() -> dict[str, object]:
    schema = _schema("gradebox", "samples.schema.json")
    schema["required"] = []  # the service numbers samples without an id
    schema["anyOf"] = [{"required": ["task"]}, {"required": ["fn"]}]
    schema["x-message"] = "name the task with 'task' (or, as before, 'fn')"
    return schema


_HIDDEN = Draft202012Validator(_schema("sandbox", "hidden.schema.json"))
_PUBLIC = Draft202012Validator(_schema("sandbox", "public.schema.json"))
_SAMPLE = Draft202012Validator(_sample_schema())
# A sample the compiled check accepts is valid; any other goes to ``jsonschema``, whose
# verdict and words are the ones reported (as ``sandbox.cases`` checks files).
_SAMPLE_FAST = jsonschema_rs.Draft202012Validator(_sample_schema()).is_valid
_TOP_KEYS = ("public", "hidden", "limits", "disclosure", "static")


@dataclass(frozen=True, slots=True)
class CheckedTask:
    """A valid task body, normalised for storage."""

    public: dict[str, Any]
    """The public line, ``fn`` (the entry point) filled in."""
    hidden: list[dict[str, Any]]
    """The hidden lines, ``fn`` filled in."""
    limits: dict[str, Any]
    """Limit overrides."""
    disclosure: Disclosure = DEFAULT_DISCLOSURE
    """What grader tokens see of the hidden cases."""
    static: dict[str, Any] = field(default_factory=dict)
    """Static settings (policy, allowed rules, lockfile; :mod:`.static`); empty: the server's."""


# --------------------------------------------------------------------- schemas


def _pointer(prefix: str, path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return prefix + "".join("/" + p for p in parts)


def _schema_problems(validator: Draft202012Validator, obj: object, prefix: str) -> list[Problem]:
    with contextlib.suppress(Exception):  # a value it cannot take: jsonschema decides
        if validator is _SAMPLE and _SAMPLE_FAST(obj):
            return []
    try:
        errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path])
    except RecursionError:
        return [Problem(prefix, "nested too deeply")]
    wrong_type = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    return [
        Problem(_pointer(prefix, e.absolute_path), _safe_message(e))
        for e in errors
        if e.validator == "type" or tuple(e.absolute_path) not in wrong_type
    ]


def _safe_message(error: ValidationError) -> str:
    """The schema error in words that never quote the offending value."""
    kind, want = error.validator, error.validator_value
    instance = error.instance
    if isinstance(error.schema, dict) and "x-message" in error.schema:
        return str(error.schema["x-message"])
    if kind == "type":
        return f"must be of type {want}"
    if kind == "required" and isinstance(instance, dict) and isinstance(want, list):
        missing = [k for k in want if k not in instance]
        return "missing required property " + ", ".join(repr(k) for k in missing)
    if kind == "additionalProperties":
        return "has a property the schema does not allow"
    if kind == "pattern":
        return f"does not match the pattern {want}"
    if kind in ("maxLength", "minLength", "minItems", "maxItems"):
        return f"violates {kind} {want}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"out of range ({kind} {want})"
    if kind == "uniqueItems":
        return "items must be unique"
    if kind == "propertyNames":
        return "property names must be Python identifiers"
    return f"fails the schema's {kind!r} check"


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii() and not keyword.iskeyword(name)


def _task_in_path(task: str) -> None:
    why = task_id_problem(task)
    if why is not None:
        raise ApiError(422, "bad task id", [Problem("task", why, "path")])


# ----------------------------------------------------------------------- tasks


def check_task(task: str, body: object, *, max_cases: int, server: Limits) -> CheckedTask:
    """Check a ``PUT /v1/tasks/{task}`` body.

    Raises:
        ApiError: 422 with every problem found, or 413 with too many cases.
    """
    _task_in_path(task)
    if not isinstance(body, dict):
        raise ApiError(422, "invalid task", [Problem("", "must be an object")])
    problems = [
        Problem(_pointer("", [key]), "unknown property; known: " + ", ".join(_TOP_KEYS))
        for key in body
        if key not in _TOP_KEYS
    ]
    hidden = body.get("hidden")
    if not isinstance(hidden, list) or not hidden:
        problems.append(Problem("/hidden", "must be a non-empty array of hidden cases"))
        raise ApiError(422, "invalid task", problems)
    if len(hidden) > max_cases:
        raise ApiError(413, f"too many hidden cases: at most {max_cases} per task")
    public = body.get("public", {})
    checked_public = _check_public(task, public, problems)
    fn = checked_public.get("fn")
    checked_hidden = [_check_case(task, fn, case, i, problems) for i, case in enumerate(hidden)]
    limits = _check_limits(body.get("limits", {}), server, problems)
    disclosure = body.get("disclosure", DEFAULT_DISCLOSURE)
    if disclosure not in DISCLOSURES:
        problems.append(Problem("/disclosure", "must be one of " + ", ".join(DISCLOSURES)))
    static = check_task_static(body.get("static"), problems)
    if problems:
        raise ApiError(422, "invalid task", problems)
    return CheckedTask(checked_public, checked_hidden, limits, disclosure, static)


def _check_public(task: str, public: object, problems: list[Problem]) -> dict[str, Any]:
    if not isinstance(public, dict):
        problems.append(Problem("/public", "must be an object"))
        return {}
    if "task" in public and public["task"] != task:
        problems.append(Problem("/public/task", "must equal the task id in the path"))
    if "fn" not in public and not _is_identifier(task):
        problems.append(
            Problem("/public/fn", "the entry point is required: the task id is not a Python name")
        )
        return {}
    obj = {"fn": task, **public}
    if task != obj["fn"]:
        obj["task"] = task
    found = _schema_problems(_PUBLIC, obj, "/public")
    if "static" in public:  # public.jsonl carries it for the CLI; a task body has its own
        found.append(Problem("/public/static", "give a task's static settings as /static"))
    if not found:
        _, built = parse_public_task(obj, 0)
        found = [_build_problem("/public", p, obj) for p in built]
    problems.extend(found)
    return obj


def _check_case(
    task: str, fn: str | None, case: object, index: int, problems: list[Problem]
) -> dict[str, Any]:
    prefix = f"/hidden/{index}"
    if not isinstance(case, dict):
        problems.append(Problem(prefix, "must be an object"))
        return {}
    if "task" in case and case["task"] != task:
        problems.append(Problem(prefix + "/task", "must equal the task id in the path"))
    if fn is None:  # no entry point: /public/fn says why
        return {}
    if "fn" in case and case["fn"] != fn:
        problems.append(Problem(prefix + "/fn", "must equal the task's entry point (public.fn)"))
    obj = {**case, "fn": fn}
    if task != fn:
        obj["task"] = task
    found = _schema_problems(_HIDDEN, obj, prefix)
    if not found:
        try:
            _, built = parse_hidden_case(obj, index + 1)
        except RecursionError:
            built = ["nested too deeply"]
        found = [_build_problem(prefix, p, obj) for p in built]
    problems.extend(found)
    return obj


_LOCATION = re.compile(r"\[(\d+)\]|\.([A-Za-z_][A-Za-z0-9_]*)")
_BUILD_MESSAGES = (
    ("unknown tag", "unknown tag object"),
    ("too large", "value too large"),
    ("nested", "nested too deeply"),
    ("contains itself", "value contains itself"),
    ("base64", "not valid base64"),
    ("hex integer", "not a hex integer"),
    ("unhashable", "unhashable element in a set or dict key"),
    ("Unicode", "string is not valid Unicode"),
    ("expected a list of", "expected a list of [key, value] pairs"),
    ("expected a list", "expected a list"),
    ("expected a string", "expected a string"),
    ("expected one of", "expected one of nan, inf, -inf"),
)


def _build_problem(prefix: str, text: str, obj: dict[str, Any]) -> Problem:
    """Map a loader problem (``args[0][1]: unknown tag ...``) to a pointer and a safe message."""
    location, _, rest = text.partition(": ")
    head = re.match(r"[A-Za-z_]+", location)
    field = head.group(0) if head else ""
    pointer = prefix + ("/" + field if field else "")
    for index, key in _LOCATION.findall(location[len(field) :]):
        pointer += "/" + (index or key)
    if field == "examples":
        example = re.match(r"examples/(\d+)/([a-z]+)", text)
        if example:
            field = example.group(2)
            obj = obj["examples"][int(example.group(1))]
            prefix = f"{prefix}/examples/{example.group(1)}"
    if field in ("args", "kwargs", "expect") and field in obj:
        pointer = _culprit(obj[field], f"{prefix}/{field}")
    if field == "error":
        return Problem(pointer, "not a builtin or standard-library exception class")
    if field == "fn":
        return Problem(pointer, "must be a Python identifier")
    for needle, message in _BUILD_MESSAGES:
        if needle in rest or needle in text:
            return Problem(pointer, message)
    return Problem(pointer, "invalid tagged value")


def _culprit(value: object, pointer: str) -> str:
    """The JSON pointer of the innermost part of ``value`` that is not valid tagged JSON."""
    children: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        children = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(str(i), v) for i, v in enumerate(value)]
    for key, child in children:
        if not _decodes(child):
            return _culprit(child, _pointer(pointer, [key]))
    return pointer


def _decodes(value: object) -> bool:
    try:
        from_wire(value, allow_opaque=False)
    except (WireError, RecursionError):
        return False
    return True


def _check_limits(limits: object, server: Limits, problems: list[Problem]) -> dict[str, object]:
    if not isinstance(limits, dict):
        problems.append(Problem("/limits", "must be an object"))
        return {}
    out: dict[str, Any] = {}
    for key, value in limits.items():
        where = _pointer("/limits", [key])
        if key not in LIMIT_KEYS:
            problems.append(Problem(where, "unknown limit; known: " + ", ".join(LIMIT_KEYS)))
            continue
        ceiling = getattr(server, key)
        integral = isinstance(ceiling, int)
        ok_type = isinstance(value, int) if integral else isinstance(value, int | float)
        if isinstance(value, bool) or not ok_type:
            problems.append(
                Problem(where, "must be an integer" if integral else "must be a number")
            )
        elif not 0 < value <= ceiling and not (key == "max_timeouts" and 0 <= value <= ceiling):
            problems.append(Problem(where, f"must be above 0 and at most the server's {ceiling}"))
        else:
            out[key] = value
    return out


def build_task(
    task: str, public: Mapping[str, object], hidden: Sequence[Mapping[str, object]]
) -> Task:
    """Rebuild a stored (already checked) task for the grader.

    The entry point is ``public.fn``; a task stored before task ids has it too
    (its id). Every case and the public task carry the id, whatever was stored.
    """
    cases: list[HiddenCase] = []
    for i, obj in enumerate(hidden):
        case, _ = parse_hidden_case({**obj, "task": task}, i + 1)
        if case is None:  # pragma: no cover - stored tasks were checked on the way in
            raise ValueError(f"stored task {task!r}: case {i} no longer loads")
        cases.append(case)
    fn = str(public.get("fn") or (cases[0].fn if cases else task))
    pub, _ = parse_public_task({**public, "fn": fn, "task": task}, 0)
    return Task(task, tuple(cases), pub, fn)


# --------------------------------------------------------------------- samples


def check_samples(
    items: list[Any], *, numbered: bool, tick: Callable[[], None] = lambda: None
) -> list[dict[str, Any]]:
    """Check samples; fill in missing ids (their index when ``numbered``, else ``sample``).

    Args:
        items: Parsed samples.
        numbered: Problems point at ``/<index>`` (a run), else at the body (one sample).
        tick: Called before each sample (a time budget raises from it).

    Raises:
        ApiError: 422 with every problem, each pointing at its sample.
    """
    problems: list[Problem] = []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        tick()
        prefix = f"/{i}" if numbered else ""
        found = _schema_problems(_SAMPLE, item, prefix)
        if not found and ("reply" in item) == ("code" in item):
            found = [Problem(prefix, "needs exactly one of 'reply' or 'code'")]
        if found:
            problems.extend(found)
            continue
        sample = {**item, "id": item.get("id", str(i) if numbered else "sample")}
        if sample["id"] in seen:
            problems.append(Problem(prefix + "/id", "this id is already used in the body"))
        seen.add(sample["id"])
        out.append(sample)
    if problems:
        raise ApiError(422, "invalid samples" if numbered else "invalid sample", problems)
    return out


def sample_from_json(obj: Mapping[str, object]) -> Sample:
    """A checked sample as the grader's :class:`Sample`."""
    return Sample.from_json(obj)
