"""Known vulnerabilities in what a candidate depends on (the ``deps`` layer).

For each third-party distribution the candidate imports (resolved as the
imports layer resolves it: :func:`static.imports.imported_distributions`), the
version in use is

1. the one the candidate pins itself in PEP 723 inline script metadata
   (``# /// script`` ... ``dependencies = ["jinja2==2.7"]``), for every
   distribution it declares there, imported or not;
2. else the one the task's lockfile pins;
3. else, without a lockfile, the one installed here (the message says so).

Each version is looked up in an advisory store
(:class:`static.advisories.AdvisoryStore`, OSV's matching rules, aliases merged)
and each known vulnerability is a finding on the line of the import (or of the
declaration), carrying the advisory's id and aliases in ``Finding.refs``:

- ``GBX311`` (vulnerable-dependency): the advisory rates its severity (CVSS
  vector or ``database_specific``); ``critical`` and ``high`` are ``high``,
  ``medium`` ``medium``, ``low`` ``low``, ``none`` ``info``;
- ``GBX312`` (vulnerable-dependency-unrated): the advisory gives no severity.
  The finding is ``info``, the message says ``severity unknown``: an unknown
  severity never satisfies a ``min_severity`` above ``info``, select the rule
  itself to act on it;
- ``GBX313`` (unchecked-dependency, ``info``): a distribution with advisories
  whose version is not pinned exactly (``requests>=2``, a URL), so it cannot
  be checked.

What this cannot see: vendored copies of a library, installs at run time
(``pip install`` from code), and versions that a lockfile does not pin.

This module imports no other layer.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from static.advisories import Advisory, Rating, Vulnerability
from static.advisories.matching import public
from static.findings import Finding, Severity
from static.imports import imported_distributions

__all__ = ["AdvisoryLookup", "check", "declared", "findings_for", "pinned_versions"]

_SEVERITY: Mapping[Rating, Severity] = {
    "critical": "high",
    "high": "high",
    "medium": "medium",
    "low": "low",
    "none": "info",
    "unknown": "info",
}
# PEP 723's reference regular expression.
_BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_MAX_MESSAGE = 400


class AdvisoryLookup(Protocol):
    """What the layer needs of an advisory store (:class:`static.advisories.AdvisoryStore`)."""

    def advisories(self, package: str) -> tuple[Advisory, ...]:
        """Every advisory naming a distribution."""
        ...

    def vulnerabilities(self, package: str, version: str) -> list[Vulnerability]:
        """Known vulnerabilities of a version of a distribution."""
        ...


def check(
    code: str,
    store: AdvisoryLookup,
    pins: Mapping[str, str] | None,
    *,
    installed: Mapping[str, str],
    environment: Mapping[str, Sequence[str]],
    local_modules: Collection[str] = (),
) -> list[Finding]:
    """Known vulnerabilities of the distributions a candidate uses.

    Args:
        code: The candidate's source; parsed, never run.
        store: The advisory store.
        pins: ``{canonical distribution: version}`` of the task's lockfile
            (:func:`static.lockfiles.read_lockfile`); ``None`` without one.
        installed: ``{canonical distribution: version}`` installed here (used without a lockfile).
        environment: ``importlib.metadata.packages_distributions()``, computed once per run.
        local_modules: Top-level module names the candidate provides itself.

    Returns:
        ``GBX311``, ``GBX312`` and ``GBX313`` findings, in source order.
    """
    own = declared(code)
    available = set(own) | set(installed if pins is None else pins)
    found: list[Finding] = []
    imported = imported_distributions(
        code, available, local_modules=local_modules, environment=environment
    )
    lines = {dist: (line, col) for dist, line, col in imported}
    for dist, (version, line) in own.items():
        at = lines.get(dist, (line, 1))
        found += findings_for(store, dist, version, "pinned in the script's metadata", at)
    for dist, line, col in imported:
        if dist in own:
            continue
        if pins is None:
            value, where = installed.get(dist, ""), "installed here"
        else:
            value, where = pins.get(dist, ""), "pinned by the lockfile"
        found += findings_for(store, dist, value, where, (line, col))
    return sorted(found, key=lambda f: (f.line, f.col, f.rule, f.refs))


def pinned_versions(value: str) -> list[str]:
    """The exact versions a lockfile value names (``"2.7"``, ``"1.0 || 1.1"``); none for a range."""
    return [v for v in (part.strip() for part in value.split("||")) if v and public(v) is not None]


def declared(code: str) -> dict[str, tuple[str, int]]:
    """The candidate's PEP 723 ``dependencies``: ``{canonical name: (value, line)}``.

    The value is the exact version (``==`` / ``===``), else the specifier as written.
    A block that does not parse declares nothing (the tools that run scripts refuse it too).
    """
    found: dict[str, tuple[str, int]] = {}
    for match in _BLOCK.finditer(code):
        if match.group("type") != "script":
            continue
        first = code.count("\n", 0, match.start()) + 2  # the block's first content line
        content = "".join(
            line[2:] if line.startswith("# ") else line[1:]
            for line in match.group("content").splitlines(keepends=True)
        )
        try:
            deps = tomllib.loads(content).get("dependencies", [])
        except tomllib.TOMLDecodeError:
            continue
        for text in deps if isinstance(deps, list) else []:
            item = _requirement(text)
            if item is not None:
                line = first + _line_of(content, text)
                found.setdefault(item[0], (item[1], line))
    return found


def _requirement(text: object) -> tuple[str, str] | None:
    if not isinstance(text, str):
        return None
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    exact = [
        s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version
    ]
    return str(canonicalize_name(req.name)), exact[0] if len(exact) == 1 else str(req.specifier)


def _line_of(content: str, text: str) -> int:
    for number, line in enumerate(content.splitlines()):
        if text in line:
            return number
    return 0


def findings_for(
    store: AdvisoryLookup, dist: str, value: str, where: str, at: tuple[int, int]
) -> list[Finding]:
    """The findings of one distribution at one lockfile value (see the module docstring).

    Args:
        store: The advisory store.
        dist: The distribution's canonical name.
        value: Its version (``"2.7"``, ``"1.0 || 1.1"``), or a specifier or URL (unchecked).
        where: Where the version comes from, for the message (``"pinned by the lockfile"``).
        at: ``(line, column)`` of the finding.
    """
    return list(_findings(store, dist, value, where, at))


def _findings(
    store: AdvisoryLookup, dist: str, value: str, where: str, at: tuple[int, int]
) -> Iterator[Finding]:
    versions = pinned_versions(value)
    if not versions:
        count = len(store.advisories(dist))
        if count:
            shown = repr(value) if value else "no version"
            message = (
                f"{dist} ({where}: {shown}) is not pinned to an exact version, so its "
                f"{count} known advisories cannot be checked"
            )
            yield Finding("deps", "GBX313", "info", at[0], at[1], message[:_MAX_MESSAGE])
        return
    for version in versions:
        for vuln in store.vulnerabilities(dist, version):
            yield _finding(dist, version, where, vuln, at)


def _finding(
    dist: str, version: str, where: str, vuln: Vulnerability, at: tuple[int, int]
) -> Finding:
    rated = vuln.rating != "unknown"
    severity = f"severity {vuln.rating}" + (
        f" (CVSS {vuln.score})" if vuln.score is not None else ""
    )
    aliases = f" ({', '.join(vuln.ids[1:6])})" if len(vuln.ids) > 1 else ""
    affected = "; ".join(vuln.ranges) or "listed version"
    fixed = f"fixed in {vuln.fixed}" if vuln.fixed else "no fixed version known"
    message = (
        f"{dist} {version} ({where}) is affected by {vuln.ids[0]}{aliases}: "
        f"{affected}, {fixed}, {severity}"
    )
    return Finding(
        "deps",
        "GBX311" if rated else "GBX312",
        _SEVERITY[vuln.rating],
        at[0],
        at[1],
        message[:_MAX_MESSAGE],
        vuln.ids,
    )
