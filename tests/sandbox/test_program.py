"""Test-program cases (``kind: program``) in the real sandbox: honest candidates pass, broken
ones fail, and the known forgeries of a candidate sharing the test's process are detected,
each with an attack program in ``attacks/`` (exit codes, exiting early, frame walking,
``__eq__`` objects, monkeypatching ``unittest``). What cannot be detected is a strict xfail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.compare import judge_case
from sandbox.types import HiddenCase, Limits

LIMITS = Limits(case_timeout_s=2.0, candidate_timeout_s=10.0, memory_mb=512)
ATTACKS = Path(__file__).parent / "attacks"

# A HumanEval-style check split into cases, and a unittest class (BigCodeBench's shape).
PROGRAM = """
import unittest


def _gbx_check_0():
    candidate = f
    assert candidate(2) == 4


def _gbx_check_1():
    candidate = f
    secret = 9
    assert candidate(3) == secret


def _gbx_check_2():
    candidate = f
    assert abs(candidate(4) - 16) < 1e-6


def _gbx_check_3():
    import fractions
    import math

    candidate = f
    assert math.isclose(candidate(2), 4.0)
    assert fractions.Fraction(candidate(3)) == 9


class TestCases(unittest.TestCase):
    def setUp(self):
        self.n = 5

    def test_square(self):
        self.assertEqual(f(self.n), 25)

    def test_truth(self):
        self.assertTrue(f(1) == 1)
"""
TESTS = [
    "_gbx_check_0",
    "_gbx_check_1",
    "_gbx_check_2",
    "_gbx_check_3",
    "TestCases.test_square",
    "TestCases.test_truth",
]


def cases() -> list[HiddenCase]:
    return [HiddenCase("f", (), {}, kind="program", program=PROGRAM, test=t) for t in TESTS]


def run(sb: Any, code: str) -> tuple[list[str], list[str]]:
    cs = cases()
    res = sb.run(code, "f", cs)
    assert res.infra_error is None, res.infra_error
    judged = [judge_case(c, o) for c, o in zip(cs, res.observations, strict=True)]
    return [j.outcome for j in judged], [j.detail for j in judged]


def test_honest_candidate_passes_every_test(shared_sandbox: Any) -> None:
    assert run(shared_sandbox, "def f(x):\n    return x * x\n")[0] == ["ok"] * 6


def test_honest_candidate_using_stdlib_frames_itself_passes(shared_sandbox: Any) -> None:
    code = (
        "import collections, logging, traceback, typing\n"
        "P = collections.namedtuple('P', 'v')\n"
        "def f(x):\n"
        "    T = typing.TypeVar('T')\n"
        "    logging.getLogger('c').debug('x=%s', x)\n"
        "    try:\n        raise ValueError\n"
        "    except ValueError:\n        traceback.format_exc()\n"
        "    return P(x * x).v\n"
    )
    assert run(shared_sandbox, code)[0] == ["ok"] * 6


def test_broken_candidate_fails_the_tests_it_breaks(shared_sandbox: Any) -> None:
    outcomes, details = run(shared_sandbox, "def f(x):\n    return x + 2\n")
    assert outcomes == ["ok", "wrong", "wrong", "wrong", "wrong", "wrong"]
    assert details[1] == "the test failed"
    outcomes, _ = run(shared_sandbox, "def f(x):\n    raise KeyError(x)\n")
    assert outcomes == ["error"] * 6


ATTACK_OUTCOMES = {
    "program_exit_early": {"crash", "error"},
    "program_exit_at_import": {"crash"},
    "program_frame_walk": {"wrong"},
    "program_inspect_stack": {"wrong"},
    "program_always_equal": {"wrong", "error"},  # Anything - 16 raises in check 2
    "program_patch_unittest": {"wrong"},
    "program_shadow_builtins": {"wrong"},
    "program_fake_module": {"wrong"},
    "program_trace_frames": {"wrong"},
}


@pytest.mark.parametrize("name", ATTACK_OUTCOMES, ids=list(ATTACK_OUTCOMES))
def test_known_forgeries_do_not_pass(shared_sandbox: Any, name: str) -> None:
    outcomes, details = run(shared_sandbox, (ATTACKS / f"{name}.py").read_text())
    assert "ok" not in outcomes, (outcomes, details)
    assert set(outcomes) <= ATTACK_OUTCOMES[name], (outcomes, details)


def test_the_sandbox_still_grades_after_the_attacks(shared_sandbox: Any) -> None:
    for name in ATTACK_OUTCOMES:
        run(shared_sandbox, (ATTACKS / f"{name}.py").read_text())
    assert run(shared_sandbox, "def f(x):\n    return x * x\n")[0] == ["ok"] * 6


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a candidate sharing the test program's process can publish forged "
    "results for every test before any runs (SECURITY.md, 'Test programs')",
)
def test_forged_result_frames_in_a_test_program_are_detected(shared_sandbox: Any) -> None:
    outcomes, _ = run(shared_sandbox, (ATTACKS / "program_forge_frames.py").read_text())
    assert "ok" not in outcomes
