"""Flat at scale: gradebox grade (static on, no judge) at 10,000 and 100,000 samples.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/scale_rows.py                          # 10k then 100k (~20 min)
    .venv/bin/python bench/scale_rows.py --sizes 1000,10000 --json

Each size is the throughput workload (``bench/workload.py``, *noloop*) generated at
that size: unique ids and distinct code, so no static result is reused. The CLI runs
as documented plus ``--html`` (``--no-judge``, ``--banned-imports ''``, ``--jobs``
workers); this script samples, every 0.25 s:

* the grader process's peak resident set (``VmHWM`` in ``/proc/<pid>/status``, the
  figure the goal is about: within 50 MB from 10k to 100k);
* the resident set of its whole process tree (sandbox workers, mypy and bandit
  workers), at its largest;

and prints throughput (samples / wall, start-up included), the ratios 100k/10k, the
HTML report's size and how many samples it embeds, and the verdicts against the
workload's expected ones (0 mismatches expected).
"""

from __future__ import annotations

import argparse
import json
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


def run_size(n: int, opts: argparse.Namespace, tmp: Path) -> SizeResult:
    """Generate the workload at size ``n`` and grade it once, sampling memory."""
    wl = build_workload("noloop", n=n, n_cases=opts.cases, seed=opts.seed)
    folder = tmp / f"n{n}"
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
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(child.pid)
    hwm = tree = 0.0
    while child.poll() is None:
        hwm = max(hwm, _hwm_mb(proc))
        tree = max(tree, _tree_mb(proc))
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
    opts = p.parse_args(argv)
    sizes = sorted(int(x) for x in opts.sizes.split(","))
    results = []
    with tempfile.TemporaryDirectory(prefix="gb-scale-rows-") as tmp:
        for n in sizes:
            print(f"grading {n} samples ...", file=sys.stderr, flush=True)
            results.append(run_size(n, opts, Path(tmp)))
            r = results[-1]
            print(f"   {n}: {r.wall_s} s, {r.grader_peak_rss_mb} MB", file=sys.stderr, flush=True)
    if opts.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return 0
    print(
        f"{'samples':>8} {'wall_s':>8} {'cand/s':>7} {'grader peak RSS MB':>19} "
        f"{'tree peak RSS MB':>17} {'html MB':>8} {'embedded':>9} {'mismatch':>9}"
    )
    for r in results:
        print(
            f"{r.n:>8} {r.wall_s:>8.1f} {r.cand_per_s:>7.1f} {r.grader_peak_rss_mb:>19.1f} "
            f"{r.tree_peak_rss_mb:>17.1f} {r.html_mb:>8.2f} {r.html_embedded:>9} "
            f"{r.mismatches:>9}"
        )
    small, large = results[0], results[-1]
    if large is not small:
        grown = large.grader_peak_rss_mb - small.grader_peak_rss_mb
        print(
            f"{large.n}/{small.n}: grader peak RSS {grown:+.1f} MB"
            f" (goal within 50 MB), throughput {large.cand_per_s / small.cand_per_s:.2f}x"
            " (goal within 10 %)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
