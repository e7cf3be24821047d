"""Rubrics as data: ``PUT/GET /v1/rubrics/{name}``, stored in SQLite, read by the judge.

A stored rubric is the text of a rubric file (TOML, the shape of
``rubrics/*.toml``) and goes through the very loader the files do
(:func:`rubrics.load`: the JSON schema, then the semantic checks: scale,
unique criterion ids across includes, includes that exist and share the
scale, prompt templates). The loader reads files, so a rubric is checked and
used as a *snapshot*: the rubric and everything it includes, stored or
built-in, written to a directory named by the digest of their texts under
the server's scratch root. A snapshot never changes; replacing a rubric makes
a new one, so the judge (which prepares each rubric path once) picks the new
text up on the next judgement, and its reply cache, keyed by the rubric's
digest, never serves a reply given under the old text.

A run is judged with the rubrics its tasks named when it was submitted, as
they were then (:meth:`RubricFiles.pin`): the snapshot's texts are stored
with the run (``rubric_snapshots``, kept while an unfinished run needs them),
so replacing a rubric, or a rubric it includes, mid-run changes the judging
of later runs and synchronous grades only, across a restart too.

Names are ``[a-z][a-z0-9_-]{0,63}``; the built-in names (``default``,
``intent``, ``quality``) cannot be replaced. Prompt templates are the built-in
ones: a snapshot directory has no ``prompts/`` of its own, so no client text
becomes a template. Problems name ``<name>.toml`` (never a server path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

import rubrics
from gradebox.service.problems import ApiError, Problem
from gradebox.service.store import RubricPin, Store, iso_time

__all__ = [
    "MAX_RUBRIC_BYTES",
    "RUBRIC_NAME",
    "RubricFiles",
    "StoredRubric",
    "loader_problem",
    "rubric_name_ok",
]

RUBRIC_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
"""What a stored rubric may be called (also what a task's ``public.rubric`` may say)."""
MAX_RUBRIC_BYTES = 256 * 1024
"""Largest rubric text accepted (413 above)."""
_DIRS = re.compile(r"(?:/[^\s/'\"]+)+/")
"""The directories of an absolute path inside a loader message (kept: the file name)."""
_MAX_FILES = 32
"""Most rubrics one snapshot may hold (a rubric and its includes, transitively)."""


@dataclass(frozen=True, slots=True)
class StoredRubric:
    """A rubric as stored."""

    name: str
    """Its name (also its ``name`` key)."""
    text: str
    """The TOML text, as sent."""
    revision: int
    """Increases each time it is replaced."""
    updated: float
    """When it was last written (Unix time)."""


def rubric_name_ok(name: str) -> bool:
    """Whether ``name`` can name a rubric (stored or built-in)."""
    return RUBRIC_NAME.fullmatch(name) is not None


class RubricFiles:
    """Stored rubrics, checked and turned into files the :mod:`rubrics` loader reads."""

    def __init__(self, store: Store) -> None:
        """Keep snapshots in a scratch directory of this process (removed by :meth:`close`)."""
        self._store = store
        self._root = Path(tempfile.mkdtemp(prefix="gradebox-rubrics-"))
        self._lock = threading.Lock()
        self._paths: dict[str, tuple[int, str]] = {}  # name -> (epoch, snapshot path)
        self._epoch = 0

    def close(self) -> None:
        """Remove the snapshots."""
        shutil.rmtree(self._root, ignore_errors=True)

    # ------------------------------------------------------------------ store

    def get(self, name: str) -> StoredRubric | None:
        """A stored rubric, or ``None``."""
        row = self._store.rubric(name)
        return None if row is None else StoredRubric(name, *row)

    def known(self, name: str) -> bool:
        """Whether ``name`` is a built-in or a stored rubric."""
        return name in rubrics.builtin_names() or self.get(name) is not None

    def put(self, name: str, raw: bytes) -> tuple[StoredRubric, rubrics.Rubric]:
        """Check a rubric's text as a file would be checked, then store it.

        Raises:
            ApiError: 422 with every problem (``<name>.toml: criterion: what``), 409
                for a built-in name, 413 for a text over :data:`MAX_RUBRIC_BYTES`.
        """
        text = _text(name, raw)
        loaded = self._check(name, text)
        with self._lock:  # the read-then-write of the revision is one writer's
            old = self.get(name)
            revision = 1 if old is None else old.revision + 1
            self._store.put_rubric(name, text, revision)
            self._epoch += 1  # includes may have changed: every snapshot is made again
            self._paths.clear()
        stored = self.get(name)
        assert stored is not None  # noqa: S101 - it was just written
        return stored, loaded

    def describe(self, name: str) -> dict[str, object] | None:
        """What ``GET /v1/rubrics/{name}`` shows: the text and what it loads as."""
        stored = self.get(name)
        if stored is None and name not in rubrics.builtin_names():
            return None
        loaded = rubrics.load(self.path(name))
        return {
            "name": name,
            "builtin": stored is None,
            "revision": 0 if stored is None else stored.revision,
            "updated": None if stored is None else iso_time(stored.updated),
            "title": loaded.title,
            "version": loaded.version,
            "digest": loaded.digest,
            "criteria": [c.id for c in loaded.criteria],
            "scale": {"min": loaded.scale.min, "max": loaded.scale.max},
            "toml": stored.text if stored is not None else _builtin_text(name),
        }

    # -------------------------------------------------------------- snapshots

    def path(self, name: str) -> str:
        """The file the judge loads for rubric ``name`` (built-in: the name itself)."""
        if self.get(name) is None:
            return name
        with self._lock:
            epoch = self._epoch
            cached = self._paths.get(name)
            if cached is not None and cached[0] == epoch:
                return cached[1]
        found = str(self._snapshot(name, {}))
        with self._lock:
            if self._epoch == epoch:
                self._paths[name] = (epoch, found)
        return found

    def pin(self, name: str) -> RubricPin:
        """Rubric ``name`` as it is now, with its includes: what a run is judged with.

        Takes no lock of this class (the store calls it inside its write transaction).
        """
        stored = self.get(name)
        if stored is None:  # built-in (or unknown: the judge says so when it loads it)
            return RubricPin(name, 0, None)
        texts = self._closure(name, {})
        return RubricPin(name, stored.revision, _digest(texts), texts)

    def pinned(self, pin: RubricPin) -> str:
        """The file the judge loads for a pinned rubric (built-in: its name).

        Raises:
            LookupError: The snapshot's texts are no longer stored (no unfinished run
                needs them).
        """
        if pin.digest is None:
            return pin.name
        where = self._root / pin.digest[:32] / f"{pin.name}.toml"
        if where.is_file():
            return str(where)
        texts = pin.texts or self._store.rubric_texts(pin.digest)
        if texts is None or _digest(texts) != pin.digest:
            raise LookupError(f"rubric snapshot {pin.digest[:12]} is not stored")
        return str(self._write(pin.name, texts))

    def _check(self, name: str, text: str) -> rubrics.Rubric:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise _invalid([Problem("/", f"{name}.toml: invalid TOML: {exc}"[:300])]) from exc
        except RecursionError as exc:  # the parser recurses into nested arrays and tables
            raise _invalid([Problem("/", f"{name}.toml: nested too deeply")]) from exc
        if data.get("name") != name:
            raise _invalid([Problem("/name", "must equal the rubric name in the path")])
        try:
            return rubrics.load(self._snapshot(name, {name: text}))
        except rubrics.RubricError as exc:
            raise _invalid([loader_problem(p) for p in exc.problems]) from exc

    def _snapshot(self, name: str, overrides: dict[str, str]) -> Path:
        """Write ``name`` and its includes (``overrides`` first, then stored, then built-in)."""
        return self._write(name, self._closure(name, overrides))

    def _write(self, name: str, texts: dict[str, str]) -> Path:
        """The snapshot of ``texts`` (written once, in a directory named by their digest)."""
        where = self._root / _digest(texts)[:32]
        if not where.is_dir():
            scratch = Path(tempfile.mkdtemp(dir=self._root, prefix=".new-"))
            for item, text in texts.items():
                (scratch / f"{item}.toml").write_text(text, encoding="utf-8")
            try:
                os.rename(scratch, where)  # atomic: a snapshot is whole or absent
            except OSError:  # another thread made the same one first
                shutil.rmtree(scratch, ignore_errors=True)
        return where / f"{name}.toml"

    def _closure(self, name: str, overrides: dict[str, str]) -> dict[str, str]:
        texts: dict[str, str] = {}
        todo = [name]
        while todo and len(texts) < _MAX_FILES:
            item = todo.pop()
            if item in texts or not rubric_name_ok(item):
                continue  # a bad include name: the loader reports it missing
            text = overrides.get(item)
            if text is None:
                stored = self.get(item)
                text = stored.text if stored is not None else _builtin_text(item)
            if text is None:
                continue
            texts[item] = text
            todo.extend(_includes(text))
        return texts


def _text(name: str, raw: bytes) -> str:
    if not rubric_name_ok(name):
        problem = Problem("name", f"must match {RUBRIC_NAME.pattern}", "path")
        raise ApiError(422, "bad rubric name", [problem])
    if name in rubrics.builtin_names():
        raise ApiError(409, "a built-in rubric has this name; choose another")
    if len(raw) > MAX_RUBRIC_BYTES:
        raise ApiError(413, f"rubric larger than {MAX_RUBRIC_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid([Problem("/", "the body must be UTF-8 TOML text")]) from exc


def _digest(texts: dict[str, str]) -> str:
    blob = json.dumps(sorted(texts.items()), ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _includes(text: str) -> list[str]:
    try:
        found = tomllib.loads(text).get("include", [])
    except (tomllib.TOMLDecodeError, RecursionError):
        return []
    return [x for x in found if isinstance(x, str)] if isinstance(found, list) else []


def _builtin_text(name: str) -> str | None:
    if name not in rubrics.builtin_names():
        return None
    return (rubrics.BUILTIN_DIR / f"{name}.toml").read_text(encoding="utf-8")


def loader_problem(p: rubrics.Problem) -> Problem:
    """A loader problem with the file's name only (snapshots live under a server path)."""
    what = _DIRS.sub("", p.what)
    return Problem("/", f"{Path(p.file).name}: {p.criterion}: {what}"[:300])


def _invalid(problems: list[Problem]) -> ApiError:
    return ApiError(422, "invalid rubric", problems)
