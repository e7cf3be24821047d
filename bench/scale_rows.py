"""Flat at scale: gradebox grade (static on, no judge) at 10,000 and 100,000 samples.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/scale_rows.py                          # 10k, 100k, 10k again
    .venv/bin/python bench/scale_rows.py --sizes 1000,10000 --json
    .venv/bin/python bench/scale_rows.py --reports                # + --sarif --junit --run-dir

Each size is the throughput workload (``bench/workload.py``, *noloop*) generated at
that size: unique ids and distinct code, so no static result is reused. The CLI runs
as documented plus ``--html`` (``--no-judge``, ``--banned-imports ''``, ``--jobs``
workers); this script samples, every 0.25 s:

* the grader process's peak resident set (``VmHWM`` in ``/proc/<pid>/status``, the
  figure the goal is about: within 50 MB from 10k to 100k);
* the resident set of its whole process tree (sandbox workers, mypy and bandit
  workers), at its largest;
* the grader process's own CPU time (user + system), printed per sample: it does not
  grow when the machine is busy, so it tells a slower grader from a busier machine;

and prints throughput (samples / wall, start-up included, and over the CLI's own
grading phase), the HTML report's size and how many samples it embeds, the verdicts
against the workload's expected ones (0 mismatches expected), the load average around
each run, and the goal lines: grader peak RSS of the largest size minus the smallest's
(goal: within 50 MB) and their throughput ratio (goal: within 10 %).

The machine is shared and noisy: by default the smallest size runs again after the
largest (``--no-repeat`` to skip), and its figures are the mean of both runs (peak RSS:
the larger), so load that drifts during the long run hits the small figure too.
``--reports`` also asks for SARIF, JUnit and a run directory (every output that must
stay flat too).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
from workload import build_workload

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class SizeResult:
    """One size's run."""

    n: int
    wall_s: float
    cand_per_s: float
    grader_peak_rss_mb: float
    tree_peak_rss_mb: float
    html_mb: float
    html_embedded: int
    mismatches: int
    exit_code: int
    graded_per_s: float = 0.0
    load: str = ""
    grader_cpu_ms: float = 0.0
    """The grader process's own CPU (user + system) per sample: less load-sensitive than wall."""


_GRADED = re.compile(r"graded (\d+) samples in ([0-9.]+)s")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _hwm_mb(proc: psutil.Process) -> float:
    """The process's peak resident set so far, from /proc (0 when it is gone)."""
    try:
        status = Path(f"/proc/{proc.pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else 0.0


def _tree_mb(proc: psutil.Process) -> float:
    total = 0
    try:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return 0.0
    return total / 2**20


def run_size(n: int, opts: argparse.Namespace, tmp: Path, attempt: int = 0) -> SizeResult:
    """Generate the workload at size ``n`` and grade it once, sampling memory."""
    wl = build_workload("noloop", n=n, n_cases=opts.cases, seed=opts.seed)
    folder = tmp / f"n{n}-{attempt}"
    folder.mkdir()
    hidden, samples = wl.write_gradebox(folder)
    out, html = folder / "results.jsonl", folder / "report.html"
    cmd = [
        opts.gradebox,
        "grade",
        "--hidden",
        str(hidden),
        "--samples",
        str(samples),
        "--out",
        str(out),
        "--html",
        str(html),
        "--jobs",
        str(opts.workers),
        "--no-judge",
        "--banned-imports",
        "",
    ]
    if opts.reports:
        cmd += ["--sarif", str(folder / "static.sarif"), "--junit", str(folder / "junit.xml")]
        cmd += ["--run-dir", str(folder / "run")]
    before = _load()
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(child.pid)
    hwm = tree = cpu = 0.0
    while child.poll() is None:
        hwm = max(hwm, _hwm_mb(proc))
        tree = max(tree, _tree_mb(proc))
        try:
            times = proc.cpu_times()
            cpu = times.user + times.system
        except psutil.Error:
            pass
        time.sleep(0.25)
    wall = time.perf_counter() - t0
    stderr = child.stderr.read() if child.stderr else ""
    if child.returncode != 0:
        print(f"   n={n}: exit {child.returncode}: {stderr.strip()[-300:]}", file=sys.stderr)
    verdicts = {}
    with out.open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            verdicts[row["id"]] = bool(row["pass"])
    expected = {c.id: ok for c, ok in zip(wl.candidates, wl.expected_pass, strict=True)}
    mismatches = sum(verdicts.get(k) != v for k, v in expected.items())
    text = html.read_text(encoding="utf-8") if html.exists() else ""
    graded = _GRADED.search(stderr)
    return SizeResult(
        n=n,
        wall_s=round(wall, 2),
        cand_per_s=round(n / wall, 1),
        grader_peak_rss_mb=round(hwm, 1),
        tree_peak_rss_mb=round(tree, 1),
        html_mb=round(len(text.encode()) / 2**20, 2),
        html_embedded=text.count('<details class="sample"'),
        mismatches=mismatches,
        exit_code=child.returncode,
        graded_per_s=round(n / float(graded.group(2)), 1) if graded else 0.0,
        load=f"{before} -> {_load()}",
        grader_cpu_ms=round(cpu * 1000 / n, 2),
    )


def _mean(runs: list[SizeResult]) -> SizeResult:
    """One size's figures over its runs: mean throughput, the largest peaks."""
    if len(runs) == 1:
        return runs[0]
    wall = sum(r.wall_s for r in runs)
    phase = [r.graded_per_s for r in runs if r.graded_per_s]
    return SizeResult(
        n=runs[0].n,
        wall_s=round(wall / len(runs), 2),
        cand_per_s=round(runs[0].n * len(runs) / wall, 1),
        grader_peak_rss_mb=max(r.grader_peak_rss_mb for r in runs),
        tree_peak_rss_mb=max(r.tree_peak_rss_mb for r in runs),
        html_mb=max(r.html_mb for r in runs),
        html_embedded=max(r.html_embedded for r in runs),
        mismatches=max(r.mismatches for r in runs),
        exit_code=max(r.exit_code for r in runs),
        graded_per_s=round(sum(phase) / len(phase), 1) if phase else 0.0,
        load=" | ".join(r.load for r in runs),
        grader_cpu_ms=round(sum(r.grader_cpu_ms for r in runs) / len(runs), 2),
    )


def main(argv: list[str] | None = None) -> int:
    """Run every size once, smallest first, and print the figures and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated sample counts")
    p.add_argument("--cases", type=int, default=10, help="hidden cases per task (default 10)")
    p.add_argument("--workers", type=int, default=2, help="--jobs (default 2)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--gradebox", default=str(REPO_ROOT / ".venv" / "bin" / "gradebox"))
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-repeat", action="store_true", help="do not run the smallest size again at the end"
    )
    p.add_argument("--reports", action="store_true", help="also --sarif, --junit and --run-dir")
    opts = p.parse_args(argv)
    sizes = sorted(int(x) for x in opts.sizes.split(","))
    order = [*sizes, sizes[0]] if len(sizes) > 1 and not opts.no_repeat else sizes
    runs: dict[int, list[SizeResult]] = {}
    with tempfile.TemporaryDirectory(prefix="gb-scale-rows-") as tmp:
        for attempt, n in enumerate(order):
            print(f"grading {n} samples (load {_load()}) ...", file=sys.stderr, flush=True)
            r = run_size(n, opts, Path(tmp), attempt)
            runs.setdefault(n, []).append(r)
            print(
                f"   {n}: {r.wall_s} s, {r.cand_per_s} cand/s, {r.grader_peak_rss_mb} MB, "
                f"load {r.load}",
                file=sys.stderr,
                flush=True,
            )
    results = [_mean(runs[n]) for n in sizes]
    if opts.json:
        print(json.dumps({"runs": [asdict(r) for n in sizes for r in runs[n]]}, indent=2))
        return 0
    print(
        f"{'samples':>8} {'wall_s':>8} {'cand/s':>7} {'graded/s':>8} {'cpu ms/s':>8} "
        f"{'grader peak RSS MB':>19} {'tree peak RSS MB':>17} {'html MB':>8} {'embedded':>9} "
        f"{'mismatch':>9}  load (1/5/15)"
    )
    for n in sizes:
        for r in runs[n] + ([results[sizes.index(n)]] if len(runs[n]) > 1 else []):
            mean = len(runs[n]) > 1 and r is results[sizes.index(n)]
            print(
                f"{r.n:>8} {r.wall_s:>8.1f} {r.cand_per_s:>7.1f} {r.graded_per_s:>8.1f} "
                f"{r.grader_cpu_ms:>8.2f} {r.grader_peak_rss_mb:>19.1f} "
                f"{r.tree_peak_rss_mb:>17.1f} {r.html_mb:>8.2f} "
                f"{r.html_embedded:>9} {r.mismatches:>9}  " + ("(mean)" if mean else r.load)
            )
    small, large = results[0], results[-1]
    if large is not small:
        for line in goal_lines(small, large):
            print(line)
    return 0


def goal_lines(small: SizeResult, large: SizeResult) -> list[str]:
    """The goal's two checks, each with its figure and whether it is met."""
    grown = large.grader_peak_rss_mb - small.grader_peak_rss_mb
    ratio = large.cand_per_s / small.cand_per_s if small.cand_per_s else 0.0
    phase = large.graded_per_s / small.graded_per_s if small.graded_per_s else 0.0
    return [
        f"goal RSS: grader peak RSS at {large.n} minus at {small.n}: {grown:+.1f} MB "
        f"(goal within 50 MB: {'met' if grown <= 50 else 'NOT met'})",
        f"goal throughput: cand/s at {large.n} / at {small.n}: {ratio:.3f}x "
        f"(goal within 10 %: {'met' if abs(ratio - 1) <= 0.10 else 'NOT met'}; "
        f"grading phase alone {phase:.3f}x)",
        f"grader CPU per sample at {large.n} / at {small.n}: "
        f"{large.grader_cpu_ms / small.grader_cpu_ms if small.grader_cpu_ms else 0.0:.3f}x "
        "(the grader's own work per sample, whatever the load)",
    ]


if __name__ == "__main__":
    sys.exit(main())
