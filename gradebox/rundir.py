"""A run directory: everything one grading run leaves behind, and resuming it.

::

    runs/NAME/
      results.jsonl     one row per sample (each row also carries input_sha256)
      summary.json      the end-of-run summary
      manifest.json     tool versions, isolation and limits, judge model and
                        fingerprints, sha256 of every input file, the options
      report.html       the HTML report       (when asked for)
      junit.xml         the JUnit report      (when asked for)
      static.sarif      the static findings   (when asked for)

Resuming: every sample has an *input hash*, the sha256 of its own line, the
hidden cases of its ``fn``, the public task of its ``fn`` and the run options
that change a grade (limits, denylist, layers on or off). A row already in
``results.jsonl`` whose id and input hash both match is kept and the sample is
not graded again; anything else (a changed sample, changed cases, changed
options, an infra-error row, a line torn by a crash) is graded again. Rows are
appended and flushed one by one, so a crashed run loses no finished row.

Reading results for other commands (:func:`read_results`) is strict instead:
every bad line is reported as ``file:line: what is wrong``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import platform
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from gradebox.errors import BadInput
from gradebox.passk import is_infra
from sandbox.cases import read_jsonl
from sandbox.errors import InputError

__all__ = [
    "HASH_FIELD",
    "RESULTS_SCHEMA",
    "ResultsWriter",
    "RunDir",
    "file_sha256",
    "input_hashes",
    "read_results",
    "tool_versions",
]

HASH_FIELD = "input_sha256"
"""The row field a run directory adds: the sample's input hash."""

_OUTCOMES = ["ok", "wrong", "error", "timeout", "crash", "not_run"]
_INDEXES = {"type": "array", "items": {"type": "integer", "minimum": 0}}

RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "fn", "pass", "verdict", "outcomes"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
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


def input_hashes(
    hidden: Path,
    samples: Path,
    public: Path | None = None,
    *,
    options: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The input hash of every sample, by sample id.

    A sample's hash covers its own line, the hidden cases of its ``fn`` (in file
    order), the public task of its ``fn`` and ``options``. Lines are compared as
    canonical JSON, so reformatting a file does not force a re-grade. Lines that
    do not parse are left out (the loaders reject or skip them before grading).

    Args:
        hidden: ``hidden.jsonl``.
        samples: ``samples.jsonl``.
        public: ``public.jsonl``, if any.
        options: Run options that change a grade (limits, denylist, layers, judge
            model and rubric...); any JSON-serialisable mapping.

    Returns:
        ``{sample_id: sha256 hex}``.
    """
    cases: dict[str, list[str]] = {}
    for obj in _objects(hidden):
        cases.setdefault(str(obj.get("fn")), []).append(_canonical(obj))
    tasks = {str(obj.get("fn")): _canonical(obj) for obj in _objects(public)} if public else {}
    extra = _canonical(dict(options or {}))
    per_fn: dict[str, str] = {}
    out: dict[str, str] = {}
    for obj in _objects(samples):
        fn, sid = obj.get("fn"), obj.get("id")
        if not isinstance(fn, str) or not isinstance(sid, str):
            continue
        if fn not in per_fn:
            per_fn[fn] = _sha256("\n".join([*cases.get(fn, []), "", tasks.get(fn, "null")]))
        out[sid] = _sha256("\n".join(["gradebox-input/1", _canonical(obj), per_fn[fn], extra]))
    return out


def _objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines file; other lines are skipped."""
    with path.open("rb") as fh:
        for raw in fh:
            with contextlib.suppress(ValueError, RecursionError):
                obj = json.loads(raw)
                if isinstance(obj, dict):
                    yield obj


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def tool_versions() -> dict[str, str | None]:
    """Versions of Python, gradebox and the static tools (``None`` if not installed)."""
    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }
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


class RunDir:
    """One run directory: its paths, resuming, and the manifest.

    Typical use by ``gradebox grade --run-dir DIR``::

        run = RunDir(path)
        hashes = input_hashes(hidden, samples, public, options=opts)
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
    def sarif(self) -> Path:
        """``static.sarif``."""
        return self.path / "static.sarif"

    def create(self) -> None:
        """Create the directory (and parents) if missing."""
        self.path.mkdir(parents=True, exist_ok=True)

    def rows(self) -> list[dict[str, Any]]:
        """Every row that parses, in file order (a torn or bad line is skipped)."""
        if not self.results.is_file():
            return []
        rows = []
        with self.results.open("rb") as fh:
            for raw in fh:
                with contextlib.suppress(ValueError, RecursionError):
                    row = json.loads(raw)
                    if isinstance(row, dict) and isinstance(row.get("id"), str):
                        rows.append(row)
        return rows

    def done_rows(self, hashes: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """Rows that need no re-grade: same id and input hash, and no infra error.

        Args:
            hashes: ``{sample_id: input hash}`` of the samples about to be graded.
        """
        done: dict[str, dict[str, Any]] = {}
        for row in self.rows():
            sid = row["id"]
            if hashes.get(sid) is not None and row.get(HASH_FIELD) == hashes[sid]:
                if is_infra(row):
                    done.pop(sid, None)
                else:
                    done[sid] = row
        return done

    def done_ids(self, hashes: Mapping[str, str]) -> set[str]:
        """Ids of the samples :meth:`done_rows` would keep."""
        return set(self.done_rows(hashes))

    def resume(self, hashes: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """Rewrite ``results.jsonl`` with only the rows still valid, and return them.

        Stale rows (changed inputs, infra errors, samples no longer in the input,
        torn lines) are dropped, so appending the newly graded rows afterwards
        leaves exactly one row per sample.
        """
        kept = self.done_rows(hashes)
        self.create()
        _write_atomic(self.results, "".join(_line(r) for r in kept.values()))
        return kept

    @contextlib.contextmanager
    def append_results(self) -> Iterator[ResultsWriter]:
        """Open ``results.jsonl`` for appending rows one by one."""
        self.create()
        with self.results.open("a", encoding="utf-8") as fh:
            yield ResultsWriter(fh)

    def reorder(self, order: Sequence[str]) -> None:
        """Rewrite ``results.jsonl`` in ``order`` (ids); rows of other ids follow."""
        rows = {r["id"]: r for r in self.rows()}
        ordered = [rows.pop(sid) for sid in order if sid in rows]
        _write_atomic(self.results, "".join(_line(r) for r in [*ordered, *rows.values()]))

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json``."""
        self.create()
        _write_atomic(self.summary, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")

    def write_manifest(
        self,
        *,
        inputs: Mapping[str, Path | None],
        isolation: str,
        limits: Any,
        judge_model: str | None,
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
            judge_model: The configured judge model, if any.
            rows: The run's rows: the models and system fingerprints the judge
                endpoint reported, and rubric versions, are collected from them.
            options: Other run options worth recording.
            argv: The command line.
            resumed: Rows kept from an earlier run into this directory.

        Returns:
            The manifest as written.
        """
        now = datetime.now(UTC).isoformat(timespec="seconds")
        rows = list(rows)
        manifest = {
            "manifest_version": 1,
            "created": self._created() or now,
            "updated": now,
            "argv": list(argv) if argv is not None else None,
            "tools": tool_versions(),
            "isolation": {"backend": isolation, "limits": _plain(limits)},
            "judge": {"model": judge_model, **_judge_seen(rows)},
            "inputs": {role: _file_entry(p) for role, p in inputs.items()},
            "options": dict(options or {}),
            "samples": {"rows": len(rows), "resumed": resumed},
        }
        self.create()
        _write_atomic(self.manifest, json.dumps(manifest, indent=1, default=str) + "\n")
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


def _judge_seen(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    judged = [j for r in rows if isinstance(j := r.get("judge"), Mapping)]

    def distinct(key: str) -> list[str]:
        return sorted({str(j[key]) for j in judged if j.get(key)})

    return {
        "models_seen": distinct("model"),
        "system_fingerprints": distinct("system_fingerprint"),
        "rubrics": distinct("rubric"),
    }


def _line(row: Mapping[str, Any]) -> str:
    text = json.dumps(row, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\\udXXX" escape: keep it escaped
        text = json.dumps(row)
    return text + "\n"


def _write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
