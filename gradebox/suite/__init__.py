"""Checks that decide whether a hidden suite can be trusted, before it decides anything.

- :func:`check_suite`: the reference passes deterministically, naive stubs
  fail, mutants of the reference are killed, the input space is covered, and
  no hidden case leaks into the public prompt (:func:`render_text` for people,
  ``SuiteReport.to_json()`` for tools).
- :func:`derive_limits` / :func:`plan_limits`: per-case time limits from the
  reference's measured time on this machine, with a record for the manifest.
- :func:`gradebox.suite.properties.generate_cases` and
  :func:`~gradebox.suite.properties.shrink_counterexample`: property-based hidden
  cases from declarative Hypothesis strategies (``properties.jsonl``), with the
  reference as the oracle; :func:`extend_tasks` adds them to the tasks for
  grading, :func:`freeze_cases` turns them into hidden lines for review.

Every piece of code (references, stubs, mutants, candidates) runs in the
sandbox; nothing here executes it in this process. The property functions
import Hypothesis; import them from :mod:`gradebox.suite.properties` to keep
the start-up of the rest free of it.
"""

from gradebox.suite.check import check_suite
from gradebox.suite.grow import case_to_json, extend_tasks, freeze_cases
from gradebox.suite.limits import LimitsPlan, derive_limits, plan_limits
from gradebox.suite.references import Reference, load_references
from gradebox.suite.render import render_text
from gradebox.suite.report import CODES, Finding, SuiteReport, TaskReport

__all__ = [
    "CODES",
    "Finding",
    "LimitsPlan",
    "Reference",
    "SuiteReport",
    "TaskReport",
    "case_to_json",
    "check_suite",
    "derive_limits",
    "extend_tasks",
    "freeze_cases",
    "load_references",
    "plan_limits",
    "render_text",
]
