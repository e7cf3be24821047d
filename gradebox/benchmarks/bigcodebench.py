"""BigCodeBench: each test method of a task's ``unittest`` class is a program case.

Published layout (``bigcode/bigcodebench`` on Hugging Face, README ``dataset_info``;
``bigcode-project/bigcodebench``): ``task_id`` (``BigCodeBench/0``),
``complete_prompt`` (imports, signature, docstring), ``instruct_prompt``,
``canonical_solution`` (the body completing ``complete_prompt``), ``code_prompt``
(imports and signature), ``test`` (a module with ``class TestCases(unittest.TestCase)``
calling the entry point by name), ``entry_point`` (``task_func``), ``doc_struct``
and ``libs`` (a Python-literal list of the libraries the task uses).

The tests are methods of a class the benchmark wrote, often with ``setUp``,
mocks and files: they cannot be turned into plain cases, so each runs as a
test-program case in the candidate's process (rows say ``kind: program``).
Tasks that need libraries outside the standard library are skipped: the
sandbox's interpreter starts without site-packages.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from gradebox.benchmarks.bounds import DEFAULT_BOUNDS, Bounds, TooLarge, check_code
from gradebox.benchmarks.records import Draft, Skipped
from gradebox.benchmarks.source import Row, field, is_identifier, read_rows, signature_of
from gradebox.errors import BadInput
from gradebox.pipeline.gate import DEFAULT_BANNED
from sandbox.types import PublicTask

__all__ = ["read_bigcodebench"]

_FIELDS = ("task_id", "complete_prompt", "canonical_solution", "test", "entry_point")


def _libs(row: Row) -> list[str]:
    raw = row.data.get("libs", "[]")
    try:
        libs = ast.literal_eval(raw) if isinstance(raw, str) else raw
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ["?"]
    if not isinstance(libs, list | tuple):
        return ["?"]
    return [str(x) for x in libs]


def _is_skipped(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    names = {ast.unparse(d).split("(")[0] for d in method.decorator_list}
    return bool(names & {"unittest.skip", "skip", "unittest.skipIf", "skipIf"})


def test_names(source: str) -> tuple[list[str], list[str]]:
    """``Class.method`` of every test method of every TestCase class, and the skipped ones."""
    tree = ast.parse(source)
    tests: list[str] = []
    skipped: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b) for b in node.bases}
        if not any(b.endswith("TestCase") for b in bases):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                (skipped if _is_skipped(item) else tests).append(f"{node.name}.{item.name}")
    return tests, skipped


def read_bigcodebench(
    path: Path, *, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[Draft], list[Skipped]]:
    """Read BigCodeBench tasks; each test method becomes a program case.

    A task whose code would parse to more than ``bounds.row_bytes`` is skipped.

    Raises:
        BadInput: A record lacks a field or its test does not parse (all listed).
    """
    skipped: list[Skipped] = []
    rows, problems = read_rows(path, bounds=bounds, skipped=skipped)
    good: list[tuple[Row, dict[str, str]]] = []
    for row in rows:
        values = {k: field(row, k, str, problems, path) for k in _FIELDS}
        if None not in values.values():
            good.append((row, values))
    drafts = []
    for row, v in good:
        task_id, entry = v["task_id"], v["entry_point"]
        if not is_identifier(entry):
            problems.append(f"{path}:{row.line}: entry_point: {entry[:100]!r} is not an identifier")
            continue
        try:
            libs_text = str(row.data.get("libs", ""))
            check_code(
                bounds.row_bytes, test=v["test"], prompt=v["complete_prompt"], libs=libs_text
            )
        except TooLarge as exc:
            skipped.append(Skipped(task_id, "task", str(exc)))
            continue
        libs = _libs(row)
        foreign = [lib for lib in libs if lib not in sys.stdlib_module_names]
        if foreign:
            why = "needs libraries outside the standard library: " + ", ".join(foreign)
            skipped.append(Skipped(task_id, "task", why))
            continue
        try:
            tests, skipped_tests = test_names(v["test"])
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            problems.append(f"{path}:{row.line}: test: does not parse ({str(exc)[:200]})")
            continue
        skipped += [Skipped(task_id, t, "marked skip in the benchmark") for t in skipped_tests]
        drafts.append(
            Draft(
                task_id=task_id,
                fn=entry,
                public=PublicTask(
                    fn=entry,
                    spec=str(row.data.get("instruct_prompt") or v["complete_prompt"]),
                    signature=signature_of(v["complete_prompt"] + "    ...\n", entry),
                    helpers_allowed=True,
                    # The libraries the task is about pass the gate (the sandbox still holds).
                    banned_imports=tuple(m for m in DEFAULT_BANNED if m not in libs),
                    task=task_id,
                ),
                prefix=v["complete_prompt"],
                reference=v["complete_prompt"] + v["canonical_solution"],
                tests=tuple(tests),
                program=v["test"],  # calls the entry point by name, as the benchmark does
            )
        )
    if problems:
        raise BadInput(problems)
    return drafts, skipped
