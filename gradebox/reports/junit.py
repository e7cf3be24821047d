r"""JUnit XML for CI: one testsuite per task, one testcase per sample.

A CI server (GitLab, Jenkins, GitHub test reporters) shows a run like a test
run. Each sample maps to exactly one state:

=============================  =======================================
grade                          testcase
=============================  =======================================
verdict ``pass``               passed (no child element)
infrastructure error           ``<error type="infra_error">``
verdict ``fail``               ``<failure type="REASON">``
verdict ``needs_review``       ``<failure type="needs_review:REASON">``
nothing ran, nothing decided   ``<skipped>``
a sample with no row           ``<skipped>`` (see :class:`NotRun`)
=============================  =======================================

A sample that needs review is not a pass, so it is a failure, as with
``gradebox grade --gate``. The shape follows the JUnit XSD that Jenkins' xunit
plugin and pytest use (``junit-10.xsd``). :func:`write_junit` writes the document
:func:`to_junit` builds, byte for byte, without holding the run: each testcase is
serialized as its grade comes and spooled to a temporary file, and only its
suite, offset and length and each suite's counts are kept until the suites are
written out in order. Text from rows (sample ids, details,
messages) is XML-escaped, and characters XML 1.0 cannot carry at all (most
control characters, lone surrogates) are replaced by ``\xNN``-style escapes.
"""

from __future__ import annotations

import re
import tempfile
import xml.etree.ElementTree as ET  # builds and writes only; nothing is parsed
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from gradebox.grade import Grade
from gradebox.runs.passk import pass_at_k
from gradebox.runs.private import private_binary

__all__ = ["CaseState", "NotRun", "case_state", "to_junit", "verdict_message", "write_junit"]

CaseState = Literal["passed", "failure", "error", "skipped"]
"""What a sample becomes in JUnit."""

_DETAILED = frozenset({"contract", "gate:syntax", "claim_false"})
"""Reasons that the row's ``detail`` explains."""

# Characters outside XML 1.0's Char production, plus lone surrogates.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class NotRun:
    """A sample that has no row (skipped as a bad line, or an interrupted run)."""

    id: str
    """The sample id."""
    task: str
    """The task's id."""
    message: str
    """Why it was not run."""


def case_state(grade: Grade) -> CaseState:
    """The JUnit state of one graded sample."""
    if grade.infra:
        return "error"
    if grade.verdict.verdict == "pass":
        return "passed"
    outcomes = grade.tests.outcomes
    if grade.verdict.verdict != "fail" and all(o == "not_run" for o in outcomes):
        return "skipped"
    return "failure"


def to_junit(
    grades: Iterable[Grade], *, name: str = "gradebox", not_run: Sequence[NotRun] = ()
) -> ET.ElementTree[ET.Element]:
    """Build the JUnit document.

    Args:
        grades: The graded samples.
        name: The ``testsuites`` name.
        not_run: Samples without a row, reported as skipped.

    Returns:
        The XML tree (``testsuites`` root).
    """
    by_task: dict[str, list[Grade]] = {}
    for grade in grades:
        by_task.setdefault(grade.task, []).append(grade)
    missing: dict[str, list[NotRun]] = {}
    for item in not_run:
        missing.setdefault(item.task, []).append(item)
    root = ET.Element("testsuites", name=_text(name))
    for task in sorted(by_task.keys() | missing.keys()):
        root.append(_suite(task, by_task.get(task, []), missing.get(task, [])))
    _total(root, root.findall("testsuite"))
    return ET.ElementTree(root)


def write_junit(
    grades: Iterable[Grade],
    path: Path,
    *,
    name: str = "gradebox",
    not_run: Sequence[NotRun] = (),
) -> None:
    """Write the JUnit XML report to ``path`` (UTF-8, with an XML declaration).

    The same bytes as :func:`to_junit`'s tree, indented, but the grades are read
    once and not held (see the module docstring).

    Args:
        grades: The graded samples.
        path: Where to write.
        name: The ``testsuites`` name.
        not_run: Samples without a row, reported as skipped.
    """
    missing: dict[str, list[NotRun]] = {}
    for item in not_run:
        missing.setdefault(item.task, []).append(item)
    with tempfile.TemporaryFile() as spool:
        suites: dict[str, _Suite] = {}  # one suite per task id
        for grade in grades:
            suite = suites.get(grade.task) or suites.setdefault(grade.task, _Suite())
            suite.add(grade, _case(grade.task, grade), spool)
        for task, items in missing.items():
            suite = suites.get(task) or suites.setdefault(task, _Suite())
            for item in items:
                suite.add(None, _missing(task, item), spool)
        with private_binary(Path(path)) as fh:  # failure messages: the owner's only
            _write(fh, spool, name, {task: suites[task] for task in sorted(suites)})


class _Suite:
    """One suite while its cases are spooled: counts and where each case's XML is."""

    def __init__(self) -> None:
        self.n = self.passed = self.tests = self.failures = self.errors = self.skipped = 0
        self.seconds = 0.0
        self.places = array("Q")  # offset, length of each serialized testcase

    def add(self, grade: Grade | None, case: ET.Element, spool: IO[bytes]) -> None:
        if grade is not None:
            self.n += not grade.infra
            self.passed += grade.passed
        self.tests += 1
        self.failures += case.find("failure") is not None
        self.errors += case.find("error") is not None
        self.skipped += case.find("skipped") is not None
        self.seconds += float(case.get("time", "0"))
        ET.indent(case, space=" ", level=2)
        case.tail = "\n  "
        data = b"  " + ET.tostring(case, encoding="utf-8")
        self.places.extend((spool.tell(), len(data)))
        spool.write(data)

    def element(self, task: str) -> ET.Element:
        """The ``testsuite`` element with its attributes and properties, no testcase."""
        suite = ET.Element("testsuite", name=_text(task))
        _properties(suite, self.n, self.passed)
        for key, value in (
            ("tests", self.tests),
            ("failures", self.failures),
            ("errors", self.errors),
            ("skipped", self.skipped),
        ):
            suite.set(key, str(value))
        suite.set("time", f"{self.seconds:.3f}")
        return suite


def _write(fh: IO[bytes], spool: IO[bytes], name: str, suites: dict[str, _Suite]) -> None:
    root = ET.Element("testsuites", name=_text(name))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(getattr(s, key) for s in suites.values())))
    root.set("time", f"{sum(float(f'{s.seconds:.3f}') for s in suites.values()):.3f}")
    fh.write(b"<?xml version='1.0' encoding='utf-8'?>\n")
    if not suites:
        fh.write(ET.tostring(root, encoding="utf-8") + b"\n")
        return
    fh.write(_open_tag(root) + b"\n")
    for task, suite in suites.items():
        element = suite.element(task)
        props = element[0]
        element.remove(props)
        ET.indent(props, space=" ", level=2)
        props.tail = "\n"
        fh.write(b" " + _open_tag(element) + b"\n  " + ET.tostring(props, encoding="utf-8"))
        places = suite.places
        last = len(places) - 2
        for k in range(0, len(places), 2):
            spool.seek(places[k])
            data = spool.read(places[k + 1])
            fh.write(data[:-3] + b"\n " if k == last else data[:-2])  # the last closes the suite
        fh.write(b"</testsuite>\n")
    fh.write(b"</testsuites>\n")


def _open_tag(element: ET.Element) -> bytes:
    """``<tag attr="...">`` of an element serialized with its attributes and no child."""
    data: bytes = ET.tostring(element, encoding="utf-8", short_empty_elements=False)
    return data[: data.rindex(b"</")]


def _suite(task: str, grades: Sequence[Grade], missing: Sequence[NotRun]) -> ET.Element:
    suite = ET.Element("testsuite", name=_text(task))
    _properties(suite, sum(not g.infra for g in grades), sum(g.passed for g in grades))
    for grade in grades:
        suite.append(_case(task, grade))
    for item in missing:
        suite.append(_missing(task, item))
    _total(suite, suite.findall("testcase"))
    return suite


def _properties(suite: ET.Element, n: int, c: int) -> None:
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="n", value=str(n))
    ET.SubElement(props, "property", name="passed", value=str(c))
    p1 = pass_at_k(n, c, 1)
    ET.SubElement(props, "property", name="pass@1", value="n/a" if p1 is None else f"{p1:.4f}")


def _missing(task: str, item: NotRun) -> ET.Element:
    case = ET.Element("testcase", name=_text(item.id), classname=_classname(task))
    ET.SubElement(case, "skipped", message=_text(item.message, 500))
    return case


def _case(task: str, grade: Grade) -> ET.Element:
    case = ET.Element("testcase", name=_text(grade.id), classname=_classname(task))
    case.set("time", _seconds(grade.tests.latency_ms))
    state = case_state(grade)
    reason = grade.verdict.reason
    if state == "error":
        child = ET.SubElement(case, "error", type="infra_error")
        child.set("message", _text(grade.tests.infra_error or "infrastructure error", 500))
    elif state == "failure":
        kind = reason if grade.verdict.verdict == "fail" else f"needs_review:{reason}"
        child = ET.SubElement(case, "failure", type=_text(kind))
        child.set("message", _text(verdict_message(grade), 500))
    elif state == "skipped":
        child = ET.SubElement(case, "skipped", message=_text(verdict_message(grade), 500))
    if state != "passed":
        child.text = _text(_details(grade))
    return case


def verdict_message(grade: Grade) -> str:
    """One line that says why a sample has its verdict, e.g. ``fail (hidden_tests): 1 wrong``."""
    verdict, reason, t = grade.verdict.verdict, grade.verdict.reason, grade.tests
    head = f"{verdict} ({reason})"
    if reason == "hidden_tests" and t.outcomes:
        bad = [o for o in t.outcomes if o != "ok"]
        kinds = ", ".join(f"{bad.count(k)} {k}" for k in dict.fromkeys(bad))
        return f"{head}: {len(bad)} of {len(t.outcomes)} hidden cases not ok ({kinds})"
    if reason == "gate:banned_import" and t.gate is not None and t.gate.banned:
        return f"{head}: imports {', '.join(t.gate.banned)}"
    if reason in _DETAILED and t.detail:
        return f"{head}: {t.detail}"
    if reason == "infra_error" and t.infra_error:
        return f"{head}: {t.infra_error}"
    return head


def _details(grade: Grade) -> str:
    t = grade.tests
    lines = [verdict_message(grade)]
    if t.outcomes:
        lines.append("outcomes: " + " ".join(f"{i}:{o}" for i, o in enumerate(t.outcomes)))
    if t.gate is not None:
        banned = ", ".join(t.gate.banned) or "none"
        lines.append(
            f"gate: syntax {t.gate.syntax}, contract {t.gate.contract}, banned imports {banned}"
        )
    if t.claim != "none":
        lines.append(f"claim: {t.claim}")
    if grade.static is not None:
        for f in grade.static.findings:
            lines.append(f"static: line {f.line}: [{f.severity}] {f.layer}/{f.rule}: {f.message}")
    judge = grade.judge
    if judge is not None and judge.status != "skipped":
        lines.append(f"judge: {judge.status} {judge.verdict or ''}".rstrip())
    return "\n".join(lines)


def _total(parent: ET.Element, children: Sequence[ET.Element]) -> None:
    """Set ``tests``, ``failures``, ``errors``, ``skipped`` and ``time`` from the children."""
    if parent.tag == "testsuites":
        counts = {
            key: sum(int(s.get(key, "0")) for s in children)
            for key in ("tests", "failures", "errors", "skipped")
        }
        counts.pop("skipped")  # the XSD has no 'skipped' on testsuites
        seconds = sum(float(s.get("time", "0")) for s in children)
    else:
        counts = {
            "tests": len(children),
            "failures": sum(c.find("failure") is not None for c in children),
            "errors": sum(c.find("error") is not None for c in children),
            "skipped": sum(c.find("skipped") is not None for c in children),
        }
        seconds = sum(float(c.get("time", "0")) for c in children)
    for key, value in counts.items():
        parent.set(key, str(value))
    parent.set("time", f"{seconds:.3f}")


def _seconds(latency_ms: Any) -> str:
    if isinstance(latency_ms, int | float) and latency_ms >= 0:
        return f"{latency_ms / 1000:.3f}"
    return "0.000"


def _classname(task: str) -> str:
    return _text(f"gradebox.{task}")


def _text(value: str, limit: int = 100_000) -> str:
    """XML-safe text: characters XML cannot carry are escaped, and the text is capped."""
    safe = _NOT_XML.sub(lambda m: _escape_char(m.group()), value)
    return safe if len(safe) <= limit else safe[: limit - 1] + "\u2026"


def _escape_char(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
