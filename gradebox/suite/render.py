"""The human-readable form of a :class:`~gradebox.suite.report.SuiteReport`."""

from __future__ import annotations

import textwrap

from gradebox.suite.coverage import CoverageItem
from gradebox.suite.report import Finding, SuiteReport, TaskReport

__all__ = ["render_text"]


def render_text(report: SuiteReport, *, details: bool = True) -> str:
    """Render a suite report as text: one block per task, then a summary line.

    Args:
        report: The report.
        details: Show stub code and mutant diffs under their findings.

    Returns:
        The text, ending with a newline.
    """
    blocks = [_task(t, details=details) for t in report.tasks]
    bad = sum(not t.trustworthy for t in report.tasks)
    warnings = sum(f.severity == "warn" for f in report.findings)
    summary = (
        f"suite check: {_count(len(report.tasks), 'task')}, {len(report.tasks) - bad} trustworthy, "
        f"{bad} not; {_count(warnings, 'warning')}; {report.seconds:.1f} s "
        f"({report.settings.get('backend', '?')})"
    )
    if report.infra_errors:
        summary += f"; {report.infra_errors} sandbox runs failed (infrastructure): incomplete"
    return "\n\n".join([*blocks, summary]) + "\n"


def _task(t: TaskReport, *, details: bool) -> str:
    verdict = "trustworthy" if t.trustworthy else "NOT trustworthy"
    lines = [f"{t.fn}: {verdict} ({t.cases} cases)"]
    lines.append(f"  reference  {_reference(t)}")
    lines.append(f"  stubs      {_stubs(t)}")
    lines.append(f"  mutants    {_mutants(t)}")
    lines.append(f"  coverage   {_coverage(t)}")
    for f in t.findings:
        lines.extend(_finding(f, details=details))
    if t.infra_errors:
        lines.append(f"  ! {t.infra_errors} sandbox runs failed (infrastructure)")
    return "\n".join(lines)


def _reference(t: TaskReport) -> str:
    ref = t.reference
    if ref is None:
        return "none given"
    state = "deterministic" if not ref.flaky else _count(len(ref.flaky), "flaky case")
    return f"{ref.runs} runs: {state}, passes {len(ref.trusted)}/{t.cases} cases every time"


def _stubs(t: TaskReport) -> str:
    passing = [s.stub.id for s in t.stubs if s.survived]
    if not passing:
        return f"{_count(len(t.stubs), 'stub')}, each fails at least one case"
    verb = "passes" if len(passing) == 1 else "pass"
    return f"{len(passing)} of {len(t.stubs)} stubs {verb} every case: {', '.join(passing)}"


def _mutants(t: TaskReport) -> str:
    m = t.mutation
    if m.skipped is not None:
        return f"not run: {m.skipped}"
    judged = m.killed + len(m.survived)
    equivalent = len(m.results) - judged
    text = f"{m.killed}/{judged} killed (score {m.score:.2f})" if m.score is not None else "none"
    return text + (f", {equivalent} declared equivalent" if equivalent else "")


def _coverage(t: TaskReport) -> str:
    c = t.coverage
    items = [
        ("empty", c.empty),
        ("boundary", c.boundary),
        ("large", c.large),
        ("wrong-type", c.wrong_type),
    ]
    return " | ".join(f"{name} {_cov(item)}" for name, item in items)


def _cov(item: CoverageItem) -> str:
    if item.status != "present":
        return item.status
    shown = ",".join(str(i) for i in item.cases[:4]) + ("..." if len(item.cases) > 4 else "")
    return f"present (case {shown})"


def _finding(f: Finding, *, details: bool) -> list[str]:
    mark = "F" if f.severity == "fail" else "W"
    lines = [f"  {mark} {f.code} {f.name}: {f.message}"]
    if details and f.detail:
        lines.append(textwrap.indent(f.detail.rstrip("\n"), "      "))
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
