"""Time per patch gate: environment built (cold) versus cached, and a naive peer, in one run.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/gate.py              # 5 cached gates
    .venv/bin/python bench/gate.py --n 10 --json

What is measured, on a generated repository (a small package, 3 tests, a real
bug) and its real fix, with the default gate (``--base-runs 3``, static layers
on, bubblewrap isolation):

* **cold**: the first gate, with an empty environment cache: a virtual
  environment is built from the lockfile (pip, wheels only) before any test runs;
* **cached**: ``--n`` more gates with that environment in the cache;
* **cached, no static**: the same without the static layers (tests only);
* **peer: naive runner**: what a script without isolation does for the same
  patch: ``git worktree`` style checkout, ``git apply``, one host
  ``python -m pytest --junitxml`` on base and one on head, in the grader's own
  environment. No sandbox, no flake runs, no cross-check, no static: the floor
  the gate's safety is paid on top of. (SWE-bench's own harness builds a Docker
  image per instance; Docker is not needed here, so that is not the peer.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
from gradebox.patches.staticdiff import StaticSettings
from sandbox.command import CommandLimits
from static.config import StaticConfig

OPS = "def add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"
TESTS = (
    "from calc.ops import add, mean\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    "def test_more():\n    assert add(1, 1) == 2\n"
)
ENV = {"PATH": os.environ["PATH"], "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
       "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b", "HOME": "/tmp"}  # fmt: skip


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def make_repo(root: Path) -> tuple[str, str]:
    (root / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(OPS)
    (root / "tests" / "test_ops.py").write_text(TESTS)
    (root / "requirements.txt").write_text("pytest\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "calc" / "ops.py").write_text(OPS.replace("(len(xs) + 1)", "len(xs)"))
    patch = git(root, "diff")
    git(root, "checkout", "-q", "--", ".")
    return git(root, "rev-parse", "HEAD").strip(), patch


def naive(repo: Path, base: str, patch: str) -> float:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        tree = Path(d) / "t"
        git(repo, "worktree", "add", "-q", "--detach", str(tree), base)
        for side in ("base", "head"):
            if side == "head":
                subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True)
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            f"--junitxml={d}/{side}.xml"], cwd=tree, capture_output=True,
                           check=False)  # fmt: skip
        git(repo, "worktree", "remove", "--force", str(tree))
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="cached gates to time")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gbx-bench-gate-"))
    work.chmod(0o755)
    try:
        base, patch = make_repo(work / "repo")
        cache = work / "envs"
        spec = GateSpec("bench", work / "repo", base, patch,
                        TestIds(("tests/test_ops.py::test_mean",), "auto"))  # fmt: skip
        static = StaticSettings(config=StaticConfig(cache_dir=work / "mypy"))
        cfg = GateConfig(limits=CommandLimits(timeout_s=300), env_cache=cache, static=static)
        t0 = time.monotonic()
        first = run_gate(spec, cfg)
        cold = time.monotonic() - t0
        assert first.verdict == "pass", first.to_row()
        cached = []
        for _ in range(args.n):
            t0 = time.monotonic()
            row = run_gate(spec, cfg)
            cached.append(time.monotonic() - t0)
            assert row.verdict == "pass" and row.timing["env"] == "cached"
        no_static = []
        bare = GateConfig(limits=cfg.limits, env_cache=cache, static=None)
        for _ in range(args.n):
            t0 = time.monotonic()
            run_gate(spec, bare)
            no_static.append(time.monotonic() - t0)
        peer = [naive(work / "repo", base, patch) for _ in range(args.n)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures = {
        "cold_s": round(cold, 2),
        "env_build_s": first.timing.get("env_s"),
        "cached_median_s": round(statistics.median(cached), 2),
        "cached_no_static_median_s": round(statistics.median(no_static), 2),
        "peer_naive_median_s": round(statistics.median(peer), 2),
        "sandboxed_pytest_runs_per_gate": 3 + 2,
        "n": args.n,
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(f"gate, cold (env built):        {figures['cold_s']:6.2f} s "
          f"(of which env build {figures['env_build_s']} s)")  # fmt: skip
    print(f"gate, env cached (median):     {figures['cached_median_s']:6.2f} s")
    print(f"gate, cached, no static:       {figures['cached_no_static_median_s']:6.2f} s")
    print(f"peer: naive host runner:       {figures['peer_naive_median_s']:6.2f} s "
          "(no isolation, 1 base run, no checks)")  # fmt: skip
    print("each gate: 3 base runs + head collection + head run, each a fresh bubblewrap sandbox")


if __name__ == "__main__":
    main()
