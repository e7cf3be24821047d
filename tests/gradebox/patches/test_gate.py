"""The patch gate end to end on the fixture repository: real git, real bubblewrap, real pytest.

Each "done means" case of the gate is one test here; the fixture repository is
described in ``conftest.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gradebox.patches import TestIds, run_gate

CONFTEST_FORGE = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""


def edit(path: str, old: str, new: str):
    def do(root: Path) -> None:
        p = root / path
        p.write_text(p.read_text().replace(old, new))

    return do


def both(*edits):
    def do(root: Path) -> None:
        for e in edits:
            e(root)

    return do


def write(path: str, text: str):
    def do(root: Path) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)

    return do


def test_the_fix_passes(repo, config, spec, fix):
    row = run_gate(spec(repo, repo.patch(fix)), config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["apply"]["strategy"] == "exact"
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "F2P"}
    assert set(row["tests"]["pass_to_pass"].values()) == {"P2P"}
    assert row["tests"]["head"]["collected"] == 3
    assert row["diff"]["files"] == 1 and row["diff"]["added"] == 1


def test_a_fix_that_breaks_another_test_fails_with_the_p2f_listed(repo, config, spec, fix):
    breaks = edit("calc/ops.py", "return [x * k for x in xs]", "return [x + k for x in xs]")
    row = run_gate(spec(repo, repo.patch(both(fix, breaks))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "pass_to_pass"), row
    assert row["tests"]["pass_to_pass"]["tests/test_ops.py::test_scale"] == "P2F"
    assert row["tests"]["by_category"]["P2F"] == ["tests/test_ops.py::test_scale"]
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "F2P"}


def test_without_the_fix_the_fail_to_pass_test_decides(repo, config, spec):
    noop = edit("calc/ops.py", '"""Small arithmetic helpers."""', '"""Arithmetic helpers."""')
    row = run_gate(spec(repo, repo.patch(noop)), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "fail_to_pass")
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "F2F"}


def test_a_conftest_that_rewrites_reports_fails_as_touching_tests(repo, config, spec):
    row = run_gate(spec(repo, repo.patch(write("conftest.py", CONFTEST_FORGE))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_touches_tests"), row
    assert row["apply"]["protected"] == ["conftest.py"]
    assert row["tests"] is None  # nothing of the patch ever ran


def test_stripping_protected_files_grades_the_rest(repo, config, spec, fix):
    patch = repo.patch(both(fix, write("tests/conftest.py", CONFTEST_FORGE)))
    cfg = dataclasses.replace(config, protect_mode="strip")
    row = run_gate(spec(repo, patch), cfg).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["apply"]["stripped"] == ["tests/conftest.py"]
    # and the forging conftest alone, stripped, leaves the bug in place
    row = run_gate(spec(repo, repo.patch(write("conftest.py", CONFTEST_FORGE))), cfg).to_row()
    assert row["verdict"] == "fail" and row["reason"] in ("empty_patch", "fail_to_pass")


def test_an_unprotected_forging_conftest_trips_the_tripwires(repo, config, spec):
    row = run_gate(
        spec(repo, repo.patch(write("conftest.py", CONFTEST_FORGE)), protect=()), config
    ).to_row()
    # The forge works in-process (every report says passed, the exit code agrees):
    # with protection switched off, the planted tests that must fail pass too, and
    # the tamper scan still names the lines.
    assert (row["verdict"], row["reason"]) == ("needs_review", "tests_unreliable"), row
    assert row["tests"]["tripwires"] == "tripped", row["tests"]
    assert {"path": "conftest.py", "line": 1, "rule": "T001", "what": "imports pytest"} in row[
        "tamper"
    ]


def test_deleting_the_failing_test_fails(repo, config, spec):
    drop = edit("tests/test_ops.py", "def test_mean():\n    assert mean([1, 2, 3]) == 2\n", "")
    patch = repo.patch(drop)
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_touches_tests")
    row = run_gate(spec(repo, patch, protect=()), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "fail_to_pass"), row
    assert row["tests"]["fail_to_pass"] == {"tests/test_ops.py::test_mean": "not_run"}
    assert row["tests"]["not_run"] == ["tests/test_ops.py::test_mean"]


def test_a_patch_that_does_not_apply_is_apply_failed(repo, config, spec):
    patch = (
        "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
        "@@ -1,3 +1,3 @@\n def nothing_like_this():\n-    return 1\n+    return 2\n pass\n"
    )
    row = run_gate(spec(repo, patch), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "apply_failed"), row
    assert row["apply"]["strategy"] is None and row["apply"]["detail"]


def test_an_empty_patch_fails_as_empty(repo, config, spec):
    row = run_gate(spec(repo, ""), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "empty_patch")


def test_fuzzy_context_falls_down_the_ladder(repo, config, spec, fix):
    patch = repo.patch(fix).replace(" def mean(xs):", " def mean(values):")
    row = run_gate(spec(repo, patch), config).to_row()
    assert row["apply"]["strategy"] == "fuzz", row
    assert row["verdict"] == "pass"


def test_head_revision_input_is_the_same_as_its_diff(repo, config, spec, fix):
    head = repo.commit(fix, "fix mean")
    row = run_gate(dataclasses.replace(spec(repo, None), head=head), config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row


def test_hidden_test_patch_goes_in_after_and_touched_tests_are_restored(repo, config, spec, fix):
    hidden = repo.patch(
        edit(
            "tests/test_ops.py",
            "def test_mean():",
            "def test_mean_one():\n    assert mean([4]) == 4\n\n\ndef test_mean():",
        )
    )
    weaken = edit("tests/test_ops.py", "assert mean([1, 2, 3]) == 2", "assert True")
    ids = TestIds(("tests/test_ops.py::test_mean", "tests/test_ops.py::test_mean_one"), "auto")
    cheat = spec(repo, repo.patch(weaken), tests=ids, test_patch=hidden, protect=())
    row = run_gate(cheat, config).to_row()
    assert row["apply"]["restored"] == ["tests/test_ops.py"]
    assert row["apply"]["test_patch"] == "applied"
    assert row["tests"]["fail_to_pass"] == {
        "tests/test_ops.py::test_mean": "F2F",
        "tests/test_ops.py::test_mean_one": "F2F",
    }
    honest = spec(repo, repo.patch(fix), tests=ids, test_patch=hidden)
    row = run_gate(honest, config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert set(row["tests"]["pass_to_pass"]) == set(
        ["tests/test_ops.py::test_add", "tests/test_ops.py::test_scale"]
    )


def test_a_flaky_pass_to_pass_test_is_quarantined_not_failing(flaky_repo, config, spec, fix):
    # test_coin fails half of the time: ten base runs all agreeing has odds 2/1024.
    cfg = dataclasses.replace(config, base_runs=10)
    ids = TestIds(("tests/test_ops.py::test_mean",), "auto")
    row = run_gate(spec(flaky_repo, flaky_repo.patch(fix), tests=ids), cfg).to_row()
    assert row["tests"]["quarantined"] == ["tests/test_flaky.py::test_coin"], row
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert "tests/test_flaky.py::test_coin" not in row["tests"]["pass_to_pass"]
    assert row["tests"]["base_runs"] == 10
    listed = TestIds(("tests/test_ops.py::test_mean",), ("tests/test_flaky.py::test_coin",))
    row = run_gate(spec(flaky_repo, flaky_repo.patch(fix), tests=listed), cfg).to_row()
    assert row["verdict"] == "pass" and row["tests"]["pass_to_pass"] == {}


def test_a_given_environment_is_used_as_is(repo, config, spec, fix, env_cache):
    run_gate(spec(repo, repo.patch(fix)), config)  # builds one into the cache
    built = next(p for p in env_cache.iterdir() if (p / ".gradebox-complete").exists())
    row = run_gate(spec(repo, repo.patch(fix)), dataclasses.replace(config, env=built))
    assert row.to_row()["timing"]["env"] == "given" and row.verdict == "pass"


def test_a_lockfile_pinned_to_a_url_is_the_environments_failure_not_the_patchs(
    tmp_path, config, spec, fix, repo_with
):
    from_url = "pytest @ https://files.example.invalid/download\n"
    bad = repo_with(tmp_path / "r", {"requirements.txt": from_url})
    row = run_gate(spec(bad, bad.patch(fix)), config)
    assert (row.verdict, row.reason) == ("needs_review", "infra_error")
    assert row.infra_error is not None and row.infra_error.startswith("env: ")
    assert "pinned to a URL" in row.infra_error


def test_a_patch_made_on_a_later_revision_applies_with_3way(repo, config, spec, fix):
    import subprocess

    def git(*args: str) -> str:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(repo.path), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
        out = subprocess.run(["git", *args], cwd=repo.path, env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        return out.stdout

    # A later revision edits a context line of the fix; the patch is made there.
    later = edit("calc/ops.py", "\n\n\ndef mean(xs):", "\n\n# averages\ndef mean(xs):")
    sha = repo.commit(later, "later")
    git("checkout", "-q", sha)
    fix(repo.path)
    patch = git("diff", "--full-index")
    git("checkout", "-q", "--", ".")
    git("checkout", "-q", "main")
    row = run_gate(spec(repo, patch), config).to_row()
    assert row["apply"]["strategy"] == "3way", row
    assert row["verdict"] == "pass", row


NEW_TEST = "\n\ndef test_mean_of_one():\n    assert mean([4]) == 4\n"


def test_a_fix_with_its_own_new_test_passes_and_the_new_test_is_reported(repo, config, spec, fix):
    add = edit("tests/test_ops.py", "    assert mean([1, 2, 3]) == 2\n",
               "    assert mean([1, 2, 3]) == 2\n" + NEW_TEST)  # fmt: skip
    row = run_gate(spec(repo, repo.patch(both(fix, add))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["tests"]["added"] == {"tests/test_ops.py::test_mean_of_one": "N2P"}
    assert row["apply"]["added_tests"] == ["tests/test_ops.py"]
    assert row["tests"]["tripwires"] == "ok"
    new_file = write("tests/test_more.py", "from calc.ops import mean\n" + NEW_TEST)
    row = run_gate(spec(repo, repo.patch(both(fix, new_file))), config).to_row()
    assert row["verdict"] == "pass" and row["tests"]["added"] == {
        "tests/test_more.py::test_mean_of_one": "N2P"
    }, row


def test_a_new_test_that_fails_fails_the_gate(repo, config, spec, fix):
    failing = NEW_TEST.replace("4\n", "5\n")
    bad = write("tests/test_more.py", "from calc.ops import mean\n" + failing)
    row = run_gate(spec(repo, repo.patch(both(fix, bad))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "new_tests"), row


def test_editing_an_existing_test_is_protected_with_its_lines(repo, config, spec, fix):
    weaken = edit("tests/test_ops.py", "assert mean([1, 2, 3]) == 2", "assert mean([1, 2, 3]) > 0")
    row = run_gate(spec(repo, repo.patch(both(fix, weaken))), config).to_row()
    assert (row["verdict"], row["reason"]) == ("fail", "patch_touches_tests"), row
    assert "tests/test_ops.py:13 removed or changed" in row["apply"]["protected_lines"]
    assert "tests/test_ops.py:13" in row["detail"]


def test_a_measured_regression_never_passes_whatever_the_pass_to_pass_list(repo, config, spec, fix):
    breaks = edit("calc/ops.py", "return [x * k for x in xs]", "return [x + k for x in xs]")
    ids = TestIds(("tests/test_ops.py::test_mean",), ("tests/test_ops.py::test_add",))
    row = run_gate(spec(repo, repo.patch(both(fix, breaks)), tests=ids), config).to_row()
    assert row["tests"]["by_category"]["P2F"] == ["tests/test_ops.py::test_scale"], row
    assert (row["verdict"], row["reason"]) == ("fail", "pass_to_pass"), row


def test_head_and_base_take_branch_names_and_tags(repo, config, spec, fix):
    repo.commit(fix, "fix-branch")
    from tests.gradebox.patches.conftest import git

    git(repo.path, "tag", "v-base", repo.base)
    gate = dataclasses.replace(spec(repo, None), head="fix-branch", base="v-base")
    row = run_gate(gate, config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["apply"]["strategy"] == "head"


def test_a_grader_with_a_strict_umask_still_gates(repo, config, spec, fix, env_cache):
    import os

    cache = env_cache / "strict-umask"
    old = os.umask(0o077)  # trees and environments must still be readable by the sandbox
    try:
        row = run_gate(spec(repo, repo.patch(fix)), dataclasses.replace(config, env_cache=cache))
    finally:
        os.umask(old)
    assert (row.verdict, row.reason) == ("pass", "ok"), row.to_row()


MIXIN = """from calc.ops import mean


class MeanChecks:
    def test_mean_small(self):
        assert mean([1, 2, 3]) == 2
"""


def test_tests_inherited_from_a_mixin_in_another_file_get_the_collected_ids(
    tmp_path, config, spec, fix, repo_with
):
    # The JUnit ``file`` attribute names tests/mixins.py for both classes' test.
    cases = "from tests.mixins import MeanChecks\n\n\nclass TestA(MeanChecks):\n    pass\n\n\n"
    cases += "class TestB(MeanChecks):\n    pass\n"
    r = repo_with(tmp_path / "r", {"tests/mixins.py": MIXIN, "tests/test_inherit.py": cases})
    ids = TestIds(("tests/test_inherit.py::TestA::test_mean_small",), "auto")
    row = run_gate(spec(r, r.patch(fix), tests=ids), config).to_row()
    assert (row["verdict"], row["reason"]) == ("pass", "ok"), row
    assert row["tests"]["fail_to_pass"] == {"tests/test_inherit.py::TestA::test_mean_small": "F2P"}
    assert "tests/test_inherit.py::TestB::test_mean_small" in row["tests"]["by_category"]["F2P"]


def test_a_patch_that_breaks_the_tests_import_fails_and_does_not_trip_the_wires(
    repo, config, spec
):
    broken = edit("calc/ops.py", "def add(a, b):", "def add(a, b)")  # a syntax error
    row = run_gate(spec(repo, repo.patch(broken)), config).to_row()
    # The deciding module cannot be collected; the planted module still runs.
    assert (row["verdict"], row["reason"]) == ("fail", "fail_to_pass"), row
    assert row["tests"]["tripwires"] == "ok", row["tests"]
