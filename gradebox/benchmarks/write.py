"""Writing an import: the one place its lines are built.

``hidden.jsonl``, ``public.jsonl``, ``reference.jsonl``, ``benchmark.jsonl``
(benchmark ids and the code wrapped around completions, for samples files) and
``import_report.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gradebox.benchmarks.bounds import DEFAULT_BOUNDS, Bounds
from gradebox.benchmarks.records import Equality, Format, ImportedTask, Retyped, Skipped
from gradebox.grade import Json
from gradebox.runs.private import private_text
from sandbox.child.wire import to_wire
from sandbox.types import HiddenCase, PublicTask

__all__ = [
    "ImportReport",
    "case_line",
    "public_line",
    "report_of",
    "task_lines",
    "write_import",
    "written_bytes",
]


def case_line(case: HiddenCase) -> dict[str, Json]:
    """One ``hidden.jsonl`` object (loadable by :func:`sandbox.cases.load_hidden`)."""
    line: dict[str, Json] = {"task": case.task} if case.task != case.fn else {}
    line["fn"] = case.fn
    if case.kind == "stdio":
        line.update(kind="stdio", stdin=case.stdin, expect=str(case.expect))
    elif case.kind == "program":
        line.update(kind="program", program=case.program, test=case.test)
    else:
        line["args"] = list(case.args_wire)
        if case.kwargs_wire:
            line["kwargs"] = dict(case.kwargs_wire)
        if case.error is not None:
            line["error"] = case.error.removeprefix("builtins.")
        else:
            line["expect"] = to_wire(case.expect)
    for key, value in (
        ("tol", case.tol),
        ("rel_tol", case.rel_tol),
        ("compare", case.compare),
        ("timeout_s", case.timeout_s),
        ("name", case.name),
    ):
        if value is not None:
            line[key] = value
    return line


def public_line(task: PublicTask) -> dict[str, Json]:
    """One ``public.jsonl`` object."""
    line: dict[str, Json] = {"task": task.task} if task.task != task.fn else {}
    line |= {"fn": task.fn, "spec": task.spec, "signature": task.signature}
    if task.helpers_allowed:
        line["helpers_allowed"] = True
    if task.banned_imports is not None:
        line["banned_imports"] = list(task.banned_imports)
    return line


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did: the figures and every case that needs a person's eye."""

    format: Format
    """The benchmark format."""
    source: str
    """The file imported."""
    tasks: int
    """Tasks written."""
    function_cases: int
    """Cases converted to plain function cases (expected values outside the sandbox)."""
    stdio_cases: int
    """Stdin/stdout cases."""
    program_cases: int
    """Cases kept as tests of a test program (run with the candidate, in its process)."""
    tasks_with_program_cases: int
    """Tasks with at least one program case (their rows say ``kind: program``)."""
    equality: Equality
    """``strict`` or ``harness``."""
    reference_checked: bool
    """Whether the references ran (in the sandbox) to find lax comparisons."""
    skipped: tuple[Skipped, ...]
    """What was not imported, and why."""
    retyped: tuple[Retyped, ...]
    """Cases where the reference's value differs in type from the benchmark's literal."""
    bounds: Bounds = DEFAULT_BOUNDS
    """The bounds the import applied (rows over them are in ``skipped``)."""

    def to_json(self) -> dict[str, Json]:
        """The ``import_report.json`` object."""
        return {
            "format": self.format,
            "source": self.source,
            "tasks": self.tasks,
            "cases": {
                "function": self.function_cases,
                "stdio": self.stdio_cases,
                "program": self.program_cases,
            },
            "tasks_with_program_cases": self.tasks_with_program_cases,
            "equality": self.equality,
            "reference_checked": self.reference_checked,
            "skipped": [{"task": s.task, "what": s.what, "why": s.why} for s in self.skipped],
            "retyped": [
                {
                    "task": r.task,
                    "case": r.case,
                    "literal": r.literal,
                    "reference": r.reference,
                    "lax": r.lax,
                    "became": r.became,
                }
                for r in self.retyped
            ],
            "bounds": dict(self.bounds.to_json()),
        }

    def summary(self) -> str:
        """A few lines for a person."""
        lines = [
            f"imported {self.tasks} {self.format} tasks from {self.source}",
            f"  cases: {self.function_cases} function (expected values outside the sandbox), "
            f"{self.stdio_cases} stdio, {self.program_cases} test program "
            f"(in {self.tasks_with_program_cases} tasks)",
        ]
        if self.retyped:
            lines.append(
                f"  {len(self.retyped)} cases where the reference's type differs from the "
                f"literal (equality: {self.equality}); see import_report.json"
            )
        if self.skipped:
            lines.append(
                f"  skipped {len(self.skipped)}: "
                + "; ".join(f"{s.task} {s.what}: {s.why}" for s in self.skipped[:5])
                + (" ..." if len(self.skipped) > 5 else "")
            )
        if not self.reference_checked:
            lines.append("  references not run: lax comparisons were not looked for")
        return "\n".join(lines)


def report_of(
    fmt: Format,
    source: str,
    tasks: Sequence[ImportedTask],
    skipped: Sequence[Skipped],
    *,
    equality: Equality,
    reference_checked: bool,
    bounds: Bounds = DEFAULT_BOUNDS,
) -> ImportReport:
    """Count what ``tasks`` hold."""
    kinds = [c.kind for t in tasks for c in t.cases]
    return ImportReport(
        format=fmt,
        source=source,
        tasks=len(tasks),
        function_cases=kinds.count("function"),
        stdio_cases=kinds.count("stdio"),
        program_cases=kinds.count("program"),
        tasks_with_program_cases=sum(any(c.kind == "program" for c in t.cases) for t in tasks),
        equality=equality,
        reference_checked=reference_checked,
        skipped=tuple(skipped),
        retyped=tuple(r for t in tasks for r in t.retyped),
        bounds=bounds,
    )


_FILES = ("hidden.jsonl", "public.jsonl", "reference.jsonl", "benchmark.jsonl")
_PRIVATE = frozenset({"hidden.jsonl", "reference.jsonl"})


def task_lines(task: ImportedTask) -> Iterator[tuple[str, dict[str, Json]]]:
    """Every line ``task`` writes: ``(file name, object)``, in each file's order."""
    for case in task.cases:
        yield "hidden.jsonl", case_line(case)
    yield "public.jsonl", public_line(task.public)
    if task.reference is not None:
        named: dict[str, Json] = {"task": task.task_id} if task.task_id != task.fn else {}
        yield "reference.jsonl", {**named, "fn": task.fn, "code": task.reference}
    yield "benchmark.jsonl", {"task_id": task.task_id, "fn": task.fn, "prefix": task.prefix}


def _encoded(row: dict[str, Json]) -> str:
    return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def written_bytes(task: ImportedTask, *, stop_after: int) -> int:
    """Bytes (UTF-8) of the lines ``task`` writes; counting stops once past ``stop_after``.

    A long string that many lines share (the test program of every program case)
    is encoded once, not once a line: measuring costs what the task holds, not
    what it would write.
    """
    encoded: dict[int, int] = {}  # id of a long string -> bytes of its JSON
    total = 0
    for _, row in task_lines(task):
        short: dict[str, Json] = {}
        for key, value in row.items():
            long = isinstance(value, str) and len(value) >= _LONG
            if long and id(value) not in encoded:
                encoded[id(value)] = _utf8_len(json.dumps(value, ensure_ascii=False))
            if long:
                total += encoded[id(value)] - 2  # in place of the "" below
            short[key] = "" if long else value
        total += _utf8_len(_encoded(short))
        if total > stop_after:
            break
    return total


_LONG = 4096


def write_import(out: Path, tasks: Sequence[ImportedTask], report: ImportReport) -> list[Path]:
    """Write every file of an import into ``out`` (created); return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in _FILES}
    # Hidden cases (expected values) and reference solutions are the grader's own: 0600
    # whatever the umask, like every file gradebox writes that holds hidden values.
    files = {
        name: private_text(paths[name])
        if name in _PRIVATE
        else paths[name].open("w", encoding="utf-8")
        for name in _FILES
    }
    try:
        # Each file in task order: the task's hidden lines, then its other lines.
        for task in tasks:
            for name, row in task_lines(task):
                files[name].write(_encoded(row))
    finally:
        for f in files.values():
            f.close()
    report_path = out / "import_report.json"
    report_path.write_text(
        json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    written = [*paths.values(), report_path]
    if not any(t.reference is not None for t in tasks):
        paths["reference.jsonl"].unlink()
        written.remove(paths["reference.jsonl"])
    return written
