"""Warm tools (static.batch.WarmTools) against the full path: identical results on the corpus.

The corpus is every piece of Python the static and case tests hold: the static
corpus with its tasks, every ``.py`` file under ``tests/static`` and ``tests/cases``,
the fenced Python blocks of the case replies and the ``code`` of the case samples.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from static.batch import Candidate, StaticConfig, WarmTools, check_batch

pytestmark = pytest.mark.filterwarnings("ignore:The verify_requirements argument")

TESTS = Path(__file__).parents[1]
ROOTS = (TESTS / "static", TESTS / "cases")
FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def corpus() -> list[Candidate]:
    tasks = json.loads((TESTS / "static" / "corpus" / "expected.json").read_text("utf-8"))
    found = [
        Candidate((TESTS / "static" / "corpus" / name).read_text("utf-8"), t["fn"], t["signature"])
        for name, t in sorted(tasks.items())
    ]
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            found.append(Candidate(path.read_text("utf-8"), "main"))
        for path in sorted(root.rglob("*.md")):
            found += [Candidate(b, "f") for b in FENCE.findall(path.read_text("utf-8"))]
        for path in sorted(root.rglob("*.jsonl")):
            for line in path.read_text("utf-8").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("code"), str):
                    found.append(Candidate(row["code"], str(row.get("fn") or "f")))
    return found


def test_the_corpus_is_big_enough() -> None:
    candidates = corpus()
    assert len(candidates) >= 60
    assert len({c.code for c in candidates}) >= 50


def test_warm_tools_find_exactly_what_the_full_path_finds(tmp_path: Path) -> None:
    candidates = corpus()
    full = check_batch(candidates, StaticConfig(cache_dir=tmp_path / "full"))
    config = StaticConfig(cache_dir=tmp_path / "warm")
    with WarmTools(config) as tools:
        tools.start()
        # Batches of several sizes through the same workers, as a run's chunks go.
        warm = []
        for start, size in ((0, 7), (7, 1), (8, 40)):
            warm += tools.check_batch(candidates[start : start + size])
        warm += tools.check_batch(candidates[48:])
        again = tools.check_batch(candidates)
    assert sum(len(r.findings) for r in full) > 100  # the corpus exercises every layer
    assert {f.layer for r in full for f in r.findings} == {"lint", "types", "security"}
    for candidate, f, w, a in zip(candidates, full, warm, again, strict=True):
        assert w == f, candidate.code[:200]
        assert a == f, candidate.code[:200]


def test_a_worker_that_died_between_batches_is_started_again(tmp_path: Path) -> None:
    config = StaticConfig(cache_dir=tmp_path / "cache", layers=frozenset({"lint", "security"}))
    with WarmTools(config) as tools:
        tools.start()
        good = tools.check_batch([Candidate("import pickle\n", "f")])[0]
        assert [f.rule for f in good.findings if f.layer == "security"] == ["B403"]
        tools._bandit_worker(0).close()
        again = tools.check_batch([Candidate("import pickle\n", "f")])[0]
        assert again == good


def test_closing_stops_every_worker(tmp_path: Path) -> None:
    tools = WarmTools(StaticConfig(cache_dir=tmp_path / "cache"))
    tools.start()
    tools.check_batch([Candidate("def f():\n    return 1\n", "f")])
    workers = [tools._mypy_worker(0), tools._bandit_worker(0)]
    pids = [w.pid for w in workers]
    assert all(pids)
    tools.close()
    tools.close()
    assert [w.pid for w in workers] == [None, None]


def test_without_a_cache_the_workers_keep_their_own(tmp_path: Path) -> None:
    config = dataclasses.replace(StaticConfig(), layers=frozenset({"types"}))
    with WarmTools(config) as tools:
        assert tools.config.cache_dir is not None
        result = tools.check_batch([Candidate("def f() -> int:\n    return 'x'\n", "f")])[0]
    assert [f.rule for f in result.findings] == ["return-value"]


def test_a_kept_standard_library_cache_seeds_the_next_run(tmp_path: Path) -> None:
    candidates = corpus()[:30]
    full = check_batch(candidates, StaticConfig(cache_dir=tmp_path / "full"))
    kept = tmp_path / "kept"
    for run in ("first", "second"):
        config = StaticConfig(cache_dir=tmp_path / run)
        with WarmTools(config, stdlib_cache=kept) as tools:
            tools.start()
            assert tools.check_batch(candidates) == full, run
        seeds = list(kept.iterdir())
        assert [p.name.startswith("mypy-") for p in seeds] == [True]  # one seed, kept once
    # A cache of its own is neither seeded nor saved.
    own = tmp_path / "own"
    own.mkdir()
    (own / "mine").write_text("x")
    with WarmTools(StaticConfig(cache_dir=own), stdlib_cache=tmp_path / "unused") as tools:
        tools.start()
        tools.check_batch(candidates[:2])
    assert not (tmp_path / "unused").exists()


def test_skipping_the_imports_check_loses_no_finding() -> None:
    """``may_import`` is False only where the imports layer finds nothing, on the corpus too."""
    import importlib.metadata

    from gradebox.pipeline.static import may_import
    from static import imports

    env = importlib.metadata.packages_distributions()
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "import")  # FULLWIDTH LATIN letters
    tricky = [
        f"m = {fullwidth}_module('no_such_dist_x')\n",
        f"m = __{fullwidth}__('no_such_dist_x')\n",
        "import no_such_dist_x\n",
        "from no_such_dist_x import y\n",
    ]
    for code in tricky:
        assert imports.check(code, None, environment=env), code
        assert may_import(code), code
    skipped = 0
    for candidate in corpus():
        if not may_import(candidate.code):
            skipped += 1
            assert imports.check(candidate.code, None, environment=env) == [], candidate.code
            assert imports.check(candidate.code, {}, environment=env) == [], candidate.code
    assert skipped >= 10


def test_a_mypy_worker_is_replaced_after_so_many_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from static import typecheck

    monkeypatch.setattr(typecheck, "WORKER_FILES", 3)
    config = StaticConfig(cache_dir=tmp_path / "cache", layers=frozenset({"types"}))
    with WarmTools(config) as tools:
        first = [Candidate(f"def f() -> int:\n    return {k}\n", "f") for k in range(2)]
        tools.check_batch(first)
        pid = tools._mypy_worker(0).pid
        tools.check_batch(first[:1])  # 1 + 2 + 1 files: still the same worker
        assert tools._mypy_worker(0).pid == pid
        bad = tools.check_batch([Candidate("def f() -> int:\n    return 'x'\n", "f")])[0]
        assert tools._mypy_worker(0).pid != pid
    assert [f.rule for f in bad.findings] == ["return-value"]
