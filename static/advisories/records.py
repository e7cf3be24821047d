"""OSV advisory records, read defensively into small typed records.

An advisory file is hostile-ish input (anyone can open a pull request to an
advisory database, and a snapshot can come from anywhere), so :func:`parse_record`

- reads only the fields the matcher needs (``id``, ``aliases``, ``summary`` or
  the first line of ``details``, ``modified``, ``withdrawn``, ``severity``,
  ``database_specific.severity`` and each ``affected`` entry of the ``PyPI``
  ecosystem: its ``ECOSYSTEM`` ranges and explicit ``versions``);
- bounds every list and string (:data:`LIMITS`), so a record cannot make the
  index or a finding's message large;
- raises :class:`BadRecord` saying what is wrong, never anything else, so the
  loader can name the file, skip the record and count it.

Severity (:func:`rating`) comes from the record's CVSS vector (v4, then v3, then
v2, scored by the ``cvss`` library), else from ``database_specific.severity``
(GitHub's ``LOW`` / ``MODERATE`` / ``HIGH`` / ``CRITICAL``); a record with
neither is ``unknown``: it is never guessed.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from packaging.utils import InvalidName, canonicalize_name

__all__ = [
    "LIMITS",
    "Advisory",
    "Affected",
    "BadRecord",
    "Event",
    "EventKind",
    "Rating",
    "parse_record",
    "rating",
]

Rating = Literal["unknown", "none", "low", "medium", "high", "critical"]
"""An advisory's qualitative severity (CVSS's scale); ``unknown`` when the record gives none."""

EventKind = Literal["introduced", "fixed", "last_affected", "limit"]
"""An OSV range event."""

LIMITS: Mapping[str, int] = {
    "aliases": 100,
    "affected": 200,
    "ranges": 50,
    "events": 500,
    "versions": 20_000,
    "string": 300,
}
"""Most items a record may hold per list, and the longest string kept (longer: cut)."""

_ECOSYSTEM = "PyPI"
_GITHUB_LEVELS: Mapping[str, Rating] = {
    "LOW": "low",
    "MODERATE": "medium",
    "MEDIUM": "medium",
    "HIGH": "high",
    "CRITICAL": "critical",
}


class BadRecord(ValueError):
    """A record that is not a usable OSV advisory; the message says what is wrong.

    Raised by :func:`parse_record`; the loader reports it with the file's name,
    skips the record and counts it.
    """


@dataclass(frozen=True, slots=True)
class Event:
    """One event of an ``ECOSYSTEM`` range."""

    kind: EventKind
    """What happens at ``version``."""
    version: str
    """The version as written (``"0"`` for "since the first release")."""


@dataclass(frozen=True, slots=True)
class Affected:
    """What one advisory says about one PyPI distribution."""

    package: str
    """The distribution's canonical name (``jinja2``)."""
    ranges: tuple[tuple[Event, ...], ...]
    """Its ``ECOSYSTEM`` ranges (``GIT`` and ``SEMVER`` ranges say nothing about PyPI versions)."""
    versions: tuple[str, ...]
    """Versions listed as affected, as written."""


@dataclass(frozen=True, slots=True)
class Advisory:
    """One OSV record, as much of it as matching and reporting need."""

    id: str
    """The record's id (``PYSEC-2014-8``, ``GHSA-...``)."""
    aliases: tuple[str, ...]
    """Other ids of the same vulnerability (``CVE-...``, ``GHSA-...``)."""
    summary: str
    """One line: ``summary``, else the first line of ``details`` (cut)."""
    rating: Rating
    """Qualitative severity; ``unknown`` when the record gives none."""
    score: float | None
    """The CVSS base score behind ``rating``, when it came from a vector."""
    modified: str
    """When the record last changed (ISO 8601, as written)."""
    withdrawn: str | None
    """When it was withdrawn (such records never match), else ``None``."""
    affected: tuple[Affected, ...]
    """Its PyPI entries."""

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON (what the index stores); :meth:`from_json` reads it back."""
        return {
            "id": self.id,
            "aliases": list(self.aliases),
            "summary": self.summary,
            "rating": self.rating,
            "score": self.score,
            "modified": self.modified,
            "withdrawn": self.withdrawn,
            "affected": [
                {
                    "package": a.package,
                    "ranges": [[[e.kind, e.version] for e in r] for r in a.ranges],
                    "versions": list(a.versions),
                }
                for a in self.affected
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Advisory:
        """Read back what :meth:`to_json` wrote (trusted: the index is ours)."""
        return cls(
            id=data["id"],
            aliases=tuple(data["aliases"]),
            summary=data["summary"],
            rating=data["rating"],
            score=data["score"],
            modified=data["modified"],
            withdrawn=data["withdrawn"],
            affected=tuple(
                Affected(
                    package=a["package"],
                    ranges=tuple(tuple(Event(k, v) for k, v in r) for r in a["ranges"]),
                    versions=tuple(a["versions"]),
                )
                for a in data["affected"]
            ),
        )


def parse_record(data: object) -> Advisory:
    """Read one decoded OSV record (from JSON or ``yaml.safe_load``).

    Args:
        data: The decoded document.

    Returns:
        The advisory; its ``affected`` holds only ``PyPI`` entries (possibly none).

    Raises:
        BadRecord: It is not an OSV record (no string ``id``, fields of the wrong
            type, too many items); the message says which field.
    """
    if not isinstance(data, Mapping):
        raise BadRecord("not an object")
    ident = _text(data.get("id"), "id")
    if not ident:
        raise BadRecord("no `id`")
    details = _text(data.get("details", ""), "details")
    summary = _text(data.get("summary", ""), "summary") or details.strip().split("\n", 1)[0]
    withdrawn = data.get("withdrawn")
    level, score = rating(data)
    return Advisory(
        id=ident,
        aliases=tuple(_texts(data.get("aliases", []), "aliases")),
        summary=_cut(summary),
        rating=level,
        score=score,
        modified=_text(data.get("modified", ""), "modified"),
        withdrawn=None if withdrawn in (None, "") else _text(withdrawn, "withdrawn"),
        affected=tuple(_affected(data.get("affected", []))),
    )


def rating(data: Mapping[str, Any]) -> tuple[Rating, float | None]:
    """A record's qualitative severity and CVSS base score (see the module docstring).

    Args:
        data: The decoded record.

    Returns:
        ``(rating, score)``; ``("unknown", None)`` when the record rates nothing.
    """
    vectors: dict[str, str] = {}
    entries = [*_list(data.get("severity", []), "severity")]
    for item in _list(data.get("affected", []), "affected"):
        if isinstance(item, Mapping):
            entries += _list(item.get("severity", []), "affected[].severity")
    for entry in entries:
        if isinstance(entry, Mapping) and isinstance(entry.get("score"), str):
            vectors.setdefault(str(entry.get("type")), entry["score"])
    for kind in ("CVSS_V4", "CVSS_V3", "CVSS_V2"):
        if kind in vectors:
            scored = _cvss(kind, vectors[kind])
            if scored is not None:
                return scored
    specific = data.get("database_specific")
    if isinstance(specific, Mapping) and isinstance(specific.get("severity"), str):
        level = _GITHUB_LEVELS.get(specific["severity"].strip().upper())
        if level is not None:
            return level, None
    return "unknown", None


def _cvss(kind: str, vector: str) -> tuple[Rating, float] | None:
    """Score a vector with the ``cvss`` library; ``None`` when it does not parse."""
    import cvss  # noqa: PLC0415 - only records with a vector need it

    try:
        if kind == "CVSS_V4":
            v4 = cvss.CVSS4(vector)
            return _level(float(v4.base_score)), float(v4.base_score)
        scorer = cvss.CVSS3(vector) if kind == "CVSS_V3" else cvss.CVSS2(vector)
        score = float(scorer.scores()[0])
    except (cvss.CVSSError, ValueError, KeyError, IndexError):
        return None
    return _level(score), score


def _level(score: float) -> Rating:
    """CVSS v3/v4's qualitative scale (v2 scores are placed on it too)."""
    if score == 0:
        return "none"
    if score < 4:
        return "low"
    if score < 7:
        return "medium"
    return "high" if score < 9 else "critical"


def _affected(value: object) -> list[Affected]:
    out = []
    for k, item in enumerate(_list(value, "affected")):
        if not isinstance(item, Mapping):
            raise BadRecord(f"affected[{k}] is not an object")
        package = item.get("package")
        if not isinstance(package, Mapping) or package.get("ecosystem") != _ECOSYSTEM:
            continue  # another ecosystem (or none): nothing about PyPI
        name = _text(package.get("name"), f"affected[{k}].package.name")
        try:
            canonical = canonicalize_name(name, validate=True)
        except InvalidName as exc:
            raise BadRecord(f"affected[{k}]: invalid distribution name {name!r}") from exc
        ranges = [
            _events(r.get("events", []), f"affected[{k}].ranges[{j}]")
            for j, r in enumerate(_list(item.get("ranges", []), "ranges"))
            if isinstance(r, Mapping) and r.get("type") == "ECOSYSTEM"
        ]
        versions = _texts(item.get("versions", []), f"affected[{k}].versions", "versions")
        out.append(Affected(str(canonical), tuple(ranges), tuple(versions)))
    return out


def _events(value: object, where: str) -> tuple[Event, ...]:
    events = []
    for item in _list(value, "events"):
        if not isinstance(item, Mapping) or len(item) != 1:
            raise BadRecord(f"{where}: an event is not an object with one key")
        [(kind, version)] = item.items()
        if kind not in ("introduced", "fixed", "last_affected", "limit"):
            raise BadRecord(f"{where}: unknown event {kind!r}")
        events.append(Event(kind, _text(version, f"{where}.{kind}")))
    return tuple(events)


def _list(value: object, key: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise BadRecord(f"`{key}` is not a list")
    limit = LIMITS.get(key, LIMITS["versions"])
    if len(value) > limit:
        raise BadRecord(f"`{key}` has {len(value)} items (at most {limit})")
    return value


def _texts(value: object, where: str, key: str = "aliases") -> list[str]:
    return [_text(v, where) for v in _list(value, key)]


def _text(value: object, where: str) -> str:
    # YAML reads an unquoted date as a date, and 2.0 as a float: what was written is meant.
    if isinstance(value, datetime.date):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadRecord(f"`{where}` is not a string")
    return _cut(str(value))


def _cut(text: str) -> str:
    limit = LIMITS["string"]
    return text if len(text) <= limit else text[: limit - 1] + "…"
