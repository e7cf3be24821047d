"""SARIF 2.1.0 of a grading run's static findings, written without holding the run.

The log is the one :func:`static.sarif.to_sarif` builds for every sample of the
run (same rules, results, levels, locations and fingerprints), but it is
written result by result: the grades are read twice (once for the rule ids the
log's ``tool.driver.rules`` lists, once for the results), each sample's
findings are turned into results on their own (a fingerprint depends only on
its own sample) and written out, and only the rule ids are held. Each sample is
``candidates/<id>.py``; its extracted code (for line-content fingerprints) is
looked up for the samples that have findings, one at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from gradebox.grade import Grade

if TYPE_CHECKING:
    from static.findings import Finding, Layer

__all__ = ["write_sarif"]


def write_sarif(
    grades: Callable[[], Iterable[Grade]],
    out: IO[str],
    *,
    version: str,
    sources: Mapping[str, str],
    static_ran: bool = True,
) -> int:
    """Write the run's SARIF log to ``out``; return how many results it holds.

    Args:
        grades: Called twice; each call iterates the run's grades in input order
            (read back from disk, so nothing of the run is held).
        out: Where the JSON goes (text).
        version: gradebox's version (``tool.driver.version``).
        sources: Extracted code by sample id (looked up for samples with findings).
        static_ran: ``False`` marks the run as graded with ``--no-static``.
    """
    from static.sarif import SARIF_SCHEMA, to_sarif  # noqa: PLC0415 - static loads on use

    layers: dict[str, Layer] = {}
    for grade in grades():
        for f in _findings(grade):
            layers[f.rule] = f.layer  # the last layer seen names the rule, as in to_sarif
    # One call over a finding per rule gives the driver exactly as for the whole run.
    driver_log = to_sarif(
        [("", "", [_probe(rule, layer) for rule, layer in layers.items()])], version
    )
    run = driver_log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    index = {rule["id"]: k for k, rule in enumerate(rules)}
    head: dict[str, Any] = {"tool": run["tool"], "columnKind": run["columnKind"]}
    if not static_ran:
        head["properties"] = {"static_layers": "not run (--no-static)"}
    out.write(f'{{"$schema": {json.dumps(SARIF_SCHEMA)}, "version": "2.1.0", "runs": [{{')
    for key, value in head.items():
        out.write(f"{json.dumps(key)}: {json.dumps(value)}, ")
    out.write('"results": [')
    written = 0
    for grade in grades():
        findings = _findings(grade)
        if not findings:
            continue
        code = sources.get(grade.id)
        one = to_sarif(
            [(grade.id, f"candidates/{grade.id}.py", findings)],
            version,
            sources={grade.id: code} if code is not None else {},
            rule_docs={},
        )
        for result in one["runs"][0]["results"]:
            result["ruleIndex"] = index[result["ruleId"]]
            out.write(("\n" if not written else ",\n") + json.dumps(result))
            written += 1
    out.write("\n]}]}\n")
    return written


def _findings(grade: Grade) -> list[Finding]:
    """The sample's findings as :class:`static.findings.Finding` (none without static)."""
    from static.findings import Finding  # noqa: PLC0415

    if grade.static is None:
        return []
    return [
        Finding(
            layer=f.layer,
            rule=f.rule,
            severity=f.severity,
            line=f.line,
            col=f.col,
            message=f.message,
        )
        for f in grade.static.findings
    ]


def _probe(rule: str, layer: Layer) -> Finding:
    from static.findings import Finding  # noqa: PLC0415

    return Finding(layer=layer, rule=rule, severity="info", line=1, col=0, message="")
