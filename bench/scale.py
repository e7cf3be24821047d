"""Scale-out cost: the local thread pool vs ``--scheduler local:1`` vs ``local:2``, one run.

Prints figures and a model; asserts nothing about timing. From the repository root::

    .venv/bin/python bench/scale.py                 # 500 candidates x 10 cases, 2 sandbox slots
    .venv/bin/python bench/scale.py --n 2000 --slots 2 --json

Every mode grades the same generated workload (``bench/workload.py``, noloop) with the same
number of sandbox slots, through the real CLI (``--no-static --no-judge --banned-imports ''``):

* ``pool``: ``gradebox grade --jobs SLOTS`` (the local thread pool, the peer figure);
* ``local:1``: ``--scheduler local:1 --jobs SLOTS`` (one Dask worker process with SLOTS slots);
* ``local:2``: ``--scheduler local:2 --jobs SLOTS/2`` (two worker processes).

For each: wall time (start-up included), the grading phase (the CLI's own ``graded N
samples in X s``), cand/s over that phase, the overhead per sample over ``pool``, and
CPU seconds of the coordinating process alone (for ``local:N`` it holds the Dask scheduler
and client) Rows must be identical to ``pool``'s but for
timings; the script says if they are not.

The model for a cluster of NODES x CORES (default 10 x 16), one sandbox slot per core: a
slot's time per sample ``w`` (``SLOTS * graded_s / n`` of ``pool``, measured here) bounds the
rate at ``NODES*CORES / w``; the coordinating process's CPU per sample ``c`` (``local:2``'s,
less that of a 20-sample run, i.e. start-up; it holds the Dask scheduler and client, one
GIL) bounds it at ``1 / c``. The model takes the smaller, and says which. Candidates'
own CPU is not in the process tree's rusage (sandboxes are reaped inside their
namespaces), so ``w`` comes from wall time, not CPU.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
from workload import build_workload

REPO_ROOT = Path(__file__).resolve().parent.parent
GRADEBOX = Path(sys.executable).parent / "gradebox"
SMALL = 20
"""Samples of the run that measures the coordinator's start-up CPU."""
_GRADED = re.compile(r"graded (\d+) samples in ([0-9.]+)s")


@dataclass
class Mode:
    """One way of grading the workload, and what it measured."""

    name: str
    args: list[str]
    wall_s: float = 0.0
    graded_s: float = 0.0
    coordinator_cpu_s: float = 0.0
    tree_cpu_s: float = 0.0
    same_rows: bool | None = None
    status: str = "ok"

    def rate(self, n: int) -> float:
        return n / self.graded_s if self.graded_s else 0.0


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(mode: Mode, hidden: Path, samples: Path, out: Path) -> list[dict[str, object]]:
    cmd = [str(GRADEBOX), "grade", "--hidden", str(hidden), "--samples", str(samples)]
    cmd += ["--out", str(out), "--no-static", "--no-judge", "--banned-imports", "", *mode.args]
    before = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cpu = [0.0]

    def watch() -> None:  # the coordinator's own CPU, read until it exits
        p = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                t = p.cpu_times()
                cpu[0] = t.user + t.system
            except psutil.Error:
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    mode.wall_s = time.perf_counter() - t0
    watcher.join()
    mode.tree_cpu_s = _children_cpu() - before
    mode.coordinator_cpu_s = cpu[0]
    found = _GRADED.search(err)
    if proc.returncode != 0 or found is None:
        mode.status = f"failed (exit {proc.returncode}): {err.strip().splitlines()[-3:]}"
        return []
    mode.graded_s = float(found.group(2))
    return [json.loads(line) for line in out.read_text().splitlines()]


def _untimed(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "latency_ms"} for r in rows]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500, help="candidates")
    ap.add_argument("--cases", type=int, default=10, help="hidden cases per task")
    ap.add_argument("--slots", type=int, default=2, help="sandbox slots in every mode (even)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of all modes (median kept)")
    ap.add_argument("--nodes", type=int, default=10, help="model: nodes")
    ap.add_argument("--cores", type=int, default=16, help="model: cores per node")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    opts = ap.parse_args()
    slots = max(2, opts.slots - opts.slots % 2)
    wl = build_workload("noloop", n=opts.n, n_cases=opts.cases)
    small = build_workload("noloop", n=SMALL, n_cases=opts.cases)

    def modes() -> list[Mode]:
        return [
            Mode("pool", ["--jobs", str(slots)]),
            Mode("local:1", ["--scheduler", "local:1", "--jobs", str(slots)]),
            Mode("local:2", ["--scheduler", "local:2", "--jobs", str(slots // 2)]),
        ]

    rounds: list[list[Mode]] = []
    with tempfile.TemporaryDirectory(prefix="gb-scale-") as tmp:
        hidden, samples = wl.write_gradebox(Path(tmp))
        for _ in range(max(1, opts.rounds)):  # interleaved: a busy moment hits every mode
            ran = modes()
            base: list[dict[str, object]] = []
            for mode in ran:
                rows = _run(mode, hidden, samples, Path(tmp) / f"{mode.name}.jsonl")
                if mode.name == "pool":
                    base = _untimed(rows)
                elif rows:
                    mode.same_rows = _untimed(rows) == base
            rounds.append(ran)
        (Path(tmp) / "small").mkdir()
        s_hidden, s_samples = small.write_gradebox(Path(tmp) / "small")
        fixed = modes()[2]
        _run(fixed, s_hidden, s_samples, Path(tmp) / "small.jsonl")
    return _print([_median(r) for r in zip(*rounds, strict=True)], fixed, opts, wl.n, slots)


def _median(runs: tuple[Mode, ...]) -> Mode:
    ok = [m for m in runs if m.status == "ok"]
    if not ok:
        return runs[0]
    pick = sorted(ok, key=lambda m: m.graded_s)[len(ok) // 2]
    pick.same_rows = (
        all(m.same_rows is not False for m in runs) if pick.same_rows is not None else None
    )
    return pick


def _model(
    modes: list[Mode], fixed: Mode, opts: argparse.Namespace, n: int, slots: int
) -> dict[str, float | str]:
    pool, two = modes[0], modes[2]
    # One slot's time per sample in the pool (contention with the coordinator included).
    w = slots * pool.graded_s / n
    # The coordinating process's CPU per extra sample (scheduler and client in it, for
    # local:N): a run of SMALL samples gives its start-up share.
    c = max(two.coordinator_cpu_s - fixed.coordinator_cpu_s, 0.0) / (n - SMALL)
    workers_bound = opts.nodes * opts.cores / w
    coordinator_bound = 1 / c if c else float("inf")
    return {
        "slot_ms_per_sample": w * 1000,
        "coordinator_cpu_ms_per_sample": c * 1000,
        "workers_bound_cand_s": workers_bound,
        "coordinator_bound_cand_s": coordinator_bound,
        "model_cand_s": min(workers_bound, coordinator_bound),
        "bound_by": "workers" if workers_bound < coordinator_bound else "coordinator",
    }


def _print(modes: list[Mode], fixed: Mode, opts: argparse.Namespace, n: int, slots: int) -> int:
    pool = modes[0]
    if any(m.status != "ok" for m in [*modes, fixed]):
        for m in [*modes, fixed]:
            print(f"{m.name}: {m.status}")
        return 1
    model = _model(modes, fixed, opts, n, slots)
    if opts.json:
        out = {"n": n, "slots": slots, "modes": [asdict(m) for m in modes], "model": model}
        print(json.dumps(out))
        return 0
    print(
        f"{n} candidates x {opts.cases} cases, {slots} sandbox slots in every mode, "
        f"median of {opts.rounds} interleaved rounds"
    )
    print(
        f"{'mode':<9}{'wall s':>8}{'graded s':>10}{'cand/s':>9}{'+ms/sample':>12}"
        f"{'coord cpu s':>13}  rows"
    )
    for m in modes:
        extra = (m.graded_s - pool.graded_s) / n * 1000
        same = "-" if m.same_rows is None else ("same" if m.same_rows else "DIFFER")
        print(
            f"{m.name:<9}{m.wall_s:>8.2f}{m.graded_s:>10.2f}{m.rate(n):>9.1f}"
            f"{extra if m is not pool else 0.0:>12.2f}{m.coordinator_cpu_s:>13.2f}  {same}"
        )
    print(
        f"\nmodel, {opts.nodes} nodes x {opts.cores} cores, one slot per core:\n"
        f"  workers: {model['slot_ms_per_sample']:.2f} ms of a slot per sample (pool, here) "
        f"-> {model['workers_bound_cand_s']:.0f} cand/s\n"
        f"  coordinator (+scheduler, one process): "
        f"{model['coordinator_cpu_ms_per_sample']:.2f} ms CPU per sample (local:2 minus a "
        f"{SMALL}-sample run) -> {model['coordinator_bound_cand_s']:.0f} cand/s\n"
        f"  expect ~{model['model_cand_s']:.0f} cand/s, bound by the {model['bound_by']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
