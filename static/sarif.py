"""SARIF 2.1.0 for all static findings of a run, one result per finding.

The log has one run whose driver is gradebox. Its rules (``tool.driver.rules``)
are the rule ids that occur, sorted, each with a ``shortDescription`` and, where
known, a ``helpUri`` and ``help`` text: from ``rule_docs`` when given, else from
the bundled ``rules*.toml`` files for gradebox's own ``GBX``
rules, else a generic description and the tool's rule index (ruff, mypy, bandit).

Each result is located in its candidate's file (``file_uri``, a relative POSIX
path such as ``candidates/s1.py``, percent-encoded here) with a region whose
``startLine`` is at least 1 (a finding tied to no line points at line 1) and a
``startColumn`` when the finding has one. Columns count Unicode code points.

``partialFingerprints.primaryLocationLineHash`` identifies a result across runs
the way GitHub code scanning expects (``<hash>:<occurrence>``): the hash covers
the rule, the sample id and the whitespace-normalised text of the finding's
line (from ``sources``; the line number stands in when no source is given), so
it survives unrelated lines moving. Identical keys within a sample are told
apart by their occurrence, counted in (line, column, message) order.

Levels: ``high`` -> ``error``, ``medium`` -> ``warning``, ``low`` and ``info`` ->
``note``.

This module uses only the standard library and imports no other layer.
"""

from __future__ import annotations

import hashlib
import tomllib
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from static.findings import Finding, Layer, Severity

__all__ = ["SARIF_SCHEMA", "RuleDoc", "load_rule_docs", "to_sarif"]

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The ``$schema`` the log declares: the OASIS SARIF 2.1.0 schema (errata 01)."""

_LEVELS: Mapping[Severity, str] = {
    "high": "error",
    "medium": "warning",
    "low": "note",
    "info": "note",
}
_BUNDLED_DOCS = ("rules.toml", "rules_analyses.toml", "rules_deps.toml")
_TOOL_INDEX: Mapping[Layer, tuple[str, str]] = {
    "lint": ("ruff rule", "https://docs.astral.sh/ruff/rules/"),
    "types": ("mypy error code", "https://mypy.readthedocs.io/en/stable/error_code_list.html"),
    "security": ("bandit test", "https://bandit.readthedocs.io/en/latest/plugins/index.html"),
}


@dataclass(frozen=True, slots=True)
class RuleDoc:
    """What SARIF says about one rule."""

    summary: str
    """One line: ``shortDescription``."""
    help_uri: str | None = None
    """Where the rule is documented (``helpUri``), when there is such a page."""
    help_markdown: str | None = None
    """Longer help (what, why, example, use instead) as Markdown."""


def load_rule_docs(text: str) -> dict[str, RuleDoc]:
    """Read rule docs from TOML in the shape of ``static/rules.toml``.

    Args:
        text: TOML with one table per rule id (``[GBX101]``): ``summary``
            required; ``help_uri``, ``what``, ``why``, ``example`` and
            ``use_instead`` optional; other keys, and top-level values that
            are not tables, are ignored.

    Returns:
        ``{rule id: RuleDoc}``.

    Raises:
        ValueError: The TOML does not parse or a rule has no string ``summary``.
    """
    docs: dict[str, RuleDoc] = {}
    tables = {k: v for k, v in tomllib.loads(text).items() if isinstance(v, dict)}
    for rule, entry in tables.items():
        if not isinstance(entry.get("summary"), str):
            raise ValueError(f"rule doc {rule!r} is not a table with a string `summary`")
        docs[rule] = RuleDoc(entry["summary"], entry.get("help_uri"), _markdown(entry))
    return docs


def to_sarif(
    results: Sequence[tuple[str, str, list[Finding]]],
    tool_version: str,
    *,
    sources: Mapping[str, str] | None = None,
    rule_docs: Mapping[str, RuleDoc] | None = None,
) -> dict[str, Any]:
    """Build one SARIF 2.1.0 log for the static findings of many candidates.

    Args:
        results: ``(sample_id, file_uri, findings)`` per candidate, in run order.
        tool_version: gradebox's version, for ``tool.driver.version``.
        sources: ``{sample_id: code}``, so fingerprints follow line content.
        rule_docs: Docs per rule id; ``None`` reads the bundled GBX rule docs
            (read on each call: pass them in when writing many logs).

    Returns:
        The SARIF log as a JSON-ready dict.
    """
    docs = _bundled_docs() if rule_docs is None else rule_docs
    layers = {f.rule: f.layer for _, _, findings in results for f in findings}
    rule_ids = sorted(layers)
    index = {rule: i for i, rule in enumerate(rule_ids)}
    sarif_results = [
        _result(finding, index[finding.rule], sample_id, uri, fingerprint)
        for sample_id, uri, findings in results
        for finding, fingerprint in _fingerprinted(sample_id, findings, sources or {})
    ]
    driver = {
        "name": "gradebox",
        "version": tool_version,
        "rules": [_rule(rule, layers[rule], docs.get(rule)) for rule in rule_ids],
    }
    run = {"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": sarif_results}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _bundled_docs() -> dict[str, RuleDoc]:
    docs: dict[str, RuleDoc] = {}
    for name in _BUNDLED_DOCS:
        path = resources.files("static").joinpath(name)
        if path.is_file():
            docs.update(load_rule_docs(path.read_text(encoding="utf-8")))
    return docs


def _markdown(entry: Mapping[str, Any]) -> str | None:
    parts = [
        f"## {title}\n{entry[key].strip()}\n"
        for key, title in (("what", "What it does"), ("why", "Why is this bad?"))
        if isinstance(entry.get(key), str)
    ]
    parts += [
        f"## {title}\n```python\n{entry[key].strip()}\n```\n"
        for key, title in (("example", "Example"), ("use_instead", "Use instead"))
        if isinstance(entry.get(key), str)
    ]
    return "\n".join(parts) or None


def _rule(rule: str, layer: Layer, doc: RuleDoc | None) -> dict[str, Any]:
    kind, index_uri = _TOOL_INDEX.get(layer, ("gradebox rule", None))
    doc = doc or RuleDoc(f"{kind} {rule}", index_uri)
    entry: dict[str, Any] = {
        "id": rule,
        "shortDescription": {"text": doc.summary},
        "properties": {"tags": [layer]},
    }
    if doc.help_uri:
        entry["helpUri"] = doc.help_uri
    if doc.help_markdown:
        entry["help"] = {"text": doc.help_markdown, "markdown": doc.help_markdown}
    return entry


def _fingerprinted(
    sample_id: str, findings: list[Finding], sources: Mapping[str, str]
) -> list[tuple[Finding, str]]:
    lines = sources.get(sample_id, "").splitlines()
    keyed = [(f, _line_hash(f, sample_id, lines)) for f in findings]
    seen: dict[str, int] = {}
    occurrence: dict[int, int] = {}
    order = sorted(range(len(keyed)), key=lambda i: (*_place(keyed[i][0]), keyed[i][1]))
    for i in order:
        seen[keyed[i][1]] = seen.get(keyed[i][1], 0) + 1
        occurrence[i] = seen[keyed[i][1]]
    return [(f, f"{digest}:{occurrence[i]}") for i, (f, digest) in enumerate(keyed)]


def _place(finding: Finding) -> tuple[int, int, str]:
    return finding.line, finding.col, finding.message


def _line_hash(finding: Finding, sample_id: str, lines: list[str]) -> str:
    if 0 < finding.line <= len(lines):
        where = " ".join(lines[finding.line - 1].split())
    else:
        where = f"line {finding.line}"
    key = "\0".join((finding.rule, sample_id, where))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _result(
    finding: Finding, rule_index: int, sample_id: str, uri: str, fingerprint: str
) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": max(finding.line, 1)}
    if finding.col >= 1:
        region["startColumn"] = finding.col
    location = {
        "physicalLocation": {
            "artifactLocation": {"uri": urllib.parse.quote(uri, safe="/")},
            "region": region,
        }
    }
    return {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": _LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        "properties": {
            "sample": sample_id,
            "layer": finding.layer,
            "severity": finding.severity,
            **({"refs": list(finding.refs)} if finding.refs else {}),
        },
    }
