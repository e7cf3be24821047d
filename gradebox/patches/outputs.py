"""The gate's reports, each from the typed rows: SWE-bench ``report.json``, SARIF, JUnit, comment.

* :func:`swebench_report`: SWE-bench's report keys (``resolved_ids``,
  ``unresolved_ids``, ``error_ids``, ``empty_patch_ids``, ...). "Resolved" is
  SWE-bench's, decided by the tests alone (:attr:`GateRow.resolved`), so the
  numbers compare with the official harness on the same instances; gradebox's
  own verdict adds ``gate_passed_ids`` (static policy and tamper risk included).
* :func:`sarif`: SARIF 2.1.0, one run per gate (``automationDetails.id``
  ``gradebox/gate/<id>/``, ``versionControlProvenance`` with the base commit),
  one result per static finding with ``baselineState`` (``new``, ``unchanged``,
  ``absent`` for fixed) and ``partialFingerprints`` (the fingerprint that
  survives line moves).
* :func:`junit`: one ``testsuite`` per gate, one ``testcase`` per
  FAIL_TO_PASS and PASS_TO_PASS id (quarantined ones skipped, with the reason).
* :func:`comment`: the Markdown report (:mod:`gradebox.patches.markdown`, the one
  renderer the GitHub comment and check run use too).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradebox.patches.markdown import report
from gradebox.patches.model import GateRow
from static.differential import Tagged

__all__ = ["comment", "junit", "sarif", "swebench_report"]

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"high": "error", "medium": "warning", "low": "note", "info": "note"}
_BASELINE = {"new": "new", "unchanged": "unchanged", "fixed": "absent"}


def swebench_report(rows: Sequence[GateRow]) -> dict[str, Any]:
    """SWE-bench's ``report.json`` for these rows."""
    ids = [r.id for r in rows]
    error = [r.id for r in rows if r.reason == "infra_error"]
    empty = [r.id for r in rows if r.empty]
    resolved = [r.id for r in rows if r.resolved]
    unresolved = [i for i in ids if i not in set(error) | set(empty) | set(resolved)]
    completed = [i for i in ids if i not in set(error) | set(empty)]
    return {
        "total_instances": len(ids),
        "submitted_instances": len(ids),
        "completed_instances": len(completed),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(error),
        "completed_ids": sorted(completed),
        "incomplete_ids": [],
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(ids),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "error_ids": sorted(error),
        "gate_passed_ids": sorted(r.id for r in rows if r.verdict == "pass"),
        "schema_version": 2,
    }


def sarif(rows: Sequence[GateRow]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of every gate's static findings."""
    return {"$schema": _SARIF_SCHEMA, "version": "2.1.0", "runs": [_run(r) for r in rows]}


def _run(row: GateRow) -> dict[str, Any]:
    found = list(row.static.findings) if row.static is not None else []
    counted = {t.fingerprint for t in row.static.counted} if row.static is not None else set()
    rules = sorted({t.finding.rule for t in found})
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "gradebox-gate",
                "rules": [{"id": r, "shortDescription": {"text": r}} for r in rules],
            }
        },
        "automationDetails": {"id": f"gradebox/gate/{row.id}/"},
        "results": [_result(t, t.fingerprint in counted) for t in found],
    }
    if row.base is not None:
        uri = Path(row.repo).resolve().as_uri() if row.repo else "file:///"
        run["versionControlProvenance"] = [{"repositoryUri": uri, "revisionId": row.base}]
    return run


def _result(t: Tagged, counted: bool) -> dict[str, Any]:
    f = t.finding
    region: dict[str, int] = {"startLine": max(f.line, 1)}
    if f.col > 0:
        region["startColumn"] = f.col
    return {
        "ruleId": f.rule,
        "level": _LEVEL[f.severity],
        "message": {"text": f.message[:1000]},
        "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": t.path}, "region": region}}
        ],
        "baselineState": _BASELINE[t.state],
        "partialFingerprints": {"gradeboxFingerprint/v1": t.fingerprint},
        "properties": {"layer": f.layer, "counted": counted},
    }


def junit(rows: Sequence[GateRow]) -> bytes:
    """JUnit XML: one testcase per deciding test id of each gate."""
    suites = ET.Element("testsuites", name="gradebox gate")
    for row in rows:
        suite = ET.SubElement(suites, "testsuite", name=row.id)
        cases = 0
        failures = 0
        if row.tests is None:
            case = ET.SubElement(suite, "testcase", classname=row.id, name="gate")
            if row.verdict != "pass":
                ET.SubElement(case, "failure", message=row.reason).text = row.detail or ""
                failures += 1
            cases += 1
        else:
            ok = {"fail_to_pass": ("F2P", "P2P", "S2P", "N2P"), "pass_to_pass": ("P2P",)}
            for kind, ids in (
                ("fail_to_pass", row.tests.fail_to_pass),
                ("pass_to_pass", row.tests.pass_to_pass),
            ):
                for test_id, category in sorted(ids.items()):
                    case = ET.SubElement(suite, "testcase", classname=f"{row.id}.{kind}",
                                         name=test_id)  # fmt: skip
                    cases += 1
                    if category not in ok[kind]:
                        failures += 1
                        ET.SubElement(case, "failure", message=category)
            for test_id in row.tests.quarantined:
                case = ET.SubElement(suite, "testcase", classname=f"{row.id}.quarantined",
                                     name=test_id)  # fmt: skip
                ET.SubElement(case, "skipped", message="flaky at base: quarantined")
                cases += 1
        suite.set("tests", str(cases))
        suite.set("failures", str(failures))
    data: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return data


def comment(rows: Sequence[GateRow]) -> str:
    """The Markdown report (``--comment``): :func:`gradebox.patches.markdown.report`.

    The same renderer as the sticky PR comment and the check run: untrusted text
    only inside inline code spans, one line, control and bidi characters removed.
    """
    return report(rows)
