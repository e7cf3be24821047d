"""Loading a run's inputs: hidden cases, public tasks and samples, checked together.

Everything is validated before any work starts: a bad line anywhere is reported
as ``file:line: what is wrong`` and the run does not start. A caller may ask to
skip bad lines of samples.jsonl and public.jsonl (the problems are returned for
the summary and the bad samples are left out, never silently); bad lines of
hidden.jsonl always stop the run: the deciding cases are never dropped.

Samples are not held in memory: :func:`open_samples` checks every line of the
file up front (in chunks, with the same checks and messages as every other
JSON Lines input) and keeps, per good line, its id, task id, byte offset and a
digest. A :class:`SampleFile` then reads each sample from disk when the run
asks for it. A file changed after it was checked (its size, modification time
or inode, or the bytes of a line) is refused at the next read with a
:class:`~gradebox.errors.BadInput` that says so: no line that was not checked
is ever graded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import weakref
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any, TypeVar, overload

from gradebox.errors import BadInput
from gradebox.model import Sample, Task, task_of
from sandbox.cases import load_hidden, load_public, read_jsonl
from sandbox.errors import InputError
from sandbox.types import HiddenCase, PublicTask

__all__ = [
    "RunInputs",
    "SampleFile",
    "group_tasks",
    "load_inputs",
    "load_samples",
    "open_samples",
    "sample_ids",
]

_T = TypeVar("_T")

CHUNK_LINES = 2048
"""Lines checked together (one call of the shared JSON Lines checker)."""
CHUNK_BYTES = 4 << 20
"""Bytes checked together at most (a chunk ends early at a long line)."""
_BOM = b"\xef\xbb\xbf"
_DIGEST = 8
"""Bytes of blake2b kept per line: a changed line is caught, not forged against."""


@dataclass(frozen=True, slots=True)
class _Identity:
    """What must not change between the check and each read."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> _Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class SampleFile(Sequence[Sample]):
    """The checked samples of a samples.jsonl, read from disk one at a time.

    Holds per sample its id, task, line number, byte offset and an 8-byte
    digest of the line, never the sample itself. ``samples[k]`` reads line k
    again, checks that the file and the line are as they were when checked, and
    builds the :class:`~gradebox.model.Sample`; iterating reads the lines in
    order, on demand. Reads are thread-safe.
    """

    def __init__(
        self,
        path: Path,
        identity: _Identity,
        *,
        ids: list[str],
        tasks: list[str],
        lines: array[int],
        offsets: array[int],
        digests: bytes,
        index: dict[str, int] | None = None,
        copy: _PrivateCopy | None = None,
        entries: dict[int, str] | None = None,
        named_by: bytes = b"",
    ) -> None:
        """Wrap what :func:`open_samples` found; use that function instead."""
        self.path = path
        self._copy = copy  # a pipe's private copy (removed when no SampleFile needs it)
        self._source = copy.path if copy is not None else path
        self._identity = identity
        self._ids = ids
        self._tasks = tasks
        self._entries = entries or {}  # position -> the fn a line names beside its task
        self._named_by = named_by or bytes(len(ids))  # per sample: index into _FIELDS
        self._lines = lines
        self._offsets = offsets
        self._digests = digests
        self._index = index if index is not None else {sid: k for k, sid in enumerate(ids)}
        self._lock = threading.Lock()
        self._fh: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def ids(self) -> Sequence[str]:
        """Sample ids in input order (no line is read)."""
        return self._ids

    @property
    def tasks(self) -> Sequence[str]:
        """Each sample's task id, in input order (no line is read)."""
        return self._tasks

    def entry(self, k: int) -> str | None:
        """The entry point (``fn``) sample ``k`` names beside its ``task``, if it names one."""
        return self._entries.get(k)

    def named_by(self, k: int) -> str:
        """The field sample ``k`` names its task with: ``task``, ``fn`` or (neither) ``id``."""
        return _FIELDS[self._named_by[k]]

    def line(self, k: int) -> int:
        """The line number of sample ``k`` in the file."""
        return self._lines[k]

    def position(self, sample_id: str) -> int | None:
        """The index of the sample with this id, ``None`` when there is none."""
        return self._index.get(sample_id)

    def __len__(self) -> int:
        """How many samples."""
        return len(self._ids)

    @overload
    def __getitem__(self, k: int) -> Sample: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[Sample]: ...
    def __getitem__(self, k: int | slice) -> Sample | Sequence[Sample]:
        """Sample ``k``, read from the file now (a slice reads each of its samples)."""
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        raw = self._read(k)
        obj = json.loads(raw)
        return Sample.from_json(obj, self._lines[k])

    def __iter__(self) -> Iterator[Sample]:
        """Every sample in input order, each read when it is reached."""
        return (self[k] for k in range(len(self)))

    def select(self, keep: Callable[[int], bool]) -> SampleFile:
        """The samples whose index ``keep`` accepts, in input order (same file, same checks)."""
        chosen = [k for k in range(len(self)) if keep(k)]
        d = _DIGEST
        return SampleFile(
            self.path,
            self._identity,
            copy=self._copy,
            ids=[self._ids[k] for k in chosen],
            tasks=[self._tasks[k] for k in chosen],
            entries={j: self._entries[k] for j, k in enumerate(chosen) if k in self._entries},
            named_by=bytes(self._named_by[k] for k in chosen),
            lines=array("I", (self._lines[k] for k in chosen)),
            offsets=array("Q", (self._offsets[k] for k in chosen)),
            digests=b"".join(self._digests[k * d : (k + 1) * d] for k in chosen),
        )

    def check_unchanged(self) -> None:
        """Raise :class:`BadInput` unless the file is as it was when checked."""
        try:
            now = _Identity.of(os.stat(self._source))
        except OSError as exc:
            raise self._changed(None, f"cannot be read any more ({exc.strerror or exc})") from exc
        if now != self._identity:
            raise self._changed(None, _what_changed(self._identity, now))

    def close(self) -> None:
        """Close the file handle reads use (a later read opens it again)."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._fh = self._finalizer = None

    def _read(self, k: int) -> bytes:
        with self._lock:
            fh = self._handle()
            held = _Identity.of(os.fstat(fh.fileno()))
            if held != self._identity:
                raise self._changed(None, _what_changed(self._identity, held))
            fh.seek(self._offsets[k])
            raw = fh.readline()
        self.check_unchanged()  # the path still names the file that was checked
        d = _DIGEST
        if _digest(raw) != self._digests[k * d : (k + 1) * d]:
            raise self._changed(self._lines[k], "this line is not the line that was checked")
        return raw

    def _handle(self) -> IO[bytes]:
        if self._fh is None:
            try:
                fh = self._source.open("rb")
            except OSError as exc:
                raise self._changed(
                    None, f"cannot be read any more ({exc.strerror or exc})"
                ) from exc
            self._fh = fh
            self._finalizer = weakref.finalize(self, fh.close)
        return self._fh

    def _changed(self, line: int | None, what: str) -> BadInput:
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        return BadInput(
            [
                f"{where}: changed after it was checked ({what}); samples after the change "
                "were not graded (rows already written are kept). Do not edit or write "
                "the samples file during a run; run again (with --run-dir to keep "
                "finished rows)."
            ]
        )


def _what_changed(was: _Identity, now: _Identity) -> str:
    if (was.dev, was.ino) != (now.dev, now.ino):
        return "it was replaced by another file"
    if was.size != now.size:
        return f"its size went from {was.size} to {now.size} bytes"
    return "it was modified"


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=_DIGEST).digest()


@dataclass(frozen=True, slots=True)
class RunInputs:
    """A run's validated inputs."""

    tasks: dict[str, Task]
    """Tasks by id, with their hidden cases and public description."""
    samples: SampleFile
    """Samples in input order, read from disk as the run reaches them."""
    problems: list[str]
    """Bad lines that were skipped (only with ``skip_bad_lines``)."""


def sample_ids(samples: Sequence[Sample]) -> Sequence[str]:
    """The samples' ids in order; a :class:`SampleFile` answers without reading a line."""
    if isinstance(samples, SampleFile):
        return samples.ids
    return [s.id for s in samples]


def load_samples(path: Path, *, skip_bad_lines: bool = False) -> tuple[list[Sample], list[str]]:
    """Load ``samples.jsonl`` into memory (see :func:`open_samples` for a large file).

    Duplicate ids and lines with neither reply nor code are bad.
    """
    samples, problems = open_samples(path, skip_bad_lines=skip_bad_lines)
    try:
        return list(samples), problems
    finally:
        samples.close()


def open_samples(path: Path, *, skip_bad_lines: bool = False) -> tuple[SampleFile, list[str]]:
    """Check every line of ``samples.jsonl`` now; read the samples later, on demand.

    Each line gets the checks and messages of every JSON Lines input
    (:func:`sandbox.cases.read_jsonl`, run over chunks of the file); duplicate
    ids and lines with neither or both of reply and code are bad too.

    Returns:
        The good samples, and the bad lines as ``file:line: what is wrong``
        (only with ``skip_bad_lines``).

    Raises:
        BadInput: The file is missing, unreadable or empty, it changed while it
            was checked, or (without ``skip_bad_lines``) any line is bad.
    """
    schema = json.loads(
        (resources.files("gradebox") / "schemas" / "samples.schema.json").read_text("utf-8")
    )
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise BadInput([f"{path}: no such file"]) from exc
    except OSError as exc:
        raise BadInput([f"{path}: cannot read ({exc.strerror or exc})"]) from exc
    copy: Path | None = None
    with contextlib.ExitStack() as stack:
        stack.enter_context(fh)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gradebox-samples-")))
        try:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                # A pipe (--samples /dev/stdin) is read once: into a private file to read back.
                copy = _private_copy(fh)
                fh = stack.enter_context(copy.open("rb"))
            identity = _Identity.of(os.fstat(fh.fileno()))
            found = _Checker(tmp / "chunk.jsonl", schema).run(fh)
            after = _Identity.of(os.fstat(fh.fileno()))
        except OSError as exc:
            if copy is not None:
                copy.unlink(missing_ok=True)
            raise BadInput([f"{path}: cannot read ({exc.strerror or exc})"]) from exc
    samples = SampleFile(
        path,
        identity,
        ids=found.ids,
        tasks=found.tasks,
        entries=found.entries,
        named_by=bytes(found.named_by),
        lines=found.lines,
        offsets=found.offsets,
        digests=bytes(found.digests),
        index=found.index,
        copy=_PrivateCopy(copy) if copy is not None else None,
    )
    if after != identity or found.size != identity.size:
        raise BadInput([f"{path}: changed while it was being checked; run again"])
    if found.empty:
        raise BadInput([f"{path}: file is empty"])
    problems = [f"{path}:{n}: {m}" for n, m in sorted(found.problems)]
    if problems and not skip_bad_lines:
        raise BadInput(problems)
    return samples, problems


class _PrivateCopy:
    """A private file removed when the last object that holds this one is gone."""

    def __init__(self, path: Path) -> None:
        self.path = path
        weakref.finalize(self, path.unlink, missing_ok=True)


def _private_copy(fh: IO[bytes]) -> Path:
    """Copy a stream that cannot be read twice into a private file; return its path."""
    fd, name = tempfile.mkstemp(prefix="gradebox-samples-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(fh, out)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


class _Checker:
    """Checks a samples file chunk by chunk; collects what a :class:`SampleFile` keeps."""

    def __init__(self, chunk: Path, schema: dict[str, Any]) -> None:
        self.chunk, self.schema = chunk, schema
        self.ids: list[str] = []
        self.tasks: list[str] = []
        self.entries: dict[int, str] = {}
        self.named_by = bytearray()
        self.lines = array("I")
        self.offsets = array("Q")
        self.digests = bytearray()
        self.problems: list[tuple[int, str]] = []
        self.empty = True
        self.size = 0
        self.index: dict[str, int] = {}
        """Position of each kept id (to find a sample, and its duplicates)."""
        self._task_names: dict[str, str] = {}  # one str object per task name

    def run(self, fh: IO[bytes]) -> _Checker:
        """Check every line of ``fh``."""
        # Entry j of a chunk: (line number, offset, digest) of the chunk file's line j+1.
        meta: list[tuple[int, int, bytes]] = []
        parts: list[bytes] = []
        held = 0
        for number, raw in enumerate(iter(fh.readline, b""), start=1):
            offset = self.size
            self.size += len(raw)
            if not meta and number > 1:
                # A blank first line: a BOM that starts a later chunk stays a BOM in a line
                # (the checker strips one only at the start of its file, as for the file).
                meta.append((0, 0, b""))
                parts.append(b"\n")
            body = raw.removeprefix(_BOM) if offset == 0 else raw  # a read starts after it
            meta.append((number, offset + len(raw) - len(body), _digest(body)))
            parts.append(raw if raw.endswith(b"\n") else raw + b"\n")
            held += len(raw)
            if len(meta) >= CHUNK_LINES or held >= CHUNK_BYTES:
                self._check(parts, meta)
                meta, parts, held = [], [], 0
        if meta:
            self._check(parts, meta)
        return self

    def _check(self, parts: list[bytes], meta: list[tuple[int, int, bytes]]) -> None:
        self.chunk.write_bytes(b"".join(parts))
        parts.clear()
        try:
            items, found = read_jsonl(self.chunk, self.schema, _sample)
        except InputError as exc:
            if exc.problems != [f"{self.chunk}: file is empty"]:
                raise BadInput(exc.problems) from exc
            return  # only blank lines here
        self.empty = False
        self.problems += [(meta[j - 1][0], message) for j, message in found]
        for j, sid, task, fn, field in items:
            number, offset, digest = meta[j - 1]
            first = self.index.get(sid)
            if first is not None:
                used = f"id: sample id {sid!r} is already used on line {self.lines[first]}"
                self.problems.append((number, used))
                continue
            if fn is not None:
                self.entries[len(self.ids)] = self._task_names.setdefault(fn, fn)
            self.index[sid] = len(self.ids)
            self.ids.append(sid)
            self.tasks.append(self._task_names.setdefault(task, task))
            self.named_by.append(field)
            self.lines.append(number)
            self.offsets.append(offset)
            self.digests += digest


_FIELDS = ("task", "fn", "id")
"""The fields a samples line may name its task with, in the order they are looked at."""


def _sample(
    obj: dict[str, Any], line: int
) -> tuple[tuple[int, str, str, str | None, int] | None, list[str]]:
    if ("reply" in obj) == ("code" in obj):
        return None, ["a sample needs exactly one of 'reply' (a model answer) or 'code'"]
    task = obj.get("task")
    if task is not None and any(ord(c) < 32 or ord(c) == 127 for c in task):
        return None, [f"task: {task[:100]!r} has a control character"]
    field = next(i for i, name in enumerate(_FIELDS) if name in obj)
    entry = obj.get("fn") if task is not None else None
    return (line, obj["id"], task_of(obj), entry, field), []


def load_inputs(
    hidden: Path, samples: Path, public: Path | None = None, *, skip_bad_lines: bool = False
) -> RunInputs:
    """Load and cross-check all inputs of a grading run.

    Every file is read even when an earlier one is bad, so one run shows all problems.
    ``skip_bad_lines`` applies to samples and public tasks only, never to hidden cases.
    Samples are checked now and read from disk later (:class:`SampleFile`).

    Raises:
        BadInput: Every problem found, as ``file:line: what is wrong``.
    """
    fatal: list[str] = []
    problems: list[str] = []

    def attempt(load: Callable[[], tuple[_T, list[str]]], empty: _T) -> _T:
        try:
            value, found = load()
        except (InputError, BadInput) as exc:
            fatal.extend(exc.problems)
            return empty
        problems.extend(found)
        return value

    cases: list[HiddenCase] = attempt(lambda: load_hidden(hidden, skip_bad_lines=False), [])
    pub: dict[str, PublicTask] = {}
    if public is not None:
        pub = attempt(lambda: load_public(public, skip_bad_lines=skip_bad_lines), {})
    sample_file: SampleFile | None = attempt(
        lambda: open_samples(samples, skip_bad_lines=skip_bad_lines), None
    )
    if public is not None:
        fatal += _static_problems(public, pub)
    tasks, mixed = group_tasks(cases, pub, hidden, public)
    fatal += mixed
    if fatal or sample_file is None:
        raise BadInput(fatal)
    orphans = [
        f"{samples}:{sample_file.line(k)}: {_orphan(sample_file, k, tasks, hidden)}"
        for k, task in enumerate(sample_file.tasks)
        if task not in tasks or sample_file.entry(k) not in (None, tasks[task].fn)
    ]
    if orphans and not skip_bad_lines:
        raise BadInput(orphans)
    kept = sample_file
    if orphans:
        names = sample_file.tasks
        kept = sample_file.select(
            lambda k: names[k] in tasks and sample_file.entry(k) in (None, tasks[names[k]].fn)
        )
    if not kept:
        raise BadInput([*problems, *orphans, f"{samples}: no sample can be graded"])
    return RunInputs(tasks=tasks, samples=kept, problems=problems + orphans)


def group_tasks(
    cases: Sequence[HiddenCase],
    public: dict[str, PublicTask],
    hidden_path: Path | str = "hidden.jsonl",
    public_path: Path | str | None = "public.jsonl",
) -> tuple[dict[str, Task], list[str]]:
    """The tasks of a run: hidden cases grouped by task id, each with its public task.

    Every case of one task, and its public line, must name one entry point (``fn``).

    Returns:
        The tasks by id (in file order), and every problem as ``file:line: what is wrong``.
    """
    by_id: dict[str, list[HiddenCase]] = {}
    problems: list[str] = []
    for c in cases:
        same = by_id.setdefault(c.task, [c])
        if same[0] is not c:
            same.append(c)
        if c.fn != same[0].fn:
            problems.append(
                f"{hidden_path}:{c.line}: fn: task {c.task!r} calls {same[0].fn!r} on line "
                f"{same[0].line}; every case of a task has one entry point"
            )
    for pid, p in public.items():
        first = by_id.get(pid, [None])[0]
        if first is not None and first.fn != p.fn:
            problems.append(
                f"{public_path}:{p.line}: fn: task {pid!r} calls {first.fn!r} in its hidden "
                f"cases ({hidden_path}:{first.line}), not {p.fn!r}"
            )
    tasks = {tid: Task(tid, tuple(cs), public.get(tid), cs[0].fn) for tid, cs in by_id.items()}
    return tasks, problems


def _orphan(samples: SampleFile, k: int, tasks: dict[str, Task], hidden: Path) -> str:
    """Why sample ``k``'s task cannot be graded, with what it may have meant."""
    task, entry = samples.tasks[k], samples.entry(k)
    known = tasks.get(task)
    if known is not None:
        return f"fn: {entry!r} is not the entry point of task {task!r} (it calls {known.fn!r})"
    sharing = sorted(t.id for t in tasks.values() if t.fn == task and t.id != task)
    hint = ""
    if sharing:
        listed = ", ".join(repr(t) for t in sharing[:3]) + (", ..." if len(sharing) > 3 else "")
        hint = f" ({task!r} is the entry point of task {listed}: name it with 'task')"
    field = samples.named_by(k)
    if field == "id":
        hint += " (the line names no 'task' or 'fn', so its id was taken as its task)"
    return f"{field}: {task!r} has no hidden cases in {hidden}{hint}"


def _static_problems(path: Path, tasks: dict[str, PublicTask]) -> list[str]:
    """Each task's unusable ``static`` settings, as ``file:line: static.<field>: ...``."""
    out = []
    for task in tasks.values():
        if task.static:
            # Loaded here: it reads lockfiles (``packaging``), which a run whose tasks
            # set no static settings never needs (~20% of a tests-only start-up).
            from gradebox.pipeline.task_static import task_static  # noqa: PLC0415

            try:
                task_static(json.loads(task.static))
            except ValueError as exc:
                out.append(f"{path}:{task.line}: static.{exc}")
    return out
