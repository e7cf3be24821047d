"""Where a grading run's rows and reports go: --out, a run directory, JUnit, HTML.

With ``--run-dir DIR`` the run keeps ``results.jsonl``, ``summary.json``,
``manifest.json`` and its reports in DIR and resumes: samples already graded
there with the same inputs and grading options are not graded again.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from gradebox.grader import Sample
from gradebox.rundir import ResultsWriter, RunDir, input_hashes

__all__ = ["GRADE_OPTIONS", "RunOutput"]

#: Options that change a grade: a resumed row must have been graded with the same.
GRADE_OPTIONS = (
    "banned_imports",
    "case_timeout",
    "candidate_timeout",
    "memory_mb",
    "max_timeouts",
    "no_tree_limits",
    "no_static",
    "no_judge",
    "judge_model",
    "judge_rubric",
    "lockfile",
    "static_policy",
    "reference",
    "properties",
    "seed",
    "isolation",
    "sandbox_python",
)


class RunOutput:
    """Rows out as they finish (to --out or stdout, and the run dir), reports at the end."""

    def __init__(self, o: Mapping[str, Any]) -> None:
        """Prepare outputs from the command's options (nothing is written yet)."""
        self.o = o
        self.run = RunDir(o["run_dir"]) if o.get("run_dir") else None
        self.hashes: dict[str, str] = {}
        self.kept: dict[str, dict[str, Any]] = {}
        if self.run is not None:
            options = {k: _plain(o.get(k)) for k in GRADE_OPTIONS}
            self.hashes = input_hashes(o["hidden"], o["samples"], o["public"], options=options)

    def todo(self, samples: Sequence[Sample]) -> list[Sample]:
        """The samples still to grade (all of them without a run dir)."""
        if self.run is None:
            return list(samples)
        self.kept = self.run.resume(self.hashes)
        return [s for s in samples if s.id not in self.kept]

    @contextlib.contextmanager
    def writer(self) -> Iterator[_Writer]:
        """Open the row sinks for the duration of grading."""
        with contextlib.ExitStack() as stack:
            out: IO[str] | None = None
            if self.o.get("out") is not None:
                out = stack.enter_context(Path(self.o["out"]).open("w", encoding="utf-8"))
            elif self.run is None:
                out = sys.stdout
            run = stack.enter_context(self.run.append_results()) if self.run else None
            yield _Writer(out, run, self.hashes)

    def all_rows(
        self, new_rows: list[dict[str, Any]], order: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Every row of the run in input order: resumed ones and new ones."""
        if self.run is None:
            return new_rows
        self.run.reorder(order)
        return self.run.rows()

    def finish(
        self,
        rows: list[dict[str, Any]],
        summary: dict[str, Any],
        *,
        isolation: str,
        limits: Any,
        judge_model: str | None,
    ) -> None:
        """Write the summary, manifest and reports that were asked for."""
        # Report writers load on demand: a plain run should not pay their import.
        from gradebox.html_report import write_html  # noqa: PLC0415
        from gradebox.junit import write_junit  # noqa: PLC0415

        junit = self.o.get("junit") or (self.run.junit if self.run else None)
        html = self.o.get("html") or (self.run.html if self.run else None)
        if junit is not None:
            write_junit(rows, Path(junit))
        if html is not None:
            write_html(rows, summary, Path(html), title="gradebox run")
        if self.run is not None:
            self.run.write_summary(summary)
            self.run.write_manifest(
                inputs={
                    "hidden": self.o["hidden"],
                    "samples": self.o["samples"],
                    "public": self.o.get("public"),
                    "lockfile": self.o.get("lockfile"),
                    "reference": self.o.get("reference"),
                    "properties": self.o.get("properties"),
                },
                isolation=isolation,
                limits=limits,
                judge_model=judge_model,
                rows=rows,
                options={k: _plain(self.o.get(k)) for k in GRADE_OPTIONS},
                argv=sys.argv,
                resumed=len(self.kept),
            )

    @property
    def sarif_path(self) -> Path | None:
        """Where SARIF goes: --sarif, else the run dir's file when static is on."""
        if self.o.get("sarif") is not None:
            return Path(self.o["sarif"])
        if self.run is not None and not self.o.get("no_static"):
            return self.run.sarif
        return None


class _Writer:
    def __init__(
        self, out: IO[str] | None, run: ResultsWriter | None, hashes: Mapping[str, str]
    ) -> None:
        self.out, self.run, self.hashes = out, run, hashes

    def write(self, row: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.write(row, self.hashes.get(row["id"], ""))
        if self.out is not None:
            self.out.write(json.dumps(row, ensure_ascii=False) + "\n")
            self.out.flush()


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    return value
