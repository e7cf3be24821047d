"""Where a grading run's rows and reports go: --out (or stdout), a run directory, reports.

Every output covers the whole run. With ``--run-dir DIR`` the run resumes:
samples graded there before with the same fingerprint (:mod:`gradebox.runs.fingerprint`)
are kept, the rest are graded, and the rows stream out in input order, kept
and new alike, to ``--out`` (or stdout) while the new ones are appended to
``DIR/results.jsonl``. At the end SARIF, JUnit and HTML are written from every
row of the run: to the paths asked for, and always into the run directory.

No list of the run's rows or samples is kept: samples are read from disk as
grading reaches them (:class:`~gradebox.runs.inputs.SampleFile`), rows go to
disk as they finish, and the summary and reports read them back from there
(:meth:`RunOutput.rows`): from ``--out`` when it is a regular file, else from a
private spool file written beside stdout. Rows kept from a run directory are
read back by byte offset (:class:`~gradebox.runs.rundir.KeptRows`). SARIF is
written result by result, JUnit testcase by testcase, and the HTML report
embeds a capped number of samples (:data:`gradebox.reports.html.MAX_SAMPLES`).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gradebox.grade import Grade
from gradebox.model import Sample
from gradebox.runs.config import RunConfig
from gradebox.runs.inputs import SampleFile, sample_ids
from gradebox.runs.private import private_text

if TYPE_CHECKING:  # loaded on use: a run without --run-dir or reports needs neither
    from gradebox.runs.fingerprint import Fingerprints
    from gradebox.runs.rundir import RunDir

__all__ = ["LazySources", "Plan", "Reports", "RunOutput"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run grades and what it keeps from its run directory."""

    todo: Sequence[Sample]
    """The samples to grade, in input order (read from disk as grading reaches them)."""
    kept: Mapping[str, dict[str, Any]]
    """Rows kept from an earlier run, by sample id (read from the run dir on lookup)."""
    why: dict[str, list[str]] = field(default_factory=dict)
    """Why each sample is graded again: ``{reason: [sample ids]}`` (not for new samples)."""

    def lines(self) -> list[str]:
        """``regraded 4: lockfile changed (a, b, c, d)``, one line per reason."""
        out = []
        for reason, ids in self.why.items():
            shown = ", ".join(ids[:10]) + (f", ... {len(ids) - 10} more" if len(ids) > 10 else "")
            out.append(f"regraded {len(ids)}: {reason} ({shown})")
        return out

    def record(self) -> dict[str, Any]:
        """The summary's ``resume`` entry."""
        return {
            "kept": len(self.kept),
            "graded": len(self.todo),
            "regraded": {reason: len(ids) for reason, ids in self.why.items()},
        }


class LazySources(Mapping[str, str]):
    """Extracted code by sample id, extracted again at each lookup.

    The reports look up a few samples' code (the HTML report embeds a capped
    number) or every finding's sample (SARIF): holding every sample's code for
    that would grow with the run.
    """

    def __init__(self, samples: Sequence[Sample], code: Callable[[Sample], str | None]) -> None:
        """Look samples up by id.

        Args:
            samples: The run's samples (a :class:`~gradebox.runs.inputs.SampleFile`
                reads only the samples looked up).
            code: A sample's extracted code, ``None`` when extraction failed.
        """
        self._position: Callable[[str], int | None]
        if isinstance(samples, SampleFile):
            self._position = samples.position
        else:
            index = {s.id: k for k, s in enumerate(samples)}

            def position(sample_id: str) -> int | None:
                return index.get(sample_id)

            self._position = position
        self._samples = samples
        self._code = code

    def __getitem__(self, sample_id: str) -> str:
        """The sample's extracted code; ``KeyError`` when there is none."""
        k = self._position(sample_id)
        code = None if k is None else self._code(self._samples[k])
        if code is None:
            raise KeyError(sample_id)
        return code

    def __iter__(self) -> Iterator[str]:
        """Ids of the samples whose code extracts, in input order."""
        return (s.id for s in self._samples if self._code(s) is not None)

    def __len__(self) -> int:
        """How many samples' code extracts (extracts every sample: prefer lookups)."""
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        """Whether the run has samples (without extracting any)."""
        return bool(self._samples)


@dataclass(frozen=True, slots=True)
class Reports:
    """What the reports need beyond the rows."""

    sources: Mapping[str, str]
    """Extracted code by sample id."""
    case_names: Mapping[str, Sequence[str | None]]
    """Hidden case names per task, by case index."""
    static: bool
    """The static layers ran (SARIF holds their findings)."""
    version: str
    """gradebox's version."""


class RunOutput:
    """Rows out as they finish (to --out or stdout, and the run dir), reports at the end."""

    def __init__(self, config: RunConfig, prints: Fingerprints | None = None) -> None:
        """Prepare outputs (nothing is written yet).

        Args:
            config: The run.
            prints: Every sample's fingerprint (needed with a run directory).
        """
        self.config = config
        self.run: RunDir | None = None
        if config.run_dir is not None:
            from gradebox.runs.rundir import RunDir  # noqa: PLC0415 - see the imports

            self.run = RunDir(config.run_dir)
        self.prints: Mapping[str, Mapping[str, str]] = prints or {}
        self.hashes = _InputHashes(self.prints)
        self.plan = Plan(todo=[], kept={})
        self._written: Path | None = None
        self._spool: tempfile.TemporaryDirectory[str] | None = None

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row :meth:`stream` wrote, read back from disk one at a time, in input order."""
        if self._written is None:
            return
        with self._written.open(encoding="utf-8") as rows:
            for line in rows:
                yield json.loads(line)

    def close(self) -> None:
        """Remove the spool file, if any; safe to call twice."""
        if self._spool is not None:
            self._spool.cleanup()
            self._spool = None

    def todo(self, samples: Sequence[Sample]) -> Plan:
        """Decide what to grade; with a run dir, drop its stale rows and record why."""
        if self.run is None:
            self.plan = Plan(todo=samples, kept={})
            return self.plan
        from gradebox.runs.fingerprint import changed_parts, describe  # noqa: PLC0415

        old_prints = self.run.read_fingerprints()
        kept, previous = self.run.resume_with_previous(self.hashes)
        self.run.write_fingerprints(self.prints)
        ids = sample_ids(samples)
        todo: Sequence[Sample]
        if isinstance(samples, SampleFile):
            todo = samples.select(lambda k: ids[k] not in kept)
        else:
            todo = [s for s in samples if s.id not in kept]
        why: dict[str, list[str]] = {}
        for sid in sample_ids(todo):
            old = previous.get(sid)
            if old is None:
                continue
            if old.infra and old.input_hash == self.hashes.get(sid):
                reason = "an infrastructure error before"
            else:
                reason = describe(changed_parts(old_prints.get(sid), self.prints.get(sid, {})))
            why.setdefault(reason, []).append(sid)
        self.plan = Plan(todo=todo, kept=kept, why=why)
        return self.plan

    def stream(
        self, samples: Sequence[Sample], new_rows: Iterable[dict[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        """Every row of the run in input order: kept rows at once, new ones as they finish.

        Each row is written to --out (or stdout) as it comes; new rows are also
        appended to the run directory. Rows out carry no ``input_sha256``.
        """
        fresh = iter(new_rows)
        hash_field = _hash_field() if self.plan.kept else ""
        with self._sinks() as (out, spool, run):
            for sid in sample_ids(samples):
                kept = self.plan.kept.get(sid)
                if kept is not None:
                    row = {k: v for k, v in kept.items() if k != hash_field}
                else:
                    row = next(fresh)
                    if run is not None:
                        run.write(row, self.hashes.get(row["id"], ""))
                line = json.dumps(row, ensure_ascii=False) + "\n"
                out.write(line)
                out.flush()
                if spool is not None:
                    spool.write(line)
                yield row

    def write(self, samples: Sequence[Sample], new_rows: Iterable[dict[str, Any]]) -> None:
        """:meth:`stream` to the end, keeping no row (read them back with :meth:`rows`)."""
        for _row in self.stream(samples, new_rows):
            pass

    @contextlib.contextmanager
    def _sinks(self) -> Iterator[tuple[IO[str], IO[str] | None, Any]]:
        with contextlib.ExitStack() as stack:
            out: IO[str] = sys.stdout
            spool: IO[str] | None = None
            target = Path(self.config.out) if self.config.out is not None else None
            if target is not None:
                out = stack.enter_context(private_text(target))
            if target is not None and target.is_file():
                self._written = target  # read back from there
            else:  # stdout or a pipe: a private copy to read back
                self._spool = tempfile.TemporaryDirectory(prefix="gradebox-rows-")
                self._written = Path(self._spool.name) / "rows.jsonl"
                spool = stack.enter_context(private_text(self._written, "x"))
            run = stack.enter_context(self.run.append_results()) if self.run else None
            yield out, spool, run

    def finish(
        self,
        summary: dict[str, Any],
        reports: Reports,
        *,
        manifest: Mapping[str, Any],
        order: Sequence[str],
    ) -> None:
        """Write SARIF, JUnit, HTML, and the run dir's summary and manifest.

        Every report reads the rows back from disk (:meth:`rows`).

        Args:
            summary: The run's summary.
            reports: Code and case names for the reports.
            manifest: Keyword arguments for :meth:`gradebox.runs.rundir.RunDir.write_manifest`.
            order: Sample ids in input order.
        """
        # Report writers load on demand: a plain run should not pay their import.
        from gradebox.reports.html import write_html  # noqa: PLC0415
        from gradebox.reports.junit import write_junit  # noqa: PLC0415
        from gradebox.reports.sarif import write_sarif  # noqa: PLC0415
        from gradebox.runs.rundir import atomic_writer  # noqa: PLC0415

        c, run = self.config, self.run
        for path in (c.sarif, run.sarif if run else None):
            if path is not None:
                with atomic_writer(Path(path)) as fh:
                    write_sarif(
                        self.grades,
                        fh,
                        version=reports.version,
                        sources=reports.sources,
                        static_ran=reports.static,
                    )
        for path in (c.junit, run.junit if run else None):
            if path is not None:  # each testcase spooled as it comes: no grade held
                write_junit(self.grades(), Path(path))
        for path in (c.html, run.html if run else None):
            if path is not None:
                write_html(
                    self.grades(),
                    summary,
                    Path(path),
                    title="gradebox run",
                    sources=reports.sources,
                    case_names=reports.case_names,
                )
        if run is not None:
            run.reorder(order)
            run.write_summary(summary)
            run.write_manifest(**manifest, rows=self.rows(), resumed=len(self.plan.kept))

    def grades(self) -> Iterator[Grade]:
        """:meth:`rows` as typed grades; a row that does not read back is a bug, loud here."""
        return (Grade.from_row(r) for r in self.rows())


class _InputHashes(Mapping[str, str]):
    """Each sample's input hash (:func:`~gradebox.runs.fingerprint.combine`), computed when asked.

    Not a dict of every sample's hash: that was 64 characters a sample held for the
    whole run (~15 MB at 100,000 samples).
    """

    def __init__(self, prints: Mapping[str, Mapping[str, str]]) -> None:
        self._prints = prints

    def __getitem__(self, sample_id: str) -> str:
        from gradebox.runs.fingerprint import combine  # noqa: PLC0415 - run dirs only

        return combine(self._prints[sample_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._prints)

    def __len__(self) -> int:
        return len(self._prints)


def _hash_field() -> str:
    """The run directory's per-row input hash field (kept rows carry it; rows out do not)."""
    from gradebox.runs.rundir import HASH_FIELD  # noqa: PLC0415 - run dirs only

    return HASH_FIELD
