"""Mining real history: eleven commits of cachetools (2026-02-27..03-08), validated by the gate.

The range holds two real fixes that become instances (``18e5930`` Fix #218,
``57d2e48`` Fix #387), commits that change no test or no code, two whose
tests pass before and after, and ``330f147``, whose own change broke
``clear()`` tests of FIFO, RR, TTL and TLRU caches inherited from a mixin in
``tests/__init__.py`` (fixed by the next commit): its gold patch would not
pass the gate. cachetools pins nothing, has a ``src/`` layout and builds its
suite from mixins in another file: the environment is pytest only, the tree
is on the path as the gate puts it, test ids are the collection's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradebox.mine import MineConfig, Miner, report

WANT = {
    "18e5930": None, "98ec79f": "no_tests", "93822a3": "no_f2p", "57d2e48": None,
    "8011b71": "no_tests", "73d1602": "no_f2p", "083ee5f": "no_source", "2181fad": "no_tests",
    "595e7af": "no_tests", "c9c942f": "no_tests", "330f147": "gold_does_not_resolve",
}  # fmt: skip


def test_a_bounded_range_of_cachetools(
    bundle: Path, tmp_path: Path, mine_config: Callable[..., MineConfig], history_hash: Any
) -> None:
    repo = tmp_path / "cachetools"
    subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True, capture_output=True)
    before = history_hash(repo)
    config = mine_config(repo, repo_name="tkem/cachetools", rev_range="330f147~1..18e5930",
                         validate=True)  # fmt: skip
    miner = Miner(config)
    outcomes = list(miner.run(miner.commits()))
    assert history_hash(repo) == before
    assert {o.commit.sha[:7]: o.reason for o in outcomes} == WANT
    kept = {o.commit.sha[:7]: o for o in outcomes if o.kept}
    fix_218 = kept["18e5930"].instance
    assert fix_218 is not None
    assert fix_218.fail_to_pass == (
        "tests/test_cachedmethod.py::CacheMethodTest::test_decorator_attributes",
        "tests/test_cachedmethod.py::DictMethodTest::test_decorator_attributes",
    )
    assert all(i.startswith("tests/test_cachedmethod.py::") for i in fix_218.pass_to_pass)
    assert fix_218.patch.startswith("diff --git a/") and "src/cachetools/" in fix_218.patch
    assert "tests/test_cachedmethod.py" in fix_218.test_patch
    regressed = next(o for o in outcomes if o.reason == "gold_does_not_resolve")
    assert "tests/test_fifo.py::FIFOCacheTest::test_clear" in (regressed.detail or "")
    rep = report(config, outcomes, 1.0)
    assert rep["validation"] == {
        "instances": 2, "agree": 2, "gold_resolved": 2, "gold_pass": 2, "noop_resolved": 0,
        "reversed_resolved": 0,
    }  # fmt: skip
