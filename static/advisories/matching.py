"""Whether a version of a distribution is affected by an advisory: OSV's rules, PEP 440 order.

A version is affected by an :class:`~static.advisories.records.Affected` entry when it
is one of its explicit ``versions`` or lies in one of its ``ECOSYSTEM`` ranges
(OSV's evaluation: the range's events sorted by version, ``introduced: "0"``
first; walking them, ``introduced`` at or below the version opens the range,
``fixed`` at or below it closes it, ``last_affected`` *below* it closes it, and
a ``limit`` at or below it ends the range for good).

Versions are compared with ``packaging``'s PEP 440 order on their **public**
part: ``2.7.2rc1`` is before ``2.7.2`` (so a range fixed in ``2.7.2`` holds it),
and a local build ``2.7+ubuntu1`` is ``2.7`` (affected where ``2.7`` is, fixed
where ``2.7`` is fixed: a local patch that backports a fix cannot be seen).
Comparisons are direct, never through a specifier, which would leave
pre-releases out of ``<2.7.2``.

An event whose version is not PEP 440 makes its range unusable (the caller is
told, in :class:`Verdict.unusable`); explicit versions that are not PEP 440 are
matched as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from static.advisories.records import Affected, Event

__all__ = [
    "Compiled",
    "Verdict",
    "check",
    "check_compiled",
    "compile_entry",
    "describe",
    "listed",
    "public",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one advisory entry says about one version."""

    affected: bool
    """Whether the version is affected."""
    ranges: tuple[str, ...]
    """The entry's ranges that hold the version, written as specifiers (``>=1.0, <1.2``)."""
    fixed: str | None
    """The lowest fixed version above it in the entry, when there is one."""
    unusable: int = 0
    """Ranges skipped because an event's version is not PEP 440."""


def public(version: str) -> Version | None:
    """``version`` parsed, its local part dropped; ``None`` when it is not PEP 440."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return parsed if parsed.local is None else Version(parsed.public)


def listed(entry: Affected) -> frozenset[str]:
    """``entry``'s explicit versions as :func:`check` compares them."""
    return frozenset(str(p) if (p := public(x)) is not None else x for x in entry.versions)


@dataclass(frozen=True, slots=True)
class Compiled:
    """An entry ready for many versions: events parsed and sorted once (:func:`compile_entry`)."""

    versions: frozenset[str]
    """:func:`listed` of the entry."""
    ranges: tuple[tuple[str, list[tuple[Event, Version | None]]], ...]
    """Each usable range: its description and its events in OSV's order."""
    unusable: int
    """Ranges skipped because an event's version is not PEP 440."""


def compile_entry(entry: Affected) -> Compiled:
    """Parse and sort ``entry``'s events once, for :func:`check_compiled`."""
    ranges = []
    unusable = 0
    for events in entry.ranges:
        ordered = _sorted(events)
        if ordered is None:
            unusable += 1
        else:
            ranges.append((describe(events), ordered))
    return Compiled(listed(entry), tuple(ranges), unusable)


def check(entry: Affected, version: str) -> Verdict:
    """Whether ``version`` is affected by ``entry`` (see the module docstring).

    Args:
        entry: One distribution's part of an advisory.
        version: The version in use, as pinned.

    Returns:
        The verdict, with the matching ranges and the fix above ``version``.
    """
    return check_compiled(compile_entry(entry), version)


def check_compiled(entry: Compiled, version: str) -> Verdict:
    """:func:`check` of a compiled entry (what a store that keeps entries uses)."""
    v = public(version)
    in_list = (str(v) if v is not None else version) in entry.versions
    holding: list[str] = []
    fixes: list[Version] = []  # above the version, in any range
    closing: list[Version] = []  # above it, in the ranges that hold it
    for described, ordered in entry.ranges:
        above = [p for e, p in ordered if e.kind == "fixed" and p and (v is None or p > v)]
        fixes += above
        if v is not None and _in_range(v, ordered):
            holding.append(described)
            closing += above
    best = closing or fixes
    fixed = str(min(best)) if best else None
    return Verdict(in_list or bool(holding), tuple(holding), fixed, entry.unusable)


def describe(events: Sequence[Event]) -> str:
    """A range as specifiers: ``<2.7.2``, ``>=1.0, <=1.11.0``, ``>=3.0, <3.0.4 | >=3.1, <3.1.2``."""
    spans: list[str] = []
    current: list[str] = []
    for e in events:
        if e.kind == "introduced":
            if current:
                spans.append(", ".join(current))
            current = [] if e.version == "0" else [f">={e.version}"]
        elif e.kind == "fixed":
            spans.append(", ".join([*current, f"<{e.version}"]))
            current = []
        elif e.kind == "last_affected":
            spans.append(", ".join([*current, f"<={e.version}"]))
            current = []
        else:
            current.append(f"<{e.version} (limit)")
    if current:
        spans.append(", ".join(current))
    return " | ".join(s or "all versions" for s in spans) or "all versions"


def _sorted(events: Sequence[Event]) -> list[tuple[Event, Version | None]] | None:
    """Events with their parsed versions, in OSV's order; ``None`` when one does not parse."""
    parsed: list[tuple[Event, Version | None]] = []
    for e in events:
        if e.kind == "introduced" and e.version == "0":
            parsed.append((e, None))
            continue
        p = public(e.version)
        if p is None:
            return None
        parsed.append((e, p))
    # "0" first; at one version, the event that closes a range before the introduction
    # that opens the next ("fixed: 3.1.1" and "introduced: 3.1.1": 3.1.1 is affected).
    return sorted(parsed, key=_order)


def _order(item: tuple[Event, Version | None]) -> tuple[bool, Version, bool]:
    event, version = item
    return version is not None, version or Version("0"), event.kind == "introduced"


def _in_range(v: Version, ordered: list[tuple[Event, Version | None]]) -> bool:
    included = False
    for e, p in ordered:
        if e.kind == "introduced":
            included = included or p is None or v >= p
        elif e.kind == "fixed":
            included = included and not (p is not None and v >= p)
        elif e.kind == "last_affected":
            included = included and not (p is not None and v > p)
        elif p is not None and v >= p:  # limit: nothing at or above it is in the range
            return False
    return included
