"""Time per cached patch gate: this checkout against a peer revision, in one run.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/gate.py                      # against d632684, 5 rounds
    .venv/bin/python bench/gate.py --peer-rev HEAD~3 --rounds 3 --workloads static1
    .venv/bin/python bench/gate.py --json
    .venv/bin/python bench/gate.py --absolute           # cold vs cached, and a naive runner
    .venv/bin/python bench/gate.py --real --n 3         # a real project's whole suite

**Comparison** (the default). Two sides run the same workload: *new*, the code
in this checkout (uncommitted edits included), and *peer*, the code at
``--peer-rev`` checked out with ``git worktree add`` into a temporary directory
(removed at the end). Each gate runs in a fresh interpreter (``--driver``,
internal) whose ``PYTHONPATH`` is that side's source tree, which takes precedence
over the venv's editable install; the driver reports where ``gradebox`` and every
loaded module of our packages came from, and a module from the other tree aborts
the run. Both trees are byte-compiled first, as an install does.

The workload is the fixture of ``tests/gradebox/patches/conftest.py`` built with
real git (``calc`` with a bug in ``mean``, 3 tests, ``requirements.txt`` =
pytest), the real fix of ``mean`` as ``git diff`` output, FAIL_TO_PASS
``tests/test_ops.py::test_mean`` and PASS_TO_PASS the other two. Workloads:
``--base-runs`` 1 and 3 (the CLI's default) times static layers off and on (mypy
cache per side, as the CLI keeps one). Both sides share one environment cache
under /tmp (0755: the sandbox's uid reads it), warmed by one untimed gate per
side and workload; every timed gate must say ``env: cached``.

Rounds interleave: in each round every workload runs on both sides back to back,
the side going first alternating by round, so load that drifts hits both alike.
Per gate: wall time of ``run_gate`` in the driver, and CPU of the driver
(``RUSAGE_SELF``) and of the processes it reaped (``RUSAGE_CHILDREN``: the
sandboxes, pip, the static tools; what a killed bubblewrap leaves to init is not
counted). Printed: each side's median per workload, the ratio new/peer of the
medians, and the ratio within each round (its median is the steadiest figure).

**Real** (``--real``): a real project's whole suite (cachetools' history, fix
``18e5930``, PASS_TO_PASS ``auto``): the suite once on the host is the peer; the
gate's first prediction for the instance and the next one (base kept) are
printed as multiples of it, with the defaults and with one base run, no static.

**Absolute** (``--absolute``): this checkout in this process: the first gate with
an empty environment cache (cold), ``--n`` cached gates, the same without static,
and a naive peer (``git worktree``, ``git apply``, host pytest on base and head,
no isolation): the floor the gate's safety is paid on top of.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gradebox", "sandbox", "static", "judge", "rubrics")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
SANDBOX_PYTHON = "/usr/bin/python3"  # GateConfig.python: the environments are made from it

# The fixture of tests/gradebox/patches/conftest.py (make_repo, fix_mean).
OPS = '''"""Small arithmetic helpers."""

import hashlib


def add(a, b):
    return a + b


def scale(xs, k):
    return [x * k for x in xs]


def mean(xs):
    return sum(xs) / (len(xs) + 1)


def digest(data):
    return hashlib.md5(data).hexdigest()
'''

TESTS = """from calc.ops import add, mean, scale


def test_add():
    assert add(2, 3) == 5


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_mean():
    assert mean([1, 2, 3]) == 2
"""

F2P = ("tests/test_ops.py::test_mean",)
P2P = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_scale")
ENV = {"PATH": os.environ["PATH"], "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
       "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b", "HOME": "/tmp",
       "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


@dataclass(frozen=True)
class Workload:
    name: str
    base_runs: int
    static: bool


WORKLOADS = {
    w.name: w
    for w in (
        Workload("nostatic1", 1, False),
        Workload("static1", 1, True),
        Workload("nostatic3", 3, False),
        Workload("static3", 3, True),
    )
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def make_repo(root: Path) -> tuple[str, str]:
    """The fixture repository at ``root``: its base commit and the fix of ``mean``."""
    (root / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(OPS)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_ops.py").write_text(TESTS)
    (root / "requirements.txt").write_text("pytest\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "calc" / "ops.py").write_text(OPS.replace("(len(xs) + 1)", "len(xs)"))
    git(root, "add", "-A")
    patch = git(root, "diff", "--cached", "--no-color", base)
    git(root, "reset", "-q", "--hard", base)
    return base, patch


# --- driver: one fresh interpreter per side, round and workload -------------------------


def driver(job: dict[str, Any]) -> dict[str, Any]:
    """Run ``job["gates"]`` gates with the gradebox on ``sys.path`` and time each."""
    import gradebox
    from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
    from gradebox.patches.staticdiff import StaticSettings
    from sandbox.command import CommandLimits
    from static.config import StaticConfig

    static = None
    if job["static"]:
        static = StaticSettings(config=StaticConfig(cache_dir=Path(job["mypy_cache"])))
    config = GateConfig(limits=CommandLimits(timeout_s=300), base_runs=job["base_runs"],
                        env_cache=Path(job["env_cache"]), static=static)  # fmt: skip
    spec = GateSpec("bench", Path(job["repo"]), job["base"], job["patch"],
                    TestIds(tuple(job["f2p"]), tuple(job["p2p"])))  # fmt: skip
    group = TreeCpu.join()
    gates = []
    for _ in range(job["gates"]):
        tree0 = group.seconds() if group else None
        self0, kids0 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                       resource.RUSAGE_CHILDREN))  # fmt: skip
        t0 = time.monotonic()
        row = run_gate(spec, config)
        wall = time.monotonic() - t0
        self1, kids1 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                       resource.RUSAGE_CHILDREN))  # fmt: skip
        tree1 = group.seconds() if group else None
        gates.append({
            "wall_s": wall,
            "cpu_tree_s": None if tree0 is None or tree1 is None else tree1 - tree0,
            "cpu_self_s": _cpu(self1) - _cpu(self0),
            "cpu_children_s": _cpu(kids1) - _cpu(kids0),
            "verdict": row.verdict, "reason": row.reason, "env": row.timing.get("env"),
        })  # fmt: skip
    if group:
        group.leave()
    root = Path(job["root"]).resolve()
    loaded = [(n, getattr(m, "__file__", None)) for n, m in list(sys.modules.items())]
    foreign = sorted(
        f"{name}: {file}"
        for name, file in loaded
        if name.split(".")[0] in PACKAGES
        and file
        and not Path(file).resolve().is_relative_to(root / name.split(".")[0])
    )
    return {"gradebox_file": gradebox.__file__, "foreign": foreign, "gates": gates}


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class TreeCpu:
    """A cgroup v1 ``cpuacct`` group of the driver's own (root only).

    Every process the gate starts is charged there, whoever reaps it: ``RUSAGE_CHILDREN``
    misses what bubblewrap's sandboxes leave to the host's init (bench/README.md).
    """

    group: Path
    home: Path

    @classmethod
    def join(cls) -> TreeCpu | None:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        home = next((ln.split(":", 2)[2] for ln in lines if ":cpuacct:" in ln), None)
        group = CPUACCT / f"gbx-bench-gate-{os.getpid()}"
        try:
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            return None
        return cls(group, CPUACCT / (home or "/").lstrip("/"))

    def seconds(self) -> float | None:
        try:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def leave(self) -> None:
        (self.home / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(200):  # the gate's last processes leave the group as they die
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.01)


# --- comparison ---------------------------------------------------------------------------


# workload -> side -> one list of gates per round (one driver process each)
Samples = dict[str, dict[str, list[list[dict[str, Any]]]]]


@dataclass(frozen=True)
class Side:
    name: str
    root: Path
    label: str


class Bench:
    """The shared fixture, caches and the two sides."""

    def __init__(self, work: Path, sides: list[Side], base: str, patch: str) -> None:
        self.work, self.sides, self.base, self.patch = work, sides, base, patch

    def job(self, side: Side, w: Workload, gates: int) -> dict[str, Any]:
        return {
            "root": str(side.root), "repo": str(self.work / "repo"), "base": self.base,
            "patch": self.patch, "f2p": F2P, "p2p": P2P, "base_runs": w.base_runs,
            "static": w.static, "env_cache": str(self.work / "envs"),
            "mypy_cache": str(self.work / f"mypy-{side.name}"), "gates": gates,
        }  # fmt: skip

    def run(self, side: Side, w: Workload, gates: int) -> dict[str, Any]:
        """One fresh driver process on ``side``; checks where its code came from.

        ``-P``: the script's folder (bench/, which holds a ``static.py``) stays off sys.path.
        """
        env = {**os.environ, "PYTHONPATH": str(side.root)}
        proc = subprocess.run(
            [sys.executable, "-P", str(Path(__file__).resolve()), "--driver"],
            input=json.dumps(self.job(side, w, gates)), capture_output=True, text=True,
            cwd=self.work, env=env, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{side.name} {w.name}: driver failed\n{proc.stderr[-4000:]}")
        out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
        expected = side.root / "gradebox" / "__init__.py"
        if Path(out["gradebox_file"]).resolve() != expected.resolve() or out["foreign"]:
            raise SystemExit(f"{side.name}: code from the wrong tree: {out['gradebox_file']} "
                             f"{out['foreign'][:5]}")  # fmt: skip
        return out


def add_peer(rev: str) -> Path:
    """``rev`` checked out with ``git worktree add`` in a fresh directory under /tmp."""
    tmp = Path(tempfile.mkdtemp(prefix="gbx-bench-peer-"))
    tmp.chmod(0o755)
    tree = tmp / "tree"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), rev],
                   cwd=REPO_ROOT, check=True)  # fmt: skip
    return tree


def remove_peer(tree: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT,
                   check=False)  # fmt: skip
    subprocess.run(["git", "worktree", "prune"], cwd=REPO_ROOT, check=False)
    shutil.rmtree(tree.parent, ignore_errors=True)


def byte_compile(root: Path) -> None:
    """As an install does: neither side compiles its sources at each start."""
    for pkg in PACKAGES:
        if (root / pkg).is_dir():
            compileall.compile_dir(root / pkg, quiet=1)
    child = root / "sandbox" / "child"
    if child.is_dir() and os.path.exists(SANDBOX_PYTHON):
        subprocess.run([SANDBOX_PYTHON, "-m", "compileall", "-q", str(child)], check=False)


def describe(root: Path) -> str:
    head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=root, capture_output=True,
                          text=True, check=False).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return f"{head[:70]}{' + uncommitted edits' if dirty else ''}"


def compare(args: argparse.Namespace) -> dict[str, Any]:
    workloads = [WORKLOADS[n] for n in args.workloads.split(",")]
    work = Path(tempfile.mkdtemp(prefix="gbx-bench-gate-"))
    work.chmod(0o755)
    peer_tree = add_peer(args.peer_rev)
    try:
        sides = [Side("new", REPO_ROOT, describe(REPO_ROOT)),
                 Side("peer", peer_tree, describe(peer_tree))]  # fmt: skip
        for side in sides:
            byte_compile(side.root)
        (work / "envs").mkdir()
        (work / "envs").chmod(0o755)
        bench = Bench(work, sides, *make_repo(work / "repo"))
        for w in workloads:  # warm: builds the environment, fills each side's mypy cache
            for side in sides:
                first = bench.run(side, w, 1)
                g = first["gates"][0]
                log(args, f"warm {w.name:10} {side.name:4}: {g['wall_s']:.2f} s env {g['env']}, "
                    f"gradebox from {first['gradebox_file']}")  # fmt: skip
        samples: Samples = {w.name: {s.name: [] for s in sides} for w in workloads}
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for w in workloads:
                for side in order:
                    gates = bench.run(side, w, args.gates_per_child)["gates"]
                    samples[w.name][side.name].append(gates)
                    walls = " ".join(f"{g['wall_s']:.2f}" for g in gates)
                    log(args, f"round {r + 1} {w.name:10} {side.name:4}: {walls} s")
    finally:
        remove_peer(peer_tree)
        shutil.rmtree(work, ignore_errors=True)
    return summarize(args, sides, samples)


def summarize(args: argparse.Namespace, sides: list[Side], samples: Samples) -> dict[str, Any]:
    out: dict[str, Any] = {
        "peer_rev": args.peer_rev, "rounds": args.rounds,
        "gates_per_child": args.gates_per_child, "load_avg_end": os.getloadavg()[0],
        "sides": {s.name: {"root": str(s.root), "head": s.label} for s in sides},
        "workloads": {},
    }  # fmt: skip
    for name, by_side in samples.items():
        fig: dict[str, Any] = {side: _side_figures(rounds) for side, rounds in by_side.items()}
        per_round = [
            statistics.median(g["wall_s"] for g in n) / statistics.median(g["wall_s"] for g in p)
            for n, p in zip(by_side["new"], by_side["peer"], strict=True)
        ]
        fig["ratio_wall"] = fig["new"]["wall_s"] / fig["peer"]["wall_s"]
        fig["ratio_per_round"] = [round(x, 3) for x in per_round]
        fig["ratio_per_round_median"] = statistics.median(per_round)
        for cpu in ("cpu_tree_s", "cpu_children_s", "cpu_self_s"):
            n, p = fig["new"][cpu], fig["peer"][cpu]
            fig[f"ratio_{cpu}"] = n / p if n is not None and p else None
        out["workloads"][name] = fig
    return out


def _side_figures(rounds: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians of one side's gates; ``first_in_process_s``: each driver's first gate."""
    flat = [g for gates in rounds for g in gates]

    def median(key: str) -> float | None:
        values = [g[key] for g in flat]
        return None if None in values else statistics.median(values)

    return {
        "wall_s": median("wall_s"),
        "first_in_process_s": statistics.median(gs[0]["wall_s"] for gs in rounds),
        "cpu_tree_s": median("cpu_tree_s"),
        "cpu_children_s": median("cpu_children_s"),
        "cpu_self_s": median("cpu_self_s"),
        "walls_s": [round(g["wall_s"], 2) for g in flat],
        "outcomes": sorted({f"{g['verdict']}/{g['reason']}/env:{g['env']}" for g in flat}),
    }


def _f(x: float | None, width: int) -> str:
    return f"{x:{width}.2f}" if x is not None else f"{'-':>{width}}"


def report(fig: dict[str, Any]) -> None:
    for side, info in fig["sides"].items():
        print(f"{side:4}: {info['head']}  ({info['root']})")
    print(f"{fig['rounds']} rounds x {fig['gates_per_child']} gate(s) per fresh process, "
          f"interleaved; load average at the end {fig['load_avg_end']:.1f}")  # fmt: skip
    print("medians, seconds per gate; cpu: the gate's whole process tree (cgroup cpuacct)")
    print(f"{'workload':10} {'wall new':>8} {'peer':>6} {'new/peer':>8} {'per-round':>9} "
          f"{'cpu new':>8} {'peer':>6} {'new/peer':>8}")  # fmt: skip
    for name, w in fig["workloads"].items():
        n, p = w["new"], w["peer"]
        print(f"{name:10} {_f(n['wall_s'], 8)} {_f(p['wall_s'], 6)} {_f(w['ratio_wall'], 8)} "
              f"{_f(w['ratio_per_round_median'], 9)} {_f(n['cpu_tree_s'], 8)} "
              f"{_f(p['cpu_tree_s'], 6)} {_f(w['ratio_cpu_tree_s'], 8)}")  # fmt: skip
    for name, w in fig["workloads"].items():
        n, p = w["new"], w["peer"]
        print(f"{name}: per-round new/peer {' '.join(f'{x:.2f}' for x in w['ratio_per_round'])}")
        print(f"  first gate in its process: new {n['first_in_process_s']:.2f} s, "
              f"peer {p['first_in_process_s']:.2f} s; cpu driver (RUSAGE_SELF) new "
              f"{_f(n['cpu_self_s'], 0)} peer {_f(p['cpu_self_s'], 0)}, reaped children "
              f"(RUSAGE_CHILDREN) new {_f(n['cpu_children_s'], 0)} "
              f"peer {_f(p['cpu_children_s'], 0)}")  # fmt: skip
        for side in ("new", "peer"):
            print(f"  {side:4} walls {w[side]['walls_s']} {w[side]['outcomes']}")


def log(args: argparse.Namespace, line: str) -> None:
    if not args.json:
        print(line, file=sys.stderr, flush=True)


# --- absolute: cold vs cached in this process, and a naive host runner -----------------


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


def absolute(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(REPO_ROOT))
    from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
    from gradebox.patches.staticdiff import StaticSettings
    from sandbox.command import CommandLimits
    from static.config import StaticConfig

    work = Path(tempfile.mkdtemp(prefix="gbx-bench-gate-"))
    work.chmod(0o755)
    try:
        base, patch = make_repo(work / "repo")
        cache = work / "envs"
        spec = GateSpec("bench", work / "repo", base, patch, TestIds(F2P, "auto"))
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
    return {
        "cold_s": round(cold, 2),
        "env_build_s": first.timing.get("env_s"),
        "cached_median_s": round(statistics.median(cached), 2),
        "cached_no_static_median_s": round(statistics.median(no_static), 2),
        "peer_naive_median_s": round(statistics.median(peer), 2),
        "n": args.n,
    }


def report_absolute(f: dict[str, Any]) -> None:
    print(f"gate, cold (env built):        {f['cold_s']:6.2f} s "
          f"(of which env build {f['env_build_s']} s)")  # fmt: skip
    print(f"gate, env cached (median):     {f['cached_median_s']:6.2f} s")
    print(f"gate, cached, no static:       {f['cached_no_static_median_s']:6.2f} s")
    print(f"peer: naive host runner:       {f['peer_naive_median_s']:6.2f} s "
          "(no isolation, 1 base run, no checks)")  # fmt: skip
    print("each gate: 3 base runs + head collection + head run, each a fresh bubblewrap sandbox")


# --- real suite: a real project's whole test suite, first prediction vs the next ----------

BUNDLE = REPO_ROOT.parent / "shared" / "data" / "repos" / "cachetools.bundle"
REAL_COMMIT = "18e5930"  # cachetools, "Fix #218": a real fix and its tests
REAL_F2P = ("tests/test_cachedmethod.py::CacheMethodTest::test_decorator_attributes",
            "tests/test_cachedmethod.py::DictMethodTest::test_decorator_attributes")  # fmt: skip


def real_suite(args: argparse.Namespace) -> dict[str, Any]:
    """The gate on a real project's whole suite (PASS_TO_PASS ``auto``), against its suite time.

    The peer is the suite itself: one unisolated host pytest run of the whole suite at
    base, in this interpreter (the floor any gate pays at least once). A gate's first
    prediction for an instance pays base (built, installed, run ``--base-runs`` times)
    and head; the next prediction for the same instance reuses base.
    """
    sys.path.insert(0, str(REPO_ROOT))
    from gradebox.patches import GateConfig, GateSpec, TestIds, run_gate
    from gradebox.patches import gate as gate_module
    from gradebox.patches.staticdiff import StaticSettings
    from sandbox.command import CommandLimits
    from static.config import StaticConfig

    work = Path(tempfile.mkdtemp(prefix="gbx-bench-real-"))
    work.chmod(0o755)
    try:
        repo = work / "cachetools"
        subprocess.run(["git", "clone", "-q", str(args.bundle), str(repo)], check=True)
        base = git(repo, "rev-parse", f"{REAL_COMMIT}~1").strip()
        patch = git(repo, "diff", base, REAL_COMMIT, "--", "src")
        test_patch = git(repo, "diff", base, REAL_COMMIT, "--", "tests")
        tests = TestIds(REAL_F2P, "auto")
        # Two predictions of the same fix: the second is graded against the kept base.
        specs = [GateSpec(f"real-{i}", repo, base, patch, tests, test_patch=test_patch)
                 for i in range(2)]  # fmt: skip
        static = StaticSettings(config=StaticConfig(cache_dir=work / "mypy"))
        limits = CommandLimits(timeout_s=600)
        configs = {
            "defaults": GateConfig(limits=limits, env_cache=work / "envs", static=static),
            "1 base run, no static": GateConfig(limits=limits, base_runs=1,
                                                env_cache=work / "envs", static=None),
        }  # fmt: skip
        warm = run_gate(specs[0], configs["defaults"])  # builds the environments: untimed
        assert warm.verdict == "pass", warm.to_row()
        suite = []
        with tempfile.TemporaryDirectory() as d:
            tree = Path(d) / "t"
            git(repo, "worktree", "add", "-q", "--detach", str(tree), base)
            subprocess.run(["git", "apply", "-"], cwd=tree, input=test_patch, text=True,
                           check=True)  # fmt: skip
            for _ in range(args.n):
                t0 = time.monotonic()
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "tests"], cwd=tree, capture_output=True, check=False,
                               env={**os.environ, "PYTHONPATH": "src"})  # fmt: skip
                suite.append(time.monotonic() - t0)
            git(repo, "worktree", "remove", "--force", str(tree))
        out: dict[str, Any] = {"suite_s": round(statistics.median(suite), 2), "n": args.n,
                               "collected": warm.tests.collected if warm.tests else None,
                               "configs": {}}  # fmt: skip
        for name, cfg in configs.items():
            first, nxt = [], []
            for _ in range(args.n):
                gate_module._BASES.clear()
                for spec, into in ((specs[0], first), (specs[1], nxt)):
                    t0 = time.monotonic()
                    row = run_gate(spec, cfg)
                    into.append(time.monotonic() - t0)
                    assert row.verdict == "pass", row.to_row()
                assert row.timing["base"] == "cached", row.timing
            out["configs"][name] = {"first_s": round(statistics.median(first), 2),
                                    "next_s": round(statistics.median(nxt), 2)}  # fmt: skip
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report_real(f: dict[str, Any]) -> None:
    suite = f["suite_s"]
    print(f"cachetools {REAL_COMMIT}: the whole suite ({f['collected']} tests), "
          f"medians of {f['n']}")  # fmt: skip
    print(f"peer: the suite once on the host, unisolated: {suite:6.2f} s")
    for name, c in f["configs"].items():
        print(f"gate, {name:22}: first prediction {c['first_s']:6.2f} s "
              f"({c['first_s'] / suite:4.1f}x the suite), next prediction for the same "
              f"instance {c['next_s']:6.2f} s ({c['next_s'] / suite:4.1f}x; base reused)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer-rev", default="d632684", help="the peer's git revision")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--gates-per-child", type=int, default=2,
                    help="gates timed in each fresh driver process")  # fmt: skip
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma-separated, of {', '.join(WORKLOADS)}")  # fmt: skip
    ap.add_argument("--absolute", action="store_true", help="cold vs cached, and a naive runner")
    ap.add_argument("--n", type=int, default=5, help="--absolute, --real: gates to time")
    ap.add_argument("--real", action="store_true",
                    help="a real project's whole suite (cachetools), first vs next prediction")
    ap.add_argument("--bundle", type=Path, default=BUNDLE, help="--real: the cachetools bundle")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        print(json.dumps(driver(json.loads(sys.stdin.read()))))
        return
    fig = real_suite(args) if args.real else absolute(args) if args.absolute else compare(args)
    if args.json:
        print(json.dumps(fig))
    elif args.real:
        report_real(fig)
    elif args.absolute:
        report_absolute(fig)
    else:
        report(fig)


if __name__ == "__main__":
    main()
