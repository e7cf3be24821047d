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

Stdio cases compare stdout token by token with whitespace normalised and
numbers within tolerance (:func:`sandbox.compare.stdout_equal`); ``--exact``
needs the output byte for byte. Call-based problems (APPS ``fn_name``,
LiveCodeBench ``functional`` tests, which call a method of ``class Solution``)
are reported as skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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


def _json_field(row: Row, name: str, path: Path, problems: list[str]) -> Any:
    raw = row.data.get(name)
    if isinstance(raw, dict | list):
        return raw
    if not isinstance(raw, str):
        problems.append(f"{path}:{row.line}: {name}: missing or not a string")
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        problems.append(f"{path}:{row.line}: {name}: not JSON ({str(exc)[:100]})")
        return None


def _stdio_case(fn: str, task: str, n: int, stdin: str, stdout: str) -> HiddenCase:
    return HiddenCase(
        fn=fn, args=(), kwargs={}, expect=stdout, kind="stdio", stdin=stdin, name=f"{task} #{n}"
    )


def _reference(solutions: object) -> str | None:
    if isinstance(solutions, str):
        try:
            solutions = json.loads(solutions)
        except (ValueError, RecursionError):
            return None
    if isinstance(solutions, list) and solutions and isinstance(solutions[0], str):
        return solutions[0]
    return None


def read_apps(path: Path) -> tuple[list[Draft], list[Skipped]]:
    """Read APPS problems as stdio tasks.

    Raises:
        BadInput: A record lacks a field or its ``input_output`` is malformed (all listed).
    """
    rows, problems = read_rows(path)
    drafts: list[Draft] = []
    skipped: list[Skipped] = []
    for row in rows:
        pid = row.data.get("problem_id")
        question = row.data.get("question")
        if not isinstance(pid, int | str) or not isinstance(question, str):
            problems.append(f"{path}:{row.line}: problem_id and question are required")
            continue
        task = f"APPS/{pid}"
        io_ = _json_field(row, "input_output", path, problems)
        if io_ is None:
            continue
        if not isinstance(io_, dict) or not isinstance(io_.get("inputs"), list):
            problems.append(f"{path}:{row.line}: input_output: needs inputs and outputs lists")
            continue
        if io_.get("fn_name"):
            skipped.append(Skipped(task, "task", "call-based (fn_name): not a stdin/stdout task"))
            continue
        inputs, outputs = io_["inputs"], io_.get("outputs")
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            problems.append(f"{path}:{row.line}: input_output: as many outputs as inputs needed")
            continue
        fn = _fn("apps", pid)
        cases = []
        for n, (i, o) in enumerate(zip(inputs, outputs, strict=True)):
            stdin, stdout = _text(i), _text(o)
            if stdin is None or stdout is None:
                problems.append(f"{path}:{row.line}: input_output: case {n} is not text")
                continue
            cases.append(_stdio_case(fn, task, n, stdin, stdout))
        drafts.append(_draft(task, fn, question, row, cases))
    if problems:
        raise BadInput(problems)
    return drafts, skipped


def _draft(task: str, fn: str, spec: str, row: Row, cases: list[HiddenCase]) -> Draft:
    return Draft(
        task_id=task,
        fn=fn,
        entry=fn,
        public=PublicTask(
            fn=fn,
            spec=spec,
            helpers_allowed=True,
            # Fast-input templates of competitive programming import os (os.read(0, ...)).
            banned_imports=tuple(m for m in DEFAULT_BANNED if m != "os"),
        ),
        reference=_reference(row.data.get("solutions")),
        stdio=tuple(cases),
    )


def _lcb_cases(row: Row, path: Path, problems: list[str]) -> list[Any] | None:
    public = _json_field(row, "public_test_cases", path, problems)
    raw = row.data.get("private_test_cases", "[]")
    private: Any = None
    if isinstance(raw, list):
        private = raw
    elif isinstance(raw, str):
        try:
            private = json.loads(raw)
        except (ValueError, RecursionError):
            try:
                text = decode_compressed(raw)
                private = json.loads(text) if isinstance(text, str) else text
            except UnsafePickle as exc:
                problems.append(f"{path}:{row.line}: private_test_cases: refused: {exc}")
                return None
            except (ValueError, RecursionError) as exc:
                problems.append(f"{path}:{row.line}: private_test_cases: not JSON ({exc})")
                return None
    if not isinstance(public, list) or not isinstance(private, list):
        problems.append(f"{path}:{row.line}: test cases are not lists")
        return None
    return public + private


def read_livecodebench(path: Path) -> tuple[list[Draft], list[Skipped]]:
    """Read LiveCodeBench problems (stdin tests) as stdio tasks.

    Raises:
        BadInput: A record lacks a field, a test case is malformed, or a
            compressed field is not a pickle of plain data (all listed).
    """
    rows, problems = read_rows(path)
    drafts: list[Draft] = []
    skipped: list[Skipped] = []
    for row in rows:
        qid, content = row.data.get("question_id"), row.data.get("question_content")
        if not isinstance(qid, str | int) or not isinstance(content, str):
            problems.append(f"{path}:{row.line}: question_id and question_content are required")
            continue
        task, fn = f"LiveCodeBench/{qid}", _fn("lcb", qid)
        tests = _lcb_cases(row, path, problems)
        if tests is None:
            continue
        cases: list[HiddenCase] = []
        for n, t in enumerate(tests):
            if not isinstance(t, dict) or not all(
                isinstance(t.get(k), str) for k in ("input", "output")
            ):
                problems.append(f"{path}:{row.line}: test case {n}: needs input and output strings")
                continue
            if t.get("testtype", "stdin") != "stdin":
                skipped.append(Skipped(task, f"test case {n}", "functional (calls class Solution)"))
                continue
            cases.append(_stdio_case(fn, task, n, t["input"], t["output"]))
        drafts.append(_draft(task, fn, content, row, cases))
    if problems:
        raise BadInput(problems)
    return drafts, skipped
