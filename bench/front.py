"""Cost and benefit of the service's process hop for extract and gate (the "front").

The service runs extract and gate in worker processes (``gradebox.service.front``),
the CLI grader in its own threads (``Grader.front``). Both are timed in the same
run, interleaved sample by sample so that machine load hits both alike:

1. **latency**: each sample of ``examples/samples.jsonl`` (small replies and code) and
   one 128 KiB sample (the longest the server takes), one at a time, ``--rounds``
   times: in-thread front vs ``FrontPool.check`` (pickling, the pipe, the worker).
2. **isolation**: a small sample's front while ``--heavy`` threads gate 128 KiB samples
   in the same process (what the in-thread front cost another task), vs the same small
   sample through the pool while the heavy samples gate in the pool. Each probe is due
   at a moment of its own and timed from then, so waiting for the GIL counts.

Prints medians and ratios (pool / thread); checks nothing::

    .venv/bin/python bench/front.py
    .venv/bin/python bench/front.py --rounds 200 --workers 4 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

# Run as a script, bench/ comes first on sys.path, and bench/static.py would shadow
# the `static` package the grader imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from gradebox.model import Sample, Task  # noqa: E402
from gradebox.pipeline.tests import GradeConfig, Grader  # noqa: E402
from gradebox.service.engine.front import FrontPool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HEAVY = "def is_even(n):\n    return n % 2 == 0\n" + "y = 1\n" * 21_000


def _samples() -> list[Sample]:
    rows = [json.loads(x) for x in (ROOT / "examples/samples.jsonl").read_text().splitlines() if x]
    small = [Sample(r["id"], r["fn"], r.get("reply"), r.get("code"), r.get("claim")) for r in rows]
    return [*small, Sample("heavy-128k", "is_even", code=HEAVY)]


def _time(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def latency(grader: Grader, pool: FrontPool, samples: list[Sample], rounds: int) -> dict[str, Any]:
    thread: dict[str, list[float]] = {s.id: [] for s in samples}
    process: dict[str, list[float]] = {s.id: [] for s in samples}
    for _ in range(rounds):
        for s in samples:
            job = grader.front_job(s)
            thread[s.id].append(_time(lambda s=s: grader.front(s)))
            process[s.id].append(_time(lambda job=job: pool.check(job, 30.0)))
    small = [s.id for s in samples if s.id != "heavy-128k"]
    t_small = statistics.median(statistics.median(thread[i]) for i in small)
    p_small = statistics.median(statistics.median(process[i]) for i in small)
    t_heavy = statistics.median(thread["heavy-128k"])
    p_heavy = statistics.median(process["heavy-128k"])
    return {
        "small_samples": len(small),
        "small_thread_ms": round(t_small * 1000, 3),
        "small_process_ms": round(p_small * 1000, 3),
        "small_ratio": round(p_small / t_small, 2),
        "small_added_ms": round((p_small - t_small) * 1000, 3),
        "heavy_thread_ms": round(t_heavy * 1000, 1),
        "heavy_process_ms": round(p_heavy * 1000, 1),
        "heavy_ratio": round(p_heavy / t_heavy, 3),
    }


def isolation(grader: Grader, pool: FrontPool, heavy: int, probes: int) -> dict[str, Any]:
    small = Sample("probe", "is_even", code="def is_even(n):\n    return n % 2 == 0\n")
    big = Sample("heavy", "is_even", code=HEAVY)

    def under_load(run_heavy: Any, run_probe: Any) -> tuple[float, float]:
        stop = threading.Event()

        def load() -> None:
            while not stop.is_set():
                run_heavy()

        threads = [threading.Thread(target=load) for _ in range(heavy)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        waits = []
        for i in range(probes):
            # A probe is due at a moment of its own (like a request arriving) and timed
            # from then: waiting for a thread deep in a parse to let go of the GIL counts.
            due = time.perf_counter() + 0.01 + 0.04 * ((i * 7) % 10) / 10
            time.sleep(due - time.perf_counter())
            run_probe()
            waits.append(time.perf_counter() - due)
        stop.set()
        for t in threads:
            t.join()
        return statistics.median(waits), max(waits)

    job, big_job = grader.front_job(small), grader.front_job(big)
    in_thread = under_load(lambda: grader.front(big), lambda: grader.front(small))
    in_pool = under_load(lambda: pool.check(big_job, 30.0), lambda: pool.check(job, 30.0))
    return {
        "heavy_at_once": heavy,
        "probe_thread_ms": round(in_thread[0] * 1000, 2),
        "probe_process_ms": round(in_pool[0] * 1000, 2),
        "ratio": round(in_pool[0] / in_thread[0], 3),
        "probe_thread_max_ms": round(in_thread[1] * 1000, 1),
        "probe_process_max_ms": round(in_pool[1] * 1000, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8, help="front processes (serve's default)")
    ap.add_argument("--heavy", type=int, default=4, help="128 KiB samples gating at once")
    ap.add_argument("--probes", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    samples = _samples()
    tasks = {s.fn: Task(s.fn, ()) for s in samples}
    grader = Grader(None, tasks, GradeConfig())  # type: ignore[arg-type]  # the front only
    pool = FrontPool(args.workers)
    t0 = time.perf_counter()
    pool.start()
    started = time.perf_counter() - t0
    try:
        out = {
            "workers": args.workers,
            "pool_start_s": round(started, 3),
            "latency": latency(grader, pool, samples, args.rounds),
            "isolation": isolation(grader, pool, args.heavy, args.probes),
        }
    finally:
        pool.close()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    lat, iso = out["latency"], out["isolation"]
    print(f"pool of {args.workers} started in {out['pool_start_s']} s")
    print(
        f"latency, {lat['small_samples']} small samples (median of medians): "
        f"thread {lat['small_thread_ms']} ms, process {lat['small_process_ms']} ms "
        f"= {lat['small_ratio']}x (+{lat['small_added_ms']} ms)"
    )
    print(
        f"latency, 128 KiB sample: thread {lat['heavy_thread_ms']} ms, "
        f"process {lat['heavy_process_ms']} ms = {lat['heavy_ratio']}x"
    )
    print(
        f"small sample while {iso['heavy_at_once']} heavy ones gate, median (max): "
        f"thread {iso['probe_thread_ms']} ms ({iso['probe_thread_max_ms']}), "
        f"process {iso['probe_process_ms']} ms ({iso['probe_process_max_ms']}) = {iso['ratio']}x"
    )


if __name__ == "__main__":
    main()
