"""``unittest`` is loaded by a worker only once a job has test programs.

It was ~35 ms of every worker's start (a third of the harness's), and only
``kind: program`` cases use it. Init loads it before it forks the first child of
such a job (the supervisor asks it to), so every later child inherits it, and
the test and its watch use the standard library's module, loaded before any
candidate code ran.
"""

from __future__ import annotations

from typing import Any

from sandbox.compare import judge_case
from sandbox.types import HiddenCase, Limits, make_case

LIMITS = Limits(case_timeout_s=2.0, candidate_timeout_s=10.0)

LOADED = (
    "import sys\n"
    "def loaded():\n"
    "    return sorted(m for m in sys.modules if m == 'unittest' or m.startswith('unittest.'))\n"
)
PROGRAM = (
    "import unittest\n"
    "class T(unittest.TestCase):\n"
    "    def test_it(self):\n"
    "        self.assertEqual(loaded(), loaded())\n"
)


def _loaded(sb: Any) -> Any:
    res = sb.run(LOADED, "loaded", [make_case("loaded")])
    assert res.infra_error is None, res.infra_error
    return res.observations[0].value


def test_a_worker_loads_unittest_only_for_test_programs(fresh_sandbox: Any) -> None:
    sb = fresh_sandbox()
    assert _loaded(sb) == []  # function cases: not loaded at the worker's start
    case = HiddenCase("loaded", (), {}, kind="program", program=PROGRAM, test="T.test_it")
    res = sb.run(LOADED, "loaded", [case])
    assert res.infra_error is None, res.infra_error
    assert judge_case(case, res.observations[0]).outcome == "ok"
    # Init loaded it for that job: the next children are forked with it in place.
    after = _loaded(sb)
    assert "unittest" in after and "unittest.case" in after
