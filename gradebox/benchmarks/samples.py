"""Samples files of other harnesses, to regrade an existing run; their verdicts, to compare.

Layouts read (as the harnesses write them):

* human-eval (openai/human-eval, ``human_eval/evaluation.py``): ``samples.jsonl``
  with ``task_id`` and ``completion`` (the body after the prompt); its results
  file ``samples.jsonl_results.jsonl`` is the same lines, in the same order, with
  ``result`` and ``passed`` added.
* evalplus (``evalplus/data/utils.py: load_solutions``): ``task_id`` and
  ``completion`` or ``solution`` (whole code, prompt included); its results file
  ``*_eval_results.json`` is ``{"eval": {task_id: [{"solution", "base_status",
  "plus_status", ...}]}}``, each task's list in sample order.

The task set must come from ``gradebox import`` (its ``benchmark.jsonl`` lists
the benchmark's task ids, which are gradebox task ids, and holds the prompt a
completion continues). A sample's code is the model's own: the prompt and the
completion, or the solution, and nothing else. (Task sets imported before task
ids renamed tasks that shared an entry point and appended an alias function to
their candidates; their ``benchmark.jsonl`` says so, and it is still honoured.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gradebox.benchmarks.source import read_rows
from gradebox.errors import BadInput
from gradebox.grade import Json

__all__ = [
    "Agreement",
    "HarnessVerdict",
    "ImportedSample",
    "compare",
    "normal_id",
    "read_harness",
    "read_samples",
]


@dataclass(frozen=True, slots=True)
class ImportedSample:
    """One sample of another harness, as a gradebox sample."""

    id: str
    """``<task_id>#<n>``: the n-th sample of the task (0-based), as the harness counts it."""
    task: str
    """The task's id (the benchmark's, e.g. ``HumanEval/85``)."""
    code: str
    """Whole code: the prompt and the completion, or the solution."""
    fn: str | None = None
    """The task's name in a task set imported before task ids (then ``task`` is not
    written: the sample names its task by ``fn``)."""

    def to_json(self) -> dict[str, Json]:
        """The ``samples.jsonl`` line."""
        if self.fn is not None:
            return {"id": self.id, "fn": self.fn, "code": self.code}
        return {"id": self.id, "task": self.task, "code": self.code}


@dataclass(frozen=True, slots=True)
class HarnessVerdict:
    """What the other harness decided for one sample."""

    id: str
    """The sample's id (as :class:`ImportedSample`)."""
    passed: bool
    """Whether the harness passed it."""


_MBPP_ID = re.compile(r"(?i)mbpp/(\d+)")


def normal_id(task_id: object) -> object:
    """One spelling per task: evalplus's ``Mbpp/2`` and MBPP's bare ``2`` are ``MBPP/2``."""
    if type(task_id) is int or (isinstance(task_id, str) and task_id.isdigit()):
        return f"MBPP/{task_id}"
    if isinstance(task_id, str) and (m := _MBPP_ID.fullmatch(task_id)):
        return f"MBPP/{m.group(1)}"
    return task_id


def _benchmark(tasks: Path) -> dict[str, tuple[str | None, str, str]]:
    """``task_id -> (old fn, prefix, suffix)`` from an import's ``benchmark.jsonl``.

    ``old fn`` and ``suffix`` are those of a task set imported before task ids
    (``None`` and ``""`` otherwise: the sample names the task by its id).
    """
    path = tasks / "benchmark.jsonl"
    rows, problems = read_rows(path)
    out: dict[str, tuple[str | None, str, str]] = {}
    for row in rows:
        d = row.data
        suffix = d.get("suffix", "")
        if not all(isinstance(d.get(k), str) for k in ("task_id", "fn", "prefix")) or (
            not isinstance(suffix, str)
        ):
            problems.append(f"{path}:{row.line}: not a line gradebox import wrote")
            continue
        old = "suffix" in d  # written before task ids: its tasks are named by fn
        out[d["task_id"]] = (d["fn"] if old else None, d["prefix"], suffix)
    if problems:
        raise BadInput(problems)
    return out


def read_samples(source: Path, tasks: Path) -> list[ImportedSample]:
    """Read a human-eval or evalplus samples file against an imported task set.

    Raises:
        BadInput: Every bad line (unknown task id, no completion or solution).
    """
    known = _benchmark(tasks)
    rows, problems = read_rows(source)
    seen: Counter[str] = Counter()
    samples = []
    for row in rows:
        task_id = normal_id(row.data.get("task_id"))
        if not isinstance(task_id, str) or task_id not in known:
            problems.append(f"{source}:{row.line}: task_id: {task_id!r} is not in {tasks}")
            continue
        fn, prefix, suffix = known[task_id]
        solution, completion = row.data.get("solution"), row.data.get("completion")
        if isinstance(solution, str):
            code = solution + suffix
        elif isinstance(completion, str):
            code = prefix + completion + suffix
        else:
            problems.append(f"{source}:{row.line}: needs a 'completion' or 'solution' string")
            continue
        samples.append(ImportedSample(f"{task_id}#{seen[task_id]}", task_id, code, fn))
        seen[task_id] += 1
    if problems:
        raise BadInput(problems)
    return samples


def read_harness(path: Path) -> list[HarnessVerdict]:
    """Read a human-eval ``*_results.jsonl`` or an evalplus ``eval_results.json``.

    evalplus's verdict is ``base_status`` (the base tests are what was imported).

    Raises:
        BadInput: The file is neither, or a line lacks its verdict.
    """
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text.lstrip().startswith("{") and '"eval"' in text[:4096]:
        return _evalplus(path, text)
    rows, problems = read_rows(path)
    seen: Counter[str] = Counter()
    out = []
    for row in rows:
        task_id, passed = row.data.get("task_id"), row.data.get("passed")
        if not isinstance(task_id, str | int) or type(passed) is not bool:
            problems.append(f"{path}:{row.line}: needs 'task_id' and a boolean 'passed'")
            continue
        key = str(normal_id(task_id))
        out.append(HarnessVerdict(f"{key}#{seen[key]}", passed))
        seen[key] += 1
    if problems:
        raise BadInput(problems)
    return out


def _evalplus(path: Path, text: str) -> list[HarnessVerdict]:
    try:
        results = json.loads(text)["eval"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise BadInput([f"{path}: not an evalplus eval_results.json ({exc})"]) from exc
    if not isinstance(results, dict):
        raise BadInput([f"{path}: eval: not an object"])
    out = []
    for task_id, runs in results.items():
        if not isinstance(runs, list):
            raise BadInput([f"{path}: eval.{task_id}: not a list"])
        for n, run in enumerate(runs):
            status = run.get("base_status") if isinstance(run, dict) else None
            if not isinstance(status, str):
                raise BadInput([f"{path}: eval.{task_id}[{n}]: no base_status"])
            out.append(HarnessVerdict(f"{normal_id(task_id)}#{n}", status == "pass"))
    return out


@dataclass(frozen=True, slots=True)
class Agreement:
    """How gradebox's verdicts compare with the other harness's, sample by sample."""

    both_pass: int
    """Passed by both."""
    both_fail: int
    """Failed by both."""
    only_gradebox: tuple[str, ...]
    """Ids gradebox passes and the harness fails."""
    only_harness: tuple[str, ...]
    """Ids the harness passes and gradebox does not (type-strict compare, a gate, ...)."""
    missing: tuple[str, ...]
    """Ids in one file and not the other."""

    def to_json(self) -> dict[str, Json]:
        """The report's ``agreement`` object."""
        return {
            "both_pass": self.both_pass,
            "both_fail": self.both_fail,
            "only_gradebox": list(self.only_gradebox),
            "only_harness": list(self.only_harness),
            "missing": list(self.missing),
        }


def compare(harness: list[HarnessVerdict], gradebox: dict[str, bool]) -> Agreement:
    """Compare the harness's verdicts with gradebox's (``id -> pass``)."""
    theirs = {h.id: h.passed for h in harness}
    ids = sorted(set(theirs) & set(gradebox))
    return Agreement(
        both_pass=sum(theirs[i] and gradebox[i] for i in ids),
        both_fail=sum(not theirs[i] and not gradebox[i] for i in ids),
        only_gradebox=tuple(i for i in ids if gradebox[i] and not theirs[i]),
        only_harness=tuple(i for i in ids if theirs[i] and not gradebox[i]),
        missing=tuple(sorted(set(theirs) ^ set(gradebox))),
    )
