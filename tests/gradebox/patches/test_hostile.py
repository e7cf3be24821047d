"""Hostile patches against the gate: each attack a patch that has read the gate's code would try.

What a patch can do to the pytest process it shares is bounded by the sandbox
(no network, nothing persists, limits) and detected by the cross-checks and the
tamper scan; the one forge that gets through both is written down as a strict
xfail (see SECURITY.md, "what stays open").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gradebox.patches import run_gate
from sandbox.command import CommandLimits

FORGED = (
    '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="3">'
    '<testcase classname="tests.test_ops" name="test_add" file="tests/test_ops.py"/>'
    '<testcase classname="tests.test_ops" name="test_scale" file="tests/test_ops.py"/>'
    '<testcase classname="tests.test_ops" name="test_mean" file="tests/test_ops.py"/>'
    "</testsuite></testsuites>"
)


def append(path: str, text: str):
    def do(root: Path) -> None:
        p = root / path
        p.write_text(p.read_text() + text)

    return do


def test_exiting_early_with_success_is_never_a_pass(repo, config, spec):
    patch = repo.patch(append("calc/__init__.py", "import os\nos._exit(0)\n"))
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row
    assert "no test results were parsed" in row["detail"] or "no JUnit XML" in row["detail"]


def test_a_forged_junit_xml_contradicts_the_exit_code(repo, config, spec):
    forge = (
        "\n\nimport atexit, sys\n\n\ndef _forge():\n"
        "    path = [a for a in sys.argv if a.startswith('--junitxml=')][0].split('=', 1)[1]\n"
        f"    open(path, 'w').write({FORGED!r})\n\n\natexit.register(_forge)\n"
    )
    row = run_gate(spec(repo, repo.patch(append("calc/ops.py", forge))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row
    assert "exited 1 but the XML lists no failing test" in row["detail"]


def test_a_forge_that_also_fakes_the_exit_code_is_never_a_pass(repo, config, spec):
    forge = (
        "\n\nimport atexit, os, sys\n\n\ndef _forge():\n"
        "    path = [a for a in sys.argv if a.startswith('--junitxml=')][0].split('=', 1)[1]\n"
        f"    open(path, 'w').write({FORGED!r})\n    os._exit(0)\n\n\natexit.register(_forge)\n"
    )
    row = run_gate(spec(repo, repo.patch(append("calc/ops.py", forge))), config).to_row()
    # The forged report lacks the planted tests the collection listed.
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row
    assert {t["rule"] for t in row["tamper"]} >= {"T004"}


def test_an_obfuscated_forge_is_not_a_pass(repo, config, spec):
    # No flagged name appears: the report path is public (the gate's source), the
    # exit hook and the hard exit are reached through computed attribute names.
    forge = (
        "\n\nimport operator, os, threading, weakref\n\n\n"
        "def _forge():\n"
        f"    open('/tmp/gradebox-junit.xml', 'w').write({FORGED!r})\n"
        "    operator.attrgetter('_' + 'exit')(os)(0)\n\n\n"
        "class _K:\n    pass\n\n\n_k = _K()\n"
        "_keep = operator.attrgetter('fin' + 'alize')(weakref)(_k, _forge)\n"
    )
    row = run_gate(spec(repo, repo.patch(append("calc/ops.py", forge))), config).to_row()
    assert row["verdict"] != "pass", row
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row


# Flips the report of the one deciding test it knows by name (SWE-bench's
# FAIL_TO_PASS lists are public); every other test, the planted ones included,
# runs and reports as it really does. No name the tamper scan flags appears.
TARGETED = (
    "\n\nimport operator as _op, sys as _s\n\n"
    "_R = _op.attrgetter('mod' + 'ules')(_s)['_pytest.' + 'reports'].TestReport\n"
    "_orig = _R.from_item_and_call\n\n\n"
    "def _flip(item, call):\n"
    "    rep = _orig(item, call)\n"
    "    if item.name == 'test_mean' and rep.outcome == 'failed':\n"
    "        rep.outcome = 'passed'\n"
    "        rep.longrepr = None\n"
    "    return rep\n\n\n"
    "_R.from_item_and_call = staticmethod(_flip)\n"
)


@pytest.mark.xfail(
    strict=True,
    reason="known hole: code sharing the test process can flip the report of a deciding test "
    "it knows by name, leaving the planted tripwires alone (SECURITY.md, what stays open)",
)
def test_a_forge_that_flips_only_the_named_test_is_not_a_pass(repo, config, spec):
    row = run_gate(spec(repo, repo.patch(append("calc/ops.py", TARGETED))), config).to_row()
    assert row["verdict"] != "pass", row


def test_a_hanging_patch_times_out_and_fails(repo, config, spec):
    hang = append("calc/ops.py", "\n\nwhile True:\n    pass\n")
    cfg = dataclasses.replace(config, limits=CommandLimits(timeout_s=6))
    row = run_gate(spec(repo, repo.patch(hang)), cfg).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "tests_timeout"), row
    assert row["tests"]["head"]["timed_out"] is True


def test_paths_out_of_the_repository_are_refused(repo, config, spec):
    patch = (
        "diff --git a/../evil.py b/../evil.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/../evil.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_refused"), row
    assert not (repo.path.parent / "evil.py").exists()


def test_a_symlink_out_of_the_repository_is_refused(repo, config, spec):
    patch = (
        "diff --git a/calc/data b/calc/data\nnew file mode 120000\nindex 0000000..1111111\n"
        "--- /dev/null\n+++ b/calc/data\n@@ -0,0 +1 @@\n+/etc/shadow\n"
        "\\ No newline at end of file\n"
    )
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_refused"), row
    assert "symbolic link" in row["detail"]


def test_a_binary_hunk_is_refused(repo, config, spec):
    patch = (
        "diff --git a/calc/blob.bin b/calc/blob.bin\nnew file mode 100644\n"
        "index 0000000..e69de29\nGIT binary patch\nliteral 3\nKcmZ?wbY%bn0RR9100\n\nliteral 0\n"
        "HcmV?d00001\n\n"
    )
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_refused"), row


REWRITE_TESTS = (
    "import pathlib\n"
    "p = pathlib.Path('tests/test_ops.py')\n"
    "try:\n"
    "    p.write_text(p.read_text().replace('== 2', '== 1.5'))\n"
    "except OSError:\n"
    "    pass\n"
)


def test_startup_hooks_are_protected(repo, config, spec):
    patch = repo.patch(append_new("sitecustomize.py", REWRITE_TESTS))
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_touches_tests"), row


def test_the_tests_are_read_only_inside_the_sandbox(repo, config, spec):
    # Unprotected, a startup hook runs before pytest and tries to rewrite the
    # failing test on disk; the test files are mounted read-only, so it cannot.
    patch = repo.patch(append_new("sitecustomize.py", REWRITE_TESTS))
    row = run_gate(spec(repo, patch, protect=("conftest.py",)), config).to_row()
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "F2F"}, row
    assert row["verdict"] == "fail"


def append_new(path: str, text: str):
    def do(root: Path) -> None:
        (root / path).write_text(text)

    return do


BOMB = (
    '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
    '<testsuites><testsuite><testcase classname="tests.test_ops" name="test_mean" '
    'file="tests/test_ops.py">&c;</testcase></testsuite></testsuites>'
)


def test_an_entity_bomb_in_the_junit_xml_is_refused_not_expanded(repo, config, spec):
    forge = (
        "\n\nimport sys, weakref\n\n\nclass _K:\n    pass\n\n\n_k = _K()\n\n\n"
        "def _bomb():\n"
        "    path = [a for a in sys.argv if a.startswith('--junitxml=')][0].split('=', 1)[1]\n"
        f"    open(path, 'w').write({BOMB!r})\n\n\n"
        "_keep = weakref.finalize(_k, _bomb)\n"
    )
    row = run_gate(spec(repo, repo.patch(append("calc/ops.py", forge))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row
    assert "does not parse" in row["detail"]
