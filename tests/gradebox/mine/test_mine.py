"""Mining small repositories built with real git: every way a commit ends, tests in the sandbox."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gradebox.mine import DROP_REASONS, GateCheck, MineConfig, Miner, Validation, report
from gradebox.mine import engine as engine_module
from gradebox.mine import testsets as testsets_module
from gradebox.patches.testrun import Status, SuiteRun

BIG = "\n".join(f"X{i} = {i}" for i in range(600)) + "\n"
FLAKY_ID = "tests/test_flaky.py::test_flaky"


def _every_reason(h: Any) -> dict[str, str]:
    """Commits on top of the root, one per way mining can end; sha -> expected outcome."""
    ops = (h.root / "calc" / "ops.py").read_text()
    tests = (h.root / "tests" / "test_ops.py").read_text()
    want = {h.shas["root"]: "root_commit"}
    want[h.commit("docs", {"README.md": "calc\n"})] = "no_tests"
    want[h.commit("tests only", {"tests/test_more.py": "def test_more():\n    pass\n"})] = (
        "no_source"
    )
    want[h.fix_mean()] = "kept"
    ops = (h.root / "calc" / "ops.py").read_text()
    tests = (h.root / "tests" / "test_ops.py").read_text()
    want[
        h.commit("big", {"calc/big.py": BIG, "tests/test_big.py": "def test_big():\n    pass\n"})
    ] = "too_big"
    want[h.commit("binary", {"calc/logo.png": b"\x89PNG\r\n\x00\x01",
                             "calc/ops.py": ops + "\nLOGO = 'logo.png'\n",
                             "tests/test_logo.py": "def test_logo():\n    pass\n"})] = (
        "does_not_apply"
    )  # fmt: skip
    ops = (h.root / "calc" / "ops.py").read_text()
    want[h.commit("no f2p", {"calc/ops.py": ops.replace("helpers", "helpers."),
                             "tests/test_ops.py": tests + "\n\ndef test_add_zero():\n"
                             "    assert add(0, 0) == 0\n"})] = "no_f2p"  # fmt: skip
    ops = (h.root / "calc" / "ops.py").read_text()
    want[h.commit("flaky", {"calc/ops.py": ops + "\n\ndef neg(a):\n    return -a\n",
                            "tests/test_flaky.py": "from calc import ops\n\n\ndef test_flaky():\n"
                            "    assert ops.neg(1) == -1\n"})] = "flaky"  # fmt: skip
    ops = (h.root / "calc" / "ops.py").read_text()
    tests = (h.root / "tests" / "test_ops.py").read_text()
    want[h.commit("regress", {"calc/ops.py": ops.replace("return a + b", "return a - b")
                              + "\n\ndef two():\n    return 2\n",
                              "tests/test_ops.py": tests + "\n\ndef test_two():\n"
                              "    from calc.ops import two\n\n    assert two() == 2\n"})] = (
        "gold_does_not_resolve"
    )  # fmt: skip
    ops = (h.root / "calc" / "ops.py").read_text()
    want[h.commit("exits", {"calc/ops.py": ops + "\n\ndef three():\n    return 3\n",
                            "tests/test_exit.py": "import os\n\n\ndef test_exit():\n"
                            "    os._exit(0)\n"})] = "tests_unreliable"  # fmt: skip
    url = "calc-dep @ https://example.invalid/calc_dep-1.0-py3-none-any.whl\n"
    want[h.commit("requirements", {"requirements.txt": url})] = "no_tests"
    ops = (h.root / "calc" / "ops.py").read_text()
    want[h.commit("env", {"calc/ops.py": ops + "\n\ndef four():\n    return 4\n",
                          "tests/test_four.py": "from calc.ops import four\n\n\ndef test_four():\n"
                          "    assert four() == 4\n"})] = "env_build_failed"  # fmt: skip
    return want


def _flaky_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head runs of ``test_flaky`` alternate passed and failed (a real flake, made steady)."""
    real = testsets_module.run_suite  # type: ignore[attr-defined]
    calls = {"n": 0}

    def flaky(tree: Path, *args: Any, **kw: Any) -> SuiteRun:
        run = real(tree, *args, **kw)
        if tree.name == "head" and FLAKY_ID in run.statuses:
            calls["n"] += 1
            statuses: dict[str, Status] = dict(run.statuses)
            statuses[FLAKY_ID] = "passed" if calls["n"] % 2 else "failed"
            code = 1 if "failed" in statuses.values() else 0
            return SuiteRun(statuses, code, run.timed_out, run.collected, run.problems,
                            run.wall_s, run.listed)  # fmt: skip
        return run

    monkeypatch.setattr(testsets_module, "run_suite", flaky)


def test_every_way_a_commit_ends(
    history: Any, mine_config: Callable[..., MineConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _every_reason(history)
    _flaky_runs(monkeypatch)
    before = history.hash()
    config = mine_config(history.root)
    miner = Miner(config)
    outcomes = list(miner.run(miner.commits()))
    assert history.hash() == before  # mining never writes into the repository
    got = {o.commit.sha: o.reason or "kept" for o in outcomes}
    assert got == want, {o.commit.subject: (o.reason, o.detail) for o in outcomes}
    by = {o.reason or "kept": o for o in outcomes}
    assert by["flaky"].flaky == (FLAKY_ID,)
    assert "tests/test_ops.py::test_add" in (by["gold_does_not_resolve"].detail or "")
    assert "at " in (by["tests_unreliable"].detail or "")
    assert "test environment" in (by["env_build_failed"].detail or "")
    assert "at the commit: 3 passed, 0 failed, 0 skipped" in (by["no_f2p"].detail or "")
    kept = by["kept"].instance
    assert kept is not None
    assert kept.fail_to_pass == ("tests/test_ops.py::test_mean",)
    assert kept.pass_to_pass == ("tests/test_ops.py::test_add",)
    assert kept.problem_statement.startswith("Fix mean(): divide by the count")
    assert kept.environment.lockfile is None and kept.environment.python
    assert "pytest" in kept.environment.packages
    rep = report(config, outcomes, 1.0)
    assert rep["commits_seen"] == len(want) and rep["kept"] == 1
    dropped = rep["dropped"]
    assert isinstance(dropped, dict) and list(dropped) == list(DROP_REASONS)
    assert dropped["no_tests"] == 2 and dropped["validation_disagrees"] == 0


def test_mining_stops_once_enough_are_kept(
    history: Any, mine_config: Callable[..., MineConfig]
) -> None:
    history.fix_mean()
    newest = history.commit("later", {"README.md": "x\n"})
    miner = Miner(mine_config(history.root, max_instances=1))
    outcomes = list(miner.run(miner.commits()))
    assert [o.reason for o in outcomes] == ["no_tests", None]  # the root is never read
    assert outcomes[0].commit.sha == newest


def test_validation_agrees_on_a_real_fix(
    history: Any, mine_config: Callable[..., MineConfig]
) -> None:
    fix = history.fix_mean()
    before = history.hash()
    miner = Miner(mine_config(history.root, validate=True))
    outcomes = list(miner.run(miner.commits()))
    assert history.hash() == before
    kept = [o for o in outcomes if o.kept]
    assert [o.commit.sha for o in kept] == [fix]
    v = kept[0].validation
    assert v is not None and v.agrees
    assert (v.gold.resolved, v.noop.resolved, v.reversed.resolved) == (True, False, False)
    assert v.gold.verdict == "pass" and v.noop.patch == "noop"
    assert v.noop.reason == "fail_to_pass" and v.reversed.reason == "fail_to_pass"
    assert kept[0].validate_s > 0


@pytest.mark.parametrize(
    ("gold", "noop", "reason"),
    [(False, False, "gold_does_not_resolve"), (True, True, "validation_disagrees")],
)
def test_an_instance_the_gate_disagrees_with_is_dropped(
    history: Any,
    mine_config: Callable[..., MineConfig],
    monkeypatch: pytest.MonkeyPatch,
    gold: bool,
    noop: bool,
    reason: str,
) -> None:
    history.fix_mean()

    def said(*_: object) -> Validation:
        def check(kind: Any, resolved: bool) -> GateCheck:
            return GateCheck(kind, "pass" if resolved else "fail", "ok", resolved, 0.1)

        return Validation(check("gold", gold), check("noop", noop), check("reversed", False))

    monkeypatch.setattr(engine_module, "validate", said)
    miner = Miner(mine_config(history.root, validate=True))
    outcomes = list(miner.run(miner.commits()))
    assert outcomes[0].reason == reason
    assert outcomes[0].instance is not None and outcomes[0].validation is not None
    rep = report(miner.config, outcomes, 1.0)
    assert rep["kept"] == 0
    assert rep["validation"] == {
        "instances": 1, "agree": 0, "gold_resolved": int(gold), "gold_pass": int(gold),
        "noop_resolved": int(noop), "reversed_resolved": 0,
    }  # fmt: skip


def test_a_commit_whose_parent_is_not_there_has_no_base(
    history: Any, tmp_path: Path, mine_config: Callable[..., MineConfig]
) -> None:
    history.fix_mean()
    shallow = tmp_path / "shallow" / "proj"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{history.root}", str(shallow)],
                   check=True, capture_output=True)  # fmt: skip
    miner = Miner(mine_config(shallow))
    [outcome] = list(miner.run(miner.commits()))
    assert outcome.reason == "root_commit" and "shallow" in (outcome.detail or "")
