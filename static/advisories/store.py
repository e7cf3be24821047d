"""An advisory database read offline: OSV files indexed once into SQLite, looked up per run.

**Sources.** A directory of OSV records (``*.json``, or ``*.yaml`` / ``*.yml``
as the PyPA advisory database keeps them, at any depth; symbolic links are not
followed) or a zip of them (osv.dev's per-ecosystem ``all.zip``). Each file is
bounded (:data:`MAX_FILE_BYTES`, and :data:`MAX_FILES` files), JSON is read with
``json`` and YAML with PyYAML's ``BaseLoader`` (a safe loader that constructs
only strings, lists and mappings, and resolves no implicit types, so
``2.10`` stays ``"2.10"``). A file that does not decode or is not a usable
record (:class:`~static.advisories.records.BadRecord`) is skipped, counted and
named with what is wrong (:attr:`Snapshot.problems`); the rest is indexed.

**The index.** ``<cache_dir>/<hash of the source's path>.sqlite``, built into a
temporary file and moved into place, so readers never see half an index and two
processes building it at once both end with a whole one. It records the
source's *stamp* (every file's relative path, size and modification time, or
the zip's) and is rebuilt when the stamp differs; its *digest* is the SHA-256
of the records' contents (path and bytes), the snapshot's identity in a run's
manifest. The snapshot's *date* is the newest ``modified`` among its records.

**Lookups** (:meth:`AdvisoryStore.vulnerabilities`): the advisories naming a
distribution are read from the index once per store and kept; withdrawn
records were never indexed; records that are aliases of each other (a
``PYSEC`` record and its ``GHSA`` twin in osv.dev's zip) are merged into one
:class:`Vulnerability` with every id.

This module uses the standard library, ``packaging`` and PyYAML.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from static.advisories.matching import Compiled, check_compiled, compile_entry, listed, public
from static.advisories.records import Advisory, Affected, BadRecord, Rating, parse_record

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "AdvisoryError",
    "AdvisoryStore",
    "Snapshot",
    "Vulnerability",
    "read_source",
]

MAX_FILE_BYTES = 4 * 1024 * 1024
"""A record file larger than this is skipped (real ones are a few KB)."""
MAX_FILES = 1_000_000
"""A source with more record files than this is refused."""
MAX_PROBLEMS = 50
"""Problems kept by name (all are counted)."""

_SCHEMA = 2
_SUFFIXES = (".json", ".yaml", ".yml")
_RANK: dict[Rating, int] = {
    "unknown": 0, "none": 1, "low": 2, "medium": 3, "high": 4, "critical": 5,
}  # fmt: skip
_PREFERRED = ("PYSEC-", "GHSA-")


_Hit = tuple[Advisory, tuple[str, ...], str | None]
_Entries = tuple[tuple[Advisory, tuple[Compiled, ...]], ...]


class AdvisoryError(RuntimeError):
    """The advisory source cannot be read or indexed at all (missing, not a zip, too large).

    Raised by :meth:`AdvisoryStore.open` and :func:`read_source`; the CLI reports
    it as a usage error (exit 2). A bad *record* is never this: it is skipped and counted.
    """


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Which advisory data a run used, and how well it read."""

    source: str
    """The directory or zip it was read from."""
    digest: str
    """``sha256:<hex>`` of every record file's path and bytes."""
    date: str
    """The newest ``modified`` among the records (how old the snapshot is)."""
    records: int
    """Records indexed (withdrawn ones not included)."""
    withdrawn: int
    """Withdrawn records left out."""
    skipped: int
    """Files skipped as unreadable or not OSV records."""
    problems: tuple[str, ...]
    """``file: what is wrong``, for the first :data:`MAX_PROBLEMS` skipped files."""


@dataclass(frozen=True, slots=True)
class Vulnerability:
    """One known vulnerability of one version of a distribution (aliases merged)."""

    ids: tuple[str, ...]
    """The advisory's id first (a ``PYSEC`` one when there is one), then every other id and
    alias (``CVE-...``, ``GHSA-...``), sorted."""
    summary: str
    """One line about it."""
    rating: Rating
    """The highest severity any of its records gives; ``unknown`` when none rates it."""
    score: float | None
    """The CVSS base score behind ``rating``, when it came from a vector."""
    ranges: tuple[str, ...]
    """The affected ranges that hold the version (empty when only listed by version)."""
    fixed: str | None
    """The lowest fixed version above it; ``None`` when no fix is known."""


def read_source(source: Path) -> Iterator[tuple[str, bytes | str]]:
    """Every record file of a source: ``(relative name, bytes)``, or ``(name, problem)``.

    Raises:
        AdvisoryError: The source is missing, not a directory or a zip, or too large.
    """
    if source.is_dir():
        yield from _directory(source)
    elif source.is_file():
        yield from _zip(source)
    else:
        raise AdvisoryError(f"{source}: no such advisory directory or zip")


def _directory(root: Path) -> Iterator[tuple[str, bytes | str]]:
    count = 0
    for folder, dirs, files in os.walk(root):  # links to folders are not followed
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            if not name.endswith(_SUFFIXES) or path.is_symlink():
                continue
            count += 1
            if count > MAX_FILES:
                raise AdvisoryError(f"{root}: more than {MAX_FILES} record files")
            rel = path.relative_to(root).as_posix()
            try:
                with path.open("rb") as fh:
                    data = fh.read(MAX_FILE_BYTES + 1)
            except OSError as exc:
                yield rel, f"cannot read: {exc.strerror}"
                continue
            yield (
                rel,
                data if len(data) <= MAX_FILE_BYTES else f"larger than {MAX_FILE_BYTES} bytes",
            )


def _zip(path: Path) -> Iterator[tuple[str, bytes | str]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AdvisoryError(f"{path}: not a directory or a zip of OSV records: {exc}") from exc
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir() and i.filename.endswith(_SUFFIXES)]
        if len(infos) > MAX_FILES:
            raise AdvisoryError(f"{path}: more than {MAX_FILES} record files")
        for info in sorted(infos, key=lambda i: i.filename):
            if info.file_size > MAX_FILE_BYTES:
                yield info.filename, f"larger than {MAX_FILE_BYTES} bytes"
                continue
            try:
                with archive.open(info) as fh:  # the header's size is not trusted
                    data = fh.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, OSError, NotImplementedError, EOFError) as exc:
                yield info.filename, f"cannot read from the zip: {exc}"
                continue
            yield (
                info.filename,
                data if len(data) <= MAX_FILE_BYTES else "larger than its header says",
            )


def decode(name: str, data: bytes) -> Advisory:
    """One record file's advisory.

    Raises:
        BadRecord: It does not decode or is not an OSV record.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"not UTF-8 (byte {exc.start})") from exc
    try:
        if name.endswith(".json"):
            doc = json.loads(text)
        else:
            import yaml  # noqa: PLC0415 - only YAML sources need it

            loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
            doc = yaml.load(text, Loader=loader)  # noqa: S506 - BaseLoader builds str/list/dict only
    except RecursionError as exc:
        raise BadRecord("nested too deeply") from exc
    except ValueError as exc:  # json.JSONDecodeError
        raise BadRecord(f"not JSON: {exc}") from exc
    except Exception as exc:  # yaml.YAMLError, without importing yaml for JSON sources
        raise BadRecord(
            f"not YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc
    return parse_record(doc)


class AdvisoryStore:
    """An indexed advisory snapshot; thread-safe lookups. Close it (or use ``with``)."""

    def __init__(self, index: Path, snapshot: Snapshot, *, owned: Path | None = None) -> None:
        """Use an index that :meth:`open` built; prefer :meth:`open`.

        ``owned`` is a directory of this store's own, removed by :meth:`close`.
        """
        self._owned = owned
        self.snapshot = snapshot
        """What the index holds (source, digest, date, counts)."""
        self._db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._by_package: dict[str, tuple[Advisory, ...]] = {}
        self._listed: dict[str, _Entries] = {}
        self._found: dict[tuple[str, str], list[Vulnerability]] = {}

    @classmethod
    def open(cls, source: Path, cache_dir: Path, *, private: bool = False) -> AdvisoryStore:
        """Open the index of ``source``, building it first when missing or stale.

        Args:
            source: A directory or zip of OSV records.
            cache_dir: Where indexes are kept (created if missing).
            private: ``cache_dir`` is this store's alone: :meth:`close` removes it
                (and so does a failure to open).

        Raises:
            AdvisoryError: The source cannot be read, or the index cannot be written.
        """
        try:
            source = source.resolve()
            stamp = _stamp(source)
            key = hashlib.sha256(str(source).encode("utf-8", "surrogatepass")).hexdigest()[:24]
            index = cache_dir / f"advisories-{key}.sqlite"
            snapshot = _read_meta(index, stamp)
            if snapshot is None:
                snapshot = _build(source, stamp, index)
            return cls(index, snapshot, owned=cache_dir if private else None)
        except BaseException:
            if private:
                shutil.rmtree(cache_dir, ignore_errors=True)
            raise

    def __enter__(self) -> AdvisoryStore:
        """Return the store itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        self.close()

    def close(self) -> None:
        """Close the index (and remove a private cache); safe to call twice."""
        self._db.close()
        if self._owned is not None:
            shutil.rmtree(self._owned, ignore_errors=True)

    def packages(self) -> list[str]:
        """Every distribution some (not withdrawn) advisory names, sorted."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT package FROM names ORDER BY package")
            return [row[0] for row in rows.fetchall()]

    def advisories(self, package: str) -> tuple[Advisory, ...]:
        """Every (not withdrawn) advisory naming a distribution (canonical name)."""
        with self._lock:
            found = self._by_package.get(package)
            if found is None:
                rows = self._db.execute(
                    "SELECT r.data FROM names n JOIN records r ON r.id = n.id"
                    " WHERE n.package = ? ORDER BY r.id",
                    (package,),
                ).fetchall()
                found = tuple(Advisory.from_json(json.loads(row[0])) for row in rows)
                self._by_package[package] = found
            return found

    def vulnerabilities(self, package: str, version: str) -> list[Vulnerability]:
        """The known vulnerabilities of ``package`` at ``version``, aliases merged, by id.

        Args:
            package: The distribution's canonical name.
            version: The version in use (PEP 440; anything else matches explicit versions only).
        """
        found = self._found.get((package, version))
        if found is not None:
            return list(found)
        hits: list[_Hit] = []
        for advisory, entries in self._entries(package):
            for entry in entries:
                verdict = check_compiled(entry, version)
                if verdict.affected:
                    hits.append((advisory, verdict.ranges, verdict.fixed))
        found = sorted((_merged(group) for group in _groups(hits)), key=lambda v: v.ids)
        with self._lock:
            self._found[(package, version)] = found
        return list(found)

    def _entries(self, package: str) -> _Entries:
        """Each advisory of ``package`` with its entries for it and their listed versions."""
        advisories = self.advisories(package)
        with self._lock:
            kept = self._listed.get(package)
            if kept is None:
                # Listed versions were normalised when indexed (:func:`_normalised`).
                kept = self._listed[package] = tuple(
                    (a, tuple(_compiled(e) for e in a.affected if e.package == package))
                    for a in advisories
                )
            return kept


def _compiled(entry: Affected) -> Compiled:
    """An indexed entry compiled; its listed versions were normalised when indexed."""
    ranges_only = compile_entry(dataclasses.replace(entry, versions=()))
    return dataclasses.replace(ranges_only, versions=frozenset(entry.versions))


def _groups(hits: Sequence[_Hit]) -> list[list[_Hit]]:
    """Hits whose ids and aliases connect, together (union-find over ids)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for advisory, _, _ in hits:
        for alias in advisory.aliases:
            parent[root(alias)] = root(advisory.id)
    groups: dict[str, list[_Hit]] = {}
    for hit in hits:
        groups.setdefault(root(hit[0].id), []).append(hit)
    return list(groups.values())


def _merged(group: list[_Hit]) -> Vulnerability:
    own = sorted({a.id for a, _, _ in group}, key=_preference)
    others = sorted({x for a, _, _ in group for x in (a.id, *a.aliases)} - {own[0]})
    rated = max((a for a, _, _ in group), key=lambda a: _RANK[a.rating])
    fixes = [f for _, _, f in group if f is not None]
    fixed = min(fixes, key=lambda f: public(f) or f) if fixes else None
    return Vulnerability(
        ids=(own[0], *others),
        summary=next((a.summary for a, _, _ in group if a.summary), ""),
        rating=rated.rating,
        score=rated.score,
        ranges=tuple(dict.fromkeys(r for _, ranges, _ in group for r in ranges)),
        fixed=fixed,
    )


def _preference(ident: str) -> tuple[int, str]:
    rank = next((k for k, p in enumerate(_PREFERRED) if ident.startswith(p)), len(_PREFERRED))
    return rank, ident


def _stamp(source: Path) -> str:
    """What changes when the source changes: names, sizes and modification times."""
    digest = hashlib.sha256(str(source).encode("utf-8", "surrogatepass"))
    try:
        if source.is_file():
            st = source.stat()
            digest.update(f"zip\0{st.st_size}\0{st.st_mtime_ns}".encode())
        elif source.is_dir():
            for folder, dirs, files in os.walk(source):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(_SUFFIXES):
                        st = Path(folder, name).lstat()
                        rel = os.path.relpath(os.path.join(folder, name), source)
                        digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        else:
            raise AdvisoryError(f"{source}: no such advisory directory or zip")
    except OSError as exc:
        raise AdvisoryError(f"{source}: cannot read: {exc.strerror}") from exc
    return digest.hexdigest()


def _read_meta(index: Path, stamp: str) -> Snapshot | None:
    """The index's snapshot when it exists, is ours and matches ``stamp``; else ``None``."""
    if not index.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return None
    if meta.get("schema") != str(_SCHEMA) or meta.get("stamp") != stamp:
        return None
    fields = json.loads(meta["snapshot"])
    return Snapshot(**{**fields, "problems": tuple(fields["problems"])})


def _build(source: Path, stamp: str, index: Path) -> Snapshot:
    records: dict[str, Advisory] = {}
    digest = hashlib.sha256()
    problems: list[str] = []
    skipped = withdrawn = 0
    for name, data in read_source(source):
        if isinstance(data, str):
            skipped += 1
            problems.append(f"{name}: {data}")
            continue
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogatepass") + data)
        try:
            advisory = decode(name, data)
        except BadRecord as exc:
            skipped += 1
            problems.append(f"{name}: {exc}")
            continue
        if advisory.withdrawn is not None:
            withdrawn += 1
            continue
        advisory = _normalised(advisory)
        kept = records.get(advisory.id)
        if kept is None or advisory.modified > kept.modified:
            records[advisory.id] = advisory  # a record in two files: the newer one
    snapshot = Snapshot(
        source=str(source),
        digest=f"sha256:{digest.hexdigest()}",
        date=max((a.modified for a in records.values()), default=""),
        records=len(records),
        withdrawn=withdrawn,
        skipped=skipped,
        problems=tuple(problems[:MAX_PROBLEMS]),
    )
    _write_index(index, records.values(), stamp, snapshot)
    return snapshot


def _normalised(advisory: Advisory) -> Advisory:
    """Explicit versions as :func:`~static.advisories.matching.check` compares them."""
    entries = tuple(
        dataclasses.replace(e, versions=tuple(sorted(listed(e)))) for e in advisory.affected
    )
    return dataclasses.replace(advisory, affected=entries)


def _write_index(index: Path, records: Iterable[Advisory], stamp: str, snapshot: Snapshot) -> None:
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".advisories-", suffix=".sqlite", dir=index.parent)
        os.close(fd)
        tmp = Path(name)
        try:
            db = sqlite3.connect(tmp)
            try:
                _fill(db, records, stamp, snapshot)
            finally:
                db.close()
            os.replace(tmp, index)
        finally:
            tmp.unlink(missing_ok=True)
    except (OSError, sqlite3.Error) as exc:
        raise AdvisoryError(f"cannot write the advisory index in {index.parent}: {exc}") from exc


def _fill(
    db: sqlite3.Connection, records: Iterable[Advisory], stamp: str, snapshot: Snapshot
) -> None:
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE records (id TEXT PRIMARY KEY, data TEXT NOT NULL);"
        "CREATE TABLE names (package TEXT NOT NULL, id TEXT NOT NULL);"
    )
    rows, names = [], []
    for advisory in records:
        rows.append((advisory.id, json.dumps(advisory.to_json(), separators=(",", ":"))))
        names += [(p, advisory.id) for p in dict.fromkeys(a.package for a in advisory.affected)]
    db.executemany("INSERT INTO records VALUES (?, ?)", rows)
    db.executemany("INSERT INTO names VALUES (?, ?)", names)
    db.execute("CREATE INDEX names_package ON names (package)")
    fields = {k: getattr(snapshot, k) for k in Snapshot.__dataclass_fields__}
    meta = {"schema": str(_SCHEMA), "stamp": stamp, "snapshot": json.dumps(fields)}
    db.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    db.commit()
