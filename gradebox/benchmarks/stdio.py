"""APPS and LiveCodeBench: stdin/stdout tasks (the candidate runs as a program).

APPS's published layout (codeparrot/apps, ``train.jsonl``/``test.jsonl``;
``hendrycks/apps`` ``eval/testing_util.py``): ``problem_id``, ``question``,
``solutions`` (a JSON text: a list of programs), ``input_output`` (a JSON text:
``{"inputs": [...], "outputs": [...]}``, plus ``fn_name`` for call-based
problems), ``starter_code``, ``difficulty``, ``url``. An input or output can be
a string or a list of lines.

LiveCodeBench's (``livecodebench/code_generation_lite``;
``lcb_runner/benchmarks/code_generation.py``): ``question_title``,
``question_content``, ``platform``, ``question_id``, ``contest_id``,
``contest_date``, ``starter_code``, ``difficulty``, ``public_test_cases`` (a
JSON text: ``[{"input", "output", "testtype"}]``), ``private_test_cases`` (the
same as JSON text, or ``base64(zlib(pickle(json_text)))``, read with
:mod:`gradebox.benchmarks.unpickle`), ``metadata`` (a JSON text).

Stdio cases compare stdout token by token with whitespace normalised, integers
exactly and other numbers within tolerance (:func:`sandbox.compare.stdout_equal`); ``--exact``
needs the output byte for byte. Call-based problems (APPS ``fn_name``,
LiveCodeBench ``functional`` tests, which call a method of ``class Solution``)
are reported as skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gradebox.benchmarks.bounds import DEFAULT_BOUNDS, Bounds, TooLarge, loads_json, row_cases_check
from gradebox.benchmarks.records import Draft, Skipped
from gradebox.benchmarks.source import Row, read_rows
from gradebox.benchmarks.unpickle import UnsafePickle, decode_compressed
from gradebox.errors import BadInput
from gradebox.pipeline.gate import DEFAULT_BANNED
from sandbox.types import HiddenCase, PublicTask

__all__ = ["read_apps", "read_livecodebench"]

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _fn(prefix: str, raw: object) -> str:
    return f"{prefix}_{_NOT_IDENT.sub('_', str(raw))}"[:200]


def _text(value: object) -> str | None:
    """An APPS input or output: a string, or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"
    return None


def _json_field(row: Row, name: str, path: Path, problems: list[str], bounds: Bounds) -> Any:
    """The field's JSON text decoded (``None`` and a problem when it is not JSON).

    Raises:
        TooLarge: It would decode to more than ``bounds.row_bytes``.
    """
    raw = row.data.get(name)
    if isinstance(raw, dict | list):
        return raw
    if not isinstance(raw, str):
        problems.append(f"{path}:{row.line}: {name}: missing or not a string")
        return None
    try:
        return loads_json(raw, bounds.row_bytes, name)
    except (ValueError, RecursionError) as exc:
        problems.append(f"{path}:{row.line}: {name}: not JSON ({str(exc)[:100]})")
        return None


def _stdio_case(fn: str, task: str, n: int, stdin: str, stdout: str) -> HiddenCase:
    return HiddenCase(
        fn=fn,
        args=(),
        kwargs={},
        expect=stdout,
        kind="stdio",
        stdin=stdin,
        name=f"{task} #{n}",
        task=task,
    )


def _reference(solutions: object, bounds: Bounds) -> str | None:
    if isinstance(solutions, str):
        try:
            solutions = loads_json(solutions, bounds.row_bytes, "solutions")
        except (ValueError, RecursionError):
            return None
    if isinstance(solutions, list) and solutions and isinstance(solutions[0], str):
        return solutions[0]
    return None


def read_apps(path: Path, *, bounds: Bounds = DEFAULT_BOUNDS) -> tuple[list[Draft], list[Skipped]]:
    """Read APPS problems as stdio tasks.

    A problem over ``bounds`` (decoded, or in cases) is skipped, with its reason.

    Raises:
        BadInput: A record lacks a field or its ``input_output`` is malformed (all listed).
    """
    skipped: list[Skipped] = []
    rows, problems = read_rows(path, bounds=bounds, skipped=skipped)
    drafts: list[Draft] = []
    for row in rows:
        pid = row.data.get("problem_id")
        question = row.data.get("question")
        if not isinstance(pid, int | str) or not isinstance(question, str):
            problems.append(f"{path}:{row.line}: problem_id and question are required")
            continue
        task = f"APPS/{pid}"
        try:
            draft = _apps_task(row, task, question, path, problems, skipped, bounds)
        except TooLarge as exc:
            skipped.append(Skipped(task, "task", str(exc)))
            continue
        if draft is not None:
            drafts.append(draft)
    if problems:
        raise BadInput(problems)
    return drafts, skipped


def _apps_task(
    row: Row,
    task: str,
    question: str,
    path: Path,
    problems: list[str],
    skipped: list[Skipped],
    bounds: Bounds,
) -> Draft | None:
    """One APPS problem (``None``: a problem or a skip was recorded).

    Raises:
        TooLarge: It is over ``bounds``.
    """
    io_ = _json_field(row, "input_output", path, problems, bounds)
    if io_ is None:
        return None
    if not isinstance(io_, dict) or not isinstance(io_.get("inputs"), list):
        problems.append(f"{path}:{row.line}: input_output: needs inputs and outputs lists")
        return None
    if io_.get("fn_name"):
        skipped.append(Skipped(task, "task", "call-based (fn_name): not a stdin/stdout task"))
        return None
    inputs, outputs = io_["inputs"], io_.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(inputs):
        problems.append(f"{path}:{row.line}: input_output: as many outputs as inputs needed")
        return None
    row_cases_check(len(inputs), bounds)
    fn = _fn("apps", row.data["problem_id"])
    cases = []
    for n, (i, o) in enumerate(zip(inputs, outputs, strict=True)):
        stdin, stdout = _text(i), _text(o)
        if stdin is None or stdout is None:
            problems.append(f"{path}:{row.line}: input_output: case {n} is not text")
            continue
        cases.append(_stdio_case(fn, task, n, stdin, stdout))
    return _draft(task, fn, question, row, cases, bounds)


def _draft(
    task: str, fn: str, spec: str, row: Row, cases: list[HiddenCase], bounds: Bounds
) -> Draft:
    return Draft(
        task_id=task,
        fn=fn,
        public=PublicTask(
            fn=fn,
            task=task,
            spec=spec,
            helpers_allowed=True,
            # Fast-input templates of competitive programming import os (os.read(0, ...)).
            banned_imports=tuple(m for m in DEFAULT_BANNED if m != "os"),
        ),
        reference=_reference(row.data.get("solutions"), bounds),
        stdio=tuple(cases),
    )


def _lcb_cases(row: Row, path: Path, problems: list[str], bounds: Bounds) -> list[Any] | None:
    """The public and private tests of a row (``None``: a problem was recorded).

    Raises:
        TooLarge: A field decodes (base64, zlib, pickle, JSON) to more than
            ``bounds.row_bytes``, or the row has more than ``bounds.row_cases`` tests.
    """
    public = _json_field(row, "public_test_cases", path, problems, bounds)
    raw = row.data.get("private_test_cases", "[]")
    private: Any = None
    if isinstance(raw, list):
        private = raw
    elif isinstance(raw, str):
        private = _private(raw, bounds, f"{path}:{row.line}", problems)
        if private is _REFUSED:
            return None
    if not isinstance(public, list) or not isinstance(private, list):
        problems.append(f"{path}:{row.line}: test cases are not lists")
        return None
    row_cases_check(len(public) + len(private), bounds)
    return public + private


_REFUSED = object()
"""What :func:`_private` returns when it recorded a problem."""


def _private(raw: str, bounds: Bounds, where: str, problems: list[str]) -> Any:
    """``private_test_cases``: JSON text, or ``base64(zlib(pickle(json_text)))``.

    Returns:
        The decoded value, or ``_REFUSED`` (and a problem recorded).

    Raises:
        TooLarge: A step would build more than ``bounds.row_bytes``.
    """
    limit = bounds.row_bytes
    try:
        return loads_json(raw, limit, "private_test_cases")
    except (ValueError, RecursionError):
        pass
    try:
        value = decode_compressed(raw, limit=limit)
    except TooLarge as exc:
        raise TooLarge(f"private_test_cases: {exc}") from exc
    except UnsafePickle as exc:
        problems.append(f"{where}: private_test_cases: refused: {exc}")
        return _REFUSED
    if not isinstance(value, str):
        return value
    try:
        return loads_json(value, limit, "private_test_cases (unpickled)")
    except (ValueError, RecursionError) as exc:
        problems.append(f"{where}: private_test_cases: not JSON ({exc})")
        return _REFUSED


def read_livecodebench(
    path: Path, *, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[Draft], list[Skipped]]:
    """Read LiveCodeBench problems (stdin tests) as stdio tasks.

    A problem over ``bounds`` (at any step of decoding its tests, or in tests) is
    skipped, with its reason.

    Raises:
        BadInput: A record lacks a field, a test case is malformed, or a
            compressed field is not a pickle of plain data (all listed).
    """
    skipped: list[Skipped] = []
    rows, problems = read_rows(path, bounds=bounds, skipped=skipped)
    drafts: list[Draft] = []
    for row in rows:
        qid, content = row.data.get("question_id"), row.data.get("question_content")
        if not isinstance(qid, str | int) or not isinstance(content, str):
            problems.append(f"{path}:{row.line}: question_id and question_content are required")
            continue
        task, fn = f"LiveCodeBench/{qid}", _fn("lcb", qid)
        try:
            tests = _lcb_cases(row, path, problems, bounds)
            if tests is None:
                continue
            cases = _lcb_stdio(tests, task, fn, f"{path}:{row.line}", problems, skipped)
            drafts.append(_draft(task, fn, content, row, cases, bounds))
        except TooLarge as exc:
            skipped.append(Skipped(task, "task", str(exc)))
    if problems:
        raise BadInput(problems)
    return drafts, skipped


def _lcb_stdio(
    tests: list[Any], task: str, fn: str, where: str, problems: list[str], skipped: list[Skipped]
) -> list[HiddenCase]:
    cases: list[HiddenCase] = []
    for n, t in enumerate(tests):
        if not isinstance(t, dict) or not all(
            isinstance(t.get(k), str) for k in ("input", "output")
        ):
            problems.append(f"{where}: test case {n}: needs input and output strings")
            continue
        if t.get("testtype", "stdin") != "stdin":
            skipped.append(Skipped(task, f"test case {n}", "functional (calls class Solution)"))
            continue
        cases.append(_stdio_case(fn, task, n, t["input"], t["output"]))
    return cases
