"""A run directory: everything one grading run leaves behind, and resuming it.

::

    runs/NAME/
      results.jsonl      one row per sample (each row also carries input_sha256)
      summary.json       the end-of-run summary (with ``resume``: kept, graded, why)
      manifest.json      tool versions, isolation and limits, the judge endpoint,
                         model and rubric digests used, sha256 of every input file
      fingerprints.json  per sample: the sha256 of each part its grade depended on
      static.sarif       every static finding of the run (SARIF 2.1.0)
      junit.xml          the JUnit report of every row
      report.html        the HTML report of every row

Resuming: every sample has a fingerprint (:mod:`gradebox.runs.fingerprint`): the
sha256 of each part its grade depended on (its own line, the hidden cases and
public task of its ``fn``, the lockfile, policy, reference, properties and
rubric contents, the judge endpoint and model, tool versions, limits and
options). Its input hash is the hash of that fingerprint. A row already in
``results.jsonl`` whose id and input hash both match is kept and the sample is
not graded again; anything else (a changed part, an infra-error row, a line
torn by a crash) is graded again, and ``fingerprints.json`` says which part
changed. Rows are appended and flushed one by one, so a crashed run loses no
finished row.

No method holds the run's rows: resuming, reordering and the manifest read
``results.jsonl`` line by line and keep per row only its id, byte offset and
a few flags; kept rows are read back from disk when they are streamed out
(:class:`KeptRows`).

Reading results for other commands (:func:`read_results`) is strict instead:
every bad line is reported as ``file:line: what is wrong``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, get_args

from gradebox.errors import BadInput
from gradebox.grade import Grade
from gradebox.runs.passk import is_infra
from gradebox.runs.private import private_dir, private_text
from sandbox.cases import read_jsonl
from sandbox.errors import InputError
from sandbox.types import CaseOutcome

__all__ = [
    "GATE_ROW_SCHEMA",
    "HASH_FIELD",
    "RESULTS_SCHEMA",
    "KeptRows",
    "Previous",
    "ResultsWriter",
    "RunDir",
    "atomic_writer",
    "file_sha256",
    "read_results",
    "read_scored_rows",
    "tool_versions",
    "write_atomic",
]

HASH_FIELD = "input_sha256"
"""The row field a run directory adds: the sample's input hash."""

_OUTCOMES = list(get_args(CaseOutcome))
_INDEXES = {"type": "array", "items": {"type": "integer", "minimum": 0}}

RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "fn", "pass", "verdict", "outcomes"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "task": {"type": "string", "minLength": 1},
        "fn": {"type": "string", "minLength": 1},
        "pass": {"type": "boolean"},
        "verdict": {"enum": ["pass", "fail", "needs_review"]},
        "reason": {"type": "string"},
        "outcomes": {"type": "array", "items": {"enum": _OUTCOMES}},
        "failed": _INDEXES,
        "timeouts": _INDEXES,
        "infra_error": {"type": ["string", "null", "boolean"]},
    },
}
"""What :func:`read_results` requires of a results row (draft 2020-12)."""

GATE_ROW_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "verdict", "reason", "resolved"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "verdict": {"enum": ["pass", "fail", "needs_review"]},
        "reason": {"type": "string"},
        "resolved": {"type": "boolean"},
        "infra_error": {"type": ["string", "null"]},
    },
}
"""What :func:`read_scored_rows` requires of a ``gradebox gate`` row."""


def read_results(path: Path) -> list[dict[str, Any]]:
    """Read a ``results.jsonl`` strictly.

    Args:
        path: The file, or a run directory (its ``results.jsonl`` is read).

    Returns:
        The rows in file order.

    Raises:
        BadInput: The file is missing or empty, or lines are bad (each as
            ``file:line: what is wrong``): invalid JSON, a row that breaks
            :data:`RESULTS_SCHEMA`, ``pass`` that disagrees with ``verdict``, or a
            duplicate id.
    """
    if path.is_dir():
        path = RunDir(path).results
    try:
        items, found = read_jsonl(path, RESULTS_SCHEMA, _result)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    seen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for line, row in items:
        if row["id"] in seen:
            found.append(
                (line, f"id: sample id {row['id']!r} already has a row on line {seen[row['id']]}")
            )
            continue
        seen[row["id"]] = line
        rows.append(row)
    if found:
        raise BadInput([f"{path}:{n}: {m}" for n, m in sorted(found)])
    return rows


def read_scored_rows(path: Path) -> list[dict[str, Any]]:
    """Rows to score (pass@k): a ``results.jsonl`` or a ``gradebox gate`` output.

    A file whose first row is a gate row (``resolved``, no ``outcomes``) is read
    as gate rows: one per prediction, several may share an instance ``id``.
    Anything else is read strictly as :func:`read_results`.

    Raises:
        BadInput: As :func:`read_results`, each bad line as ``file:line: what is wrong``.
    """
    if path.is_dir():
        path = RunDir(path).results
    if not _first_is_gate_row(path):
        return read_results(path)
    try:
        items, found = read_jsonl(path, GATE_ROW_SCHEMA, _gate_row)
    except InputError as exc:
        raise BadInput(exc.problems) from exc
    if found:
        raise BadInput([f"{path}:{n}: {m} (a gate row was expected)" for n, m in sorted(found)])
    return items


def _first_is_gate_row(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    first = json.loads(raw.removeprefix(b"\xef\xbb\xbf"))
                    return (
                        isinstance(first, dict)
                        and "resolved" in first
                        and ("outcomes" not in first)
                    )
    except (OSError, ValueError):
        return False  # read_results says what is wrong with the file
    return False


def _gate_row(obj: dict[str, Any], line: int) -> tuple[dict[str, Any] | None, list[str]]:
    return obj, []


def _result(obj: dict[str, Any], line: int) -> tuple[tuple[int, dict[str, Any]] | None, list[str]]:
    if obj["pass"] != (obj["verdict"] == "pass"):
        return None, [f"pass: {obj['pass']} disagrees with verdict {obj['verdict']!r}"]
    return (line, obj), []


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tool_versions() -> dict[str, str | None]:
    """Versions of Python, gradebox and the static tools (``None`` if not installed)."""
    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }
    import importlib.metadata  # noqa: PLC0415 - ~15 ms of imports, for a run's record only

    for dist in ("gradebox", "ruff", "mypy", "bandit", "openai"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


class ResultsWriter:
    """Appends rows to ``results.jsonl``, each stamped with its input hash and flushed."""

    def __init__(self, fh: IO[str]) -> None:
        self._fh = fh

    def write(self, row: Mapping[str, Any], input_hash: str) -> dict[str, Any]:
        """Append one row with ``input_sha256`` set; return the row as written."""
        stamped = {**row, HASH_FIELD: input_hash}
        self._fh.write(_line(stamped))
        self._fh.flush()
        return stamped


@dataclass(frozen=True, slots=True)
class Previous:
    """What the last run left for one sample id (its last row that parses)."""

    input_hash: str | None
    """The row's ``input_sha256``."""
    infra: bool
    """The row is an infrastructure error."""


class KeptRows(Mapping[str, dict[str, Any]]):
    """Rows kept from an earlier run, read from ``results.jsonl`` by byte offset on lookup.

    Holds each kept row's id and offset, not the row. The rows sit at the start
    of the file (:meth:`RunDir.resume` rewrote it so), where appending new rows
    does not move them.
    """

    def __init__(self, path: Path, offsets: dict[str, int]) -> None:
        """Name the file and where each kept row starts."""
        self._path = path
        self._offsets = offsets

    def __getitem__(self, sample_id: str) -> dict[str, Any]:
        """The kept row of ``sample_id`` (with its ``input_sha256``), read now."""
        offset = self._offsets[sample_id]
        with self._path.open("rb") as fh:
            fh.seek(offset)
            row: dict[str, Any] = json.loads(fh.readline())
        return row

    def __contains__(self, sample_id: object) -> bool:
        """Whether a row was kept for the id (no read)."""
        return sample_id in self._offsets

    def __iter__(self) -> Iterator[str]:
        """The kept ids."""
        return iter(self._offsets)

    def __len__(self) -> int:
        """How many rows were kept."""
        return len(self._offsets)


class RunDir:
    """One run directory: its paths, resuming, and the manifest.

    Typical use by ``gradebox grade --run-dir DIR``::

        run = RunDir(path)
        hashes = {sid: combine(parts) for sid, parts in prints.items()}
        kept = run.resume(hashes)                  # rows graded before, same inputs
        with run.append_results() as out:
            for row in grade([s for s in todo if s.id not in kept]):
                out.write(row, hashes[row["id"]])
        run.reorder([s.id for s in samples])       # input order again
        run.write_summary(summarize(run.rows()))
        run.write_manifest(inputs=..., isolation=..., limits=..., judge_model=...)
    """

    def __init__(self, path: Path) -> None:
        """Name the directory (nothing is created until :meth:`create` or a write)."""
        self.path = Path(path)

    @property
    def results(self) -> Path:
        """``results.jsonl``."""
        return self.path / "results.jsonl"

    @property
    def summary(self) -> Path:
        """``summary.json``."""
        return self.path / "summary.json"

    @property
    def manifest(self) -> Path:
        """``manifest.json``."""
        return self.path / "manifest.json"

    @property
    def html(self) -> Path:
        """``report.html``."""
        return self.path / "report.html"

    @property
    def junit(self) -> Path:
        """``junit.xml``."""
        return self.path / "junit.xml"

    @property
    def fingerprints(self) -> Path:
        """``fingerprints.json``: what each sample's grade depended on, part by part."""
        return self.path / "fingerprints.json"

    @property
    def sarif(self) -> Path:
        """``static.sarif``."""
        return self.path / "static.sarif"

    def create(self) -> None:
        """Create the directory (and parents) if missing."""
        private_dir(self.path)

    def rows(self) -> list[dict[str, Any]]:
        """Every row that parses, in file order (a torn or bad line is skipped)."""
        return [row for _, row in self._scan()]

    def _scan(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(byte offset, row)`` of every row that parses, one at a time, in file order."""
        if not self.results.is_file():
            return
        with self.results.open("rb") as fh:
            offset = 0
            for raw in fh:
                at, offset = offset, offset + len(raw)
                with contextlib.suppress(ValueError, RecursionError):
                    row = json.loads(raw)
                    if isinstance(row, dict) and isinstance(row.get("id"), str):
                        yield at, row

    def done_rows(self, hashes: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """Rows that need no re-grade.

        A row is kept with the same id and input hash, no infra error, and when it
        reads back as a :class:`~gradebox.grade.Grade` (a hand-edited or older row
        is graded again rather than trusted).

        Args:
            hashes: ``{sample_id: input hash}`` of the samples about to be graded.
        """
        done: dict[str, dict[str, Any]] = {}
        for row in self.rows():
            sid = row["id"]
            if hashes.get(sid) is not None and row.get(HASH_FIELD) == hashes[sid]:
                if is_infra(row) or not _reads_back(row):
                    done.pop(sid, None)
                else:
                    done[sid] = row
        return done

    def done_ids(self, hashes: Mapping[str, str]) -> set[str]:
        """Ids of the samples :meth:`done_rows` would keep."""
        return set(self.done_rows(hashes))

    def resume(self, hashes: Mapping[str, str]) -> KeptRows:
        """Rewrite ``results.jsonl`` with only the rows still valid, and return them.

        Stale rows (changed inputs, infra errors, samples no longer in the input,
        torn lines) are dropped, so appending the newly graded rows afterwards
        leaves exactly one row per sample. The same rows as :meth:`done_rows`,
        but read twice from disk rather than held.
        """
        return self.resume_with_previous(hashes)[0]

    def resume_with_previous(
        self, hashes: Mapping[str, str]
    ) -> tuple[KeptRows, dict[str, Previous]]:
        """:meth:`resume`, and what the last row of every id said before the rewrite.

        Returns:
            The kept rows, and ``{sample_id: Previous}`` for every id with a row.
        """
        previous: dict[str, Previous] = {}
        last_match: dict[str, int] = {}  # offset of each id's last row with its input hash
        for offset, row in self._scan():
            sid, got = row["id"], row.get(HASH_FIELD)
            previous[sid] = Previous(got if isinstance(got, str) else None, is_infra(row))
            if hashes.get(sid) is not None and got == hashes[sid]:
                last_match[sid] = offset
        # As done_rows: the last row with the input hash decides (kept unless it is an
        # infra error or does not read back as a grade).
        self.create()
        offsets: dict[str, int] = {}
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(atomic_writer(self.results))
            if last_match:
                src = stack.enter_context(self.results.open("rb"))
                written = 0
                for sid, at in sorted(last_match.items(), key=lambda item: item[1]):
                    src.seek(at)
                    row = json.loads(src.readline())
                    if is_infra(row) or not _reads_back(row):
                        continue
                    line = _line(row)
                    out.write(line)
                    offsets[sid] = written
                    written += len(line.encode("utf-8"))
        return KeptRows(self.results, offsets), previous

    @contextlib.contextmanager
    def append_results(self) -> Iterator[ResultsWriter]:
        """Open ``results.jsonl`` for appending rows one by one."""
        self.create()
        with private_text(self.results, "a") as fh:
            yield ResultsWriter(fh)

    def read_fingerprints(self) -> dict[str, dict[str, str]]:
        """The fingerprints the last run recorded (``{}`` when missing or unreadable)."""
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(self.fingerprints.read_text("utf-8"))
            samples = data.get("samples") if isinstance(data, dict) else None
            if isinstance(samples, dict):
                return {k: v for k, v in samples.items() if isinstance(v, dict)}
        return {}

    def write_fingerprints(self, prints: Mapping[str, Mapping[str, str]]) -> None:
        """Record every sample's fingerprint (see :mod:`gradebox.runs.fingerprint`)."""
        self.create()
        # Written sample by sample: one json.dumps of the whole mapping held several
        # times its size (~90 MB for 20,000 samples). The JSON is the same document.
        with atomic_writer(self.fingerprints) as fh:
            fh.write('{\n "samples": {')
            for k, sid in enumerate(sorted(prints)):
                parts = json.dumps(dict(prints[sid]), sort_keys=True, separators=(", ", ": "))
                fh.write(("\n" if k == 0 else ",\n") + f"  {json.dumps(sid)}: {parts}")
            fh.write("\n }," if prints else "},")
            fh.write('\n "version": 1\n}\n')

    def reorder(self, order: Sequence[str]) -> None:
        """Rewrite ``results.jsonl`` in ``order`` (ids); rows of other ids follow.

        Of rows with the same id the last is kept; torn lines are dropped. Only each
        row's offset is held; rows are copied one at a time.
        """
        offsets: dict[str, int] = {}
        for offset, row in self._scan():
            offsets[row["id"]] = offset  # the last row of an id, at its first place
        with atomic_writer(self.results) as out, self.results.open("rb") as src:
            for sid in order:
                at = offsets.pop(sid, None)
                if at is not None:
                    out.write(_line(_row_at(src, at)))
            for at in offsets.values():
                out.write(_line(_row_at(src, at)))

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json``."""
        self.create()
        write_atomic(self.summary, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")

    def write_manifest(
        self,
        *,
        inputs: Mapping[str, Path | None],
        isolation: str,
        limits: Any,
        judge_model: str | None,
        judge_base_url: str | None = None,
        rubric_digests: Mapping[str, str] | None = None,
        judge_endpoint: Mapping[str, Any] | None = None,
        tools: Mapping[str, str | None] | None = None,
        rows: Iterable[Mapping[str, Any]] = (),
        options: Mapping[str, Any] | None = None,
        argv: Sequence[str] | None = None,
        resumed: int = 0,
    ) -> dict[str, Any]:
        """Write ``manifest.json``: what is needed to reproduce and compare this run.

        Args:
            inputs: Input files by role (``hidden``, ``samples``, ``public``,
                ``lockfile``...); ``None`` entries are recorded as absent.
            isolation: The isolation backend that ran the candidates.
            limits: The resource limits (a mapping or a dataclass such as
                :class:`sandbox.types.Limits`).
            judge_model: The judge model used (from the options or the environment).
            judge_base_url: The judge endpoint used.
            rubric_digests: Digest of each rubric (and its templates) in use, by name.
            judge_endpoint: What probing the judge endpoint found (rung, temperature
                policy), the repeats and every ``system_fingerprint`` fresh replies carried.
            tools: Versions beyond :func:`tool_versions` (the sandbox interpreter).
            rows: The run's rows: the models and system fingerprints the judge
                endpoint reported, and rubric versions, are collected from them.
            options: Other run options worth recording.
            argv: The command line.
            resumed: Rows kept from an earlier run into this directory.

        Returns:
            The manifest as written.
        """
        now = datetime.now(UTC).isoformat(timespec="seconds")
        count, seen = _judge_seen(rows)
        manifest = {
            "manifest_version": 1,
            "created": self._created() or now,
            "updated": now,
            "argv": list(argv) if argv is not None else None,
            "tools": {**tool_versions(), **dict(tools or {})},
            "isolation": {"backend": isolation, "limits": _plain(limits)},
            "judge": {
                "model": judge_model,
                "base_url": judge_base_url,
                "rubric_digests": dict(rubric_digests or {}),
                **({"endpoint": dict(judge_endpoint)} if judge_endpoint is not None else {}),
                **seen,
            },
            "inputs": {role: _file_entry(p) for role, p in inputs.items()},
            "options": dict(options or {}),
            "samples": {"rows": count, "resumed": resumed},
        }
        self.create()
        write_atomic(self.manifest, json.dumps(manifest, indent=1, default=str) + "\n")
        return manifest

    def _created(self) -> str | None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            created = json.loads(self.manifest.read_text("utf-8")).get("created")
            return created if isinstance(created, str) else None
        return None


def _plain(limits: Any) -> Any:
    if dataclasses.is_dataclass(limits) and not isinstance(limits, type):
        return dataclasses.asdict(limits)
    return dict(limits) if isinstance(limits, Mapping) else limits


def _file_entry(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    path = Path(path)
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)}


def _judge_seen(rows: Iterable[Mapping[str, Any]]) -> tuple[int, dict[str, list[str]]]:
    """How many rows, and the distinct judge models, fingerprints and rubrics: one pass."""
    keys = {
        "models_seen": "model",
        "system_fingerprints": "system_fingerprint",
        "rubrics": "rubric",
    }
    found: dict[str, set[str]] = {name: set() for name in keys}
    count = 0
    for row in rows:
        count += 1
        judge = row.get("judge")
        if isinstance(judge, Mapping):
            for name, key in keys.items():
                if judge.get(key):
                    found[name].add(str(judge[key]))
    return count, {name: sorted(values) for name, values in found.items()}


def _row_at(src: IO[bytes], offset: int) -> dict[str, Any]:
    src.seek(offset)
    row: dict[str, Any] = json.loads(src.readline())
    return row


def _line(row: Mapping[str, Any]) -> str:
    text = json.dumps(row, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\\udXXX" escape: keep it escaped
        text = json.dumps(row)
    return text + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and rename it over ``path``."""
    with atomic_writer(path) as fh:
        fh.write(text)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text file (UTF-8) that replaces ``path`` when the block ends without error.

    Written through a temporary file in the same directory, synced, then renamed
    over ``path``; on error the temporary file is removed and ``path`` is untouched.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _reads_back(row: Mapping[str, Any]) -> bool:
    """The row (less its hash) is a well-formed grade."""
    try:
        Grade.from_row({k: v for k, v in row.items() if k != HASH_FIELD})
    except (ValueError, TypeError, KeyError, AttributeError):
        return False
    return True
