"""What a sample's grade depended on, part by part, for resuming a run directory.

A sample's fingerprint is a mapping ``{part: sha256}``; its input hash (the
row's ``input_sha256``) is the hash of that mapping. Parts:

==================  =====================================================  ==================
part                covers                                                 affects
==================  =====================================================  ==================
``sample``          the sample's own line (canonical JSON)                 that sample
``hidden``          the hidden cases of its task, in file order            samples of the task
``public``          the public task of its task                            samples of the task
``lockfile``        the lockfile's bytes (static layers on)                every sample
``static_policy``   the static policy file's bytes (static layers on)      every sample
``reference``       the reference file's bytes                             every sample
``properties``      the properties file's bytes                            every sample
``rubric``          digest of the rubric and prompt templates its task     samples of the task
                    uses (judge on)
``judge``           the effective endpoint and model (judge on)            every sample
``gradebox`` ...    versions of gradebox, ruff, mypy, bandit (the last     every sample
                    three with the static layers on) and of the sandbox
                    interpreter (``sandbox_python``)
``limits``          the resource limits                                    every sample
``options``         denylist, isolation, explain, seed, layers on/off      every sample
==================  =====================================================  ==================

Lines are compared as canonical JSON, so reformatting a file regrades nothing.
Tasks are found by id (``task``, else ``fn``: files from before task ids give
the same digests as they always did).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Fingerprints", "UsedJudge", "changed_parts", "combine", "describe", "fingerprints"]


class Fingerprints(Mapping[str, dict[str, str]]):
    """``{sample_id: {part: sha256}}``, held compactly: each mapping is built when asked for.

    A run of 100,000 samples held a dict of about twelve digests per sample
    (~1.1 KB each, 108 MB in all). Here a sample keeps its task and its own
    32-byte digest; the parts of its task (``hidden``, ``public``, ``rubric``)
    are kept once per task and the run-wide ones once (~0.25 KB a sample). The
    mappings are the same, in the same part order.
    """

    def __init__(self, shared: Mapping[str, str]) -> None:
        """Parts every sample has (files, judge, versions, limits, options)."""
        self._shared = dict(shared)
        self._tasks: dict[str, tuple[tuple[str, str], ...]] = {}
        self._samples: dict[str, tuple[str, bytes]] = {}

    def add_task(self, task: str, hidden: str, public: str, rubric: str | None) -> None:
        """The per-task parts of the samples of ``task`` (an id).

        ``rubric`` is ``None`` with the judge off.
        """
        head = (("hidden", hidden), ("public", public))
        self._tasks[task] = head if rubric is None else (*head, ("rubric", rubric))

    def has_task(self, task: str) -> bool:
        """Whether the parts of ``task`` were added."""
        return task in self._tasks

    def add_sample(self, sample_id: str, task: str, digest: bytes) -> None:
        """A sample of a task added before, with the sha256 of its line."""
        self._samples[sample_id] = (task, digest)

    def __getitem__(self, sample_id: str) -> dict[str, str]:
        """The parts of one sample's fingerprint."""
        tid, digest = self._samples[sample_id]
        task = self._tasks[tid]
        parts = {"sample": digest.hex(), **dict(task[:2]), **self._shared}
        parts.update(task[2:])  # the rubric part comes last, as it always did
        return parts

    def __iter__(self) -> Iterator[str]:
        return iter(self._samples)

    def __len__(self) -> int:
        return len(self._samples)


@dataclasses.dataclass(frozen=True, slots=True)
class UsedJudge:
    """The judge as the run resolved it: endpoint, model and rubric digests."""

    base_url: str | None
    """The endpoint (``None`` when none is configured: every row says skipped)."""
    model: str | None
    """The model (from ``--judge-model`` or the environment)."""
    rubrics: Mapping[str, str]
    """Digest of the rubric and its prompt templates, per task id."""


def fingerprints(
    *,
    hidden: Path,
    samples: Path,
    public: Path | None,
    files: Mapping[str, Path | None],
    judge: UsedJudge | None,
    tools: Mapping[str, str | None],
    limits: Any,
    options: Mapping[str, Any],
) -> Fingerprints:
    """Every sample's fingerprint, by sample id.

    Args:
        hidden: hidden.jsonl.
        samples: samples.jsonl.
        public: public.jsonl, if any.
        files: Other input files that change every grade, by part name
            (``lockfile``, ``static_policy``, ``reference``, ``properties``).
        judge: The judge used, ``None`` when it is off.
        tools: Versions by part name (``gradebox``, ``ruff``, ..., ``sandbox_python``).
        limits: The resource limits (a dataclass).
        options: Other options that change a grade.

    Returns:
        ``{sample_id: {part: sha256}}`` (lines that do not parse are left out).
    """
    cases: dict[str, list[str]] = {}
    for obj in _objects(hidden):
        cases.setdefault(str(obj.get("task") or obj.get("fn")), []).append(_canonical(obj))
    tasks = (
        {str(o.get("task") or o.get("fn")): _canonical(o) for o in _objects(public)}
        if public
        else {}
    )
    shared = {name: _file_digest(path) for name, path in files.items()}
    if judge is not None:
        shared["judge"] = _sha256(_canonical([judge.base_url, judge.model]))
    shared |= {name: _sha256(str(version)) for name, version in tools.items()}
    shared["limits"] = _sha256(_canonical(dataclasses.asdict(limits)))
    shared["options"] = _sha256(_canonical(dict(options)))
    out = Fingerprints(shared)
    for obj in _objects(samples):
        sid = obj.get("id")
        tid = obj.get("task") or obj.get("fn") or sid  # as gradebox.model.task_of
        if not isinstance(tid, str) or not isinstance(sid, str):
            continue
        if not out.has_task(tid):  # each task's digests once, not once per sample
            rubric = None if judge is None else _sha256(judge.rubrics.get(tid, "none"))
            hidden_digest = _sha256("\n".join(cases.get(tid, [])))
            out.add_task(tid, hidden_digest, _sha256(tasks.get(tid, "null")), rubric)
        line = _canonical(obj).encode("utf-8", "surrogatepass")
        out.add_sample(sid, tid, hashlib.sha256(line).digest())
    return out


def combine(parts: Mapping[str, str]) -> str:
    """The input hash of one sample: the hash of its parts."""
    return _sha256("gradebox-input/2\n" + _canonical(dict(parts)))


def changed_parts(old: Mapping[str, str] | None, new: Mapping[str, str]) -> list[str]:
    """The parts that differ, in :func:`fingerprints` order (``["unknown"]`` without ``old``)."""
    if old is None:
        return ["unknown"]
    names = [*new, *(k for k in old if k not in new)]
    return [k for k in names if old.get(k) != new.get(k)] or ["unknown"]


def describe(why: Sequence[str]) -> str:
    """``lockfile changed``, ``sample and hidden changed``..."""
    return " and ".join(why) + " changed"


def _file_digest(path: Path | None) -> str:
    if path is None:
        return _sha256("absent")
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
