"""Per-candidate cost of the static tool layers: batched versus one process per file per tool.

Prints figures; asserts nothing about timing. Run from the repository root::

    .venv/bin/python bench/static.py                       # 500 candidates, 2 cores
    .venv/bin/python bench/static.py --per-file 500        # per-file on every candidate (slow)
    .venv/bin/python bench/static.py --n 200 --json

What is measured, in one run, on generated ~30-line candidates (every measurement
gets candidates of its own, so mypy's cache never holds a measured candidate):

* **batched, per layer**: ``check_batch`` with one layer on, over ``--n`` candidates;
* **batched, whole stage**: ``check_batch`` with all three layers at once on
  ``--jobs`` cores (the figure the 20 ms goal is about);
* **per file, per layer**: the same layer functions called with one file at a
  time, i.e. one ruff / mypy / bandit process per candidate and tool, on a sample
  of ``--per-file`` candidates (mypy with the same warm cache: the fair
  comparison; plus a few cold runs without a cache, like a naive script);
* **single candidate, warm**: a :class:`static.batch.Session` (bandit in-process,
  a warm mypy worker, ruff as a process) checking ``--single`` candidates one at
  a time, after start-up.

Wall time is what a caller waits; CPU time (this process and its children) is
what the machine pays. The goals from the issue are printed with the figures:
whole stage at most 20 ms per candidate batched on 2 cores and at least 30x
cheaper than per-file, and at most 150 ms for one candidate on a warm service.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# This file is bench/static.py: run as a script, its own folder comes first on sys.path
# and would shadow the `static` package it measures.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from static.batch import (  # noqa: E402
    LAYERS,
    Candidate,
    LayerName,
    Session,
    StaticConfig,
    check_batch,
)
from static.typecheck import prepare  # noqa: E402

LAYER_NAMES: tuple[LayerName, ...] = ("lint", "types", "security")

TEMPLATES: list[tuple[str, str]] = [
    (
        "def {fn}(values, k={k}):\n"
        '    """Scale, filter and summarise values ({salt})."""\n'
        "    kept = []\n"
        "    for v in values:\n"
        "        if v % (k + 1) == 0:\n"
        "            kept.append(v * {k})\n"
        "        elif v < 0:\n"
        "            kept.append(-v)\n"
        "        else:\n"
        "            kept.append(v + k)\n"
        "    if not kept:\n"
        "        return 0.0\n"
        "    kept.sort()\n"
        "    middle = len(kept) // 2\n"
        "    if len(kept) % 2:\n"
        "        median = float(kept[middle])\n"
        "    else:\n"
        "        median = (kept[middle - 1] + kept[middle]) / 2\n"
        "    spread = max(kept) - min(kept)\n"
        "    total = sum(kept)\n"
        "    mean = total / len(kept)\n"
        "    if spread == 0:\n"
        "        return mean\n"
        "    score = (mean - median) / spread\n"
        "    if score > {k}:\n"
        "        score = float({k})\n"
        "    return round(score + median * 0, 6)\n",
        "def {fn}(values: list[int], k: int = {k}) -> float",
    ),
    (
        "import json\n"
        "import re\n"
        "from collections import Counter\n\n\n"
        'WORD = re.compile(r"[a-z\']+")\n\n\n'
        "def {fn}(text: str, top: int = {k}) -> str:\n"
        '    """Most common words as JSON ({salt})."""\n'
        "    counts: Counter[str] = Counter()\n"
        "    for line in text.splitlines():\n"
        "        line = line.strip().lower()\n"
        "        if not line or line.startswith('#'):\n"
        "            continue\n"
        "        for word in WORD.findall(line):\n"
        "            if len(word) > 2:\n"
        "                counts[word] += 1\n"
        "    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))\n"
        "    result = []\n"
        "    for word, count in ranked[:top]:\n"
        "        result.append({{'word': word, 'count': count}})\n"
        "    return json.dumps(result)\n",
        "def {fn}(text: str, top: int = {k}) -> str",
    ),
    (
        "import heapq\n"
        "from typing import Optional\n\n\n"
        "def {fn}(graph, start, goal):\n"
        '    """Shortest path length by Dijkstra ({salt})."""\n'
        "    dist = {{start: 0}}\n"
        "    queue = [(0, start)]\n"
        "    seen = set()\n"
        "    while queue:\n"
        "        d, node = heapq.heappop(queue)\n"
        "        if node in seen:\n"
        "            continue\n"
        "        seen.add(node)\n"
        "        if node == goal:\n"
        "            return d\n"
        "        for nxt, weight in graph.get(node, []):\n"
        "            nd = d + weight + {k} * 0\n"
        "            if nd < dist.get(nxt, float('inf')):\n"
        "                dist[nxt] = nd\n"
        "                heapq.heappush(queue, (nd, nxt))\n"
        "    return None\n\n\n"
        "def helper_{fn}(pairs):\n"
        "    graph = {{}}\n"
        "    for a, b in pairs:\n"
        "        graph.setdefault(a, []).append((b, 1))\n"
        "    return graph\n",
        "def {fn}(graph: dict[int, list[tuple[int, int]]], start: int, goal: int) -> Optional[int]",
    ),
    (
        "import subprocess\n"
        "import sqlite3\n\n\n"
        "def {fn}(conn: sqlite3.Connection, name: str, limit: int = {k}) -> list[str]:\n"
        '    """Look a user up, the unsafe way ({salt})."""\n'
        "    rows = conn.execute(\n"
        "        \"SELECT name FROM users WHERE name = '%s' LIMIT %d\" % (name, limit)\n"
        "    ).fetchall()\n"
        "    names = []\n"
        "    for row in rows:\n"
        "        value = row[0]\n"
        "        if isinstance(value, str):\n"
        "            names.append(value.strip())\n"
        "    if not names:\n"
        "        subprocess.run('echo missing ' + name, shell=True, check=False)\n"
        "    seen = set()\n"
        "    unique = []\n"
        "    for item in names:\n"
        "        if item not in seen:\n"
        "            seen.add(item)\n"
        "            unique.append(item)\n"
        "    return unique\n",
        "def {fn}(conn: sqlite3.Connection, name: str, limit: int = {k}) -> list[str]",
    ),
    (
        "def {fn}(matrix, k={k}):\n"
        '    """Rotate a square matrix k times and return its trace ({salt})."""\n'
        "    size = len(matrix)\n"
        "    for row in matrix:\n"
        "        if len(row) != size:\n"
        "            raise ValueError('not square')\n"
        "    current = [list(row) for row in matrix]\n"
        "    for _ in range(k % 4):\n"
        "        rotated = []\n"
        "        for col in range(size):\n"
        "            new_row = []\n"
        "            for row in reversed(current):\n"
        "                new_row.append(row[col])\n"
        "            rotated.append(new_row)\n"
        "        current = rotated\n"
        "    trace = 0\n"
        "    for i in range(size):\n"
        "        trace += current[i][i]\n"
        "    if trace < 0:\n"
        "        return str(trace)\n"
        "    return trace\n",
        "def {fn}(matrix: list[list[int]], k: int = {k}) -> int",
    ),
]


@dataclass
class Figure:
    """One measurement."""

    name: str
    candidates: int
    wall_s: float
    cpu_s: float

    @property
    def wall_ms(self) -> float:
        """Wall milliseconds per candidate."""
        return self.wall_s / self.candidates * 1000

    @property
    def cpu_ms(self) -> float:
        """CPU milliseconds per candidate (this process and its finished children)."""
        return self.cpu_s / self.candidates * 1000


def log(message: str) -> None:
    """Progress on stderr; stdout carries the figures."""
    print(message, file=sys.stderr, flush=True)


def generate(n: int, salt: str) -> list[Candidate]:
    """``n`` distinct candidates (the salt keeps them out of every earlier cache)."""
    rng = random.Random(salt)
    candidates = []
    for i in range(n):
        code, signature = TEMPLATES[i % len(TEMPLATES)]
        values = {"fn": f"solve_{i}", "k": rng.randint(1, 9), "salt": f"{salt}-{i}"}
        candidates.append(
            Candidate(code.format(**values), values["fn"], signature.format(**values))
        )
    return candidates


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(name: str, candidates: int, work: Callable[[], object]) -> Figure:
    cpu, start = cpu_now(), time.perf_counter()
    work()
    figure = Figure(name, candidates, time.perf_counter() - start, cpu_now() - cpu)
    log(f"  {name}: {figure.wall_ms:.2f} ms/candidate wall, {figure.cpu_ms:.2f} ms CPU")
    return figure


def batched(args: argparse.Namespace, cache: Path) -> dict[str, Figure]:
    figures = {}
    for layer in LAYER_NAMES:
        config = StaticConfig(layers=frozenset({layer}), jobs=args.jobs, cache_dir=cache)
        candidates = generate(args.n, f"batch-{layer}")
        figures[layer] = measure(
            f"batched {layer}", args.n, lambda c=candidates, k=config: check_batch(c, k)
        )
    config = StaticConfig(jobs=args.jobs, cache_dir=cache)
    candidates = generate(args.n, "batch-all")
    figures["stage"] = measure("batched stage", args.n, lambda: check_batch(candidates, config))
    return figures


def per_file(args: argparse.Namespace, cache: Path, scratch: Path) -> dict[str, Figure]:
    """One process per file per tool: each layer's check called with a single file."""
    figures = {}
    for layer in LAYER_NAMES:
        config = StaticConfig(cache_dir=cache)
        files = write(generate(args.per_file, f"file-{layer}"), scratch / layer, layer)
        figures[layer] = measure(
            f"per-file {layer}",
            len(files),
            lambda f=files, k=config, name=layer: [LAYERS[name]([p], k) for p in f],
        )
    cold = write(generate(args.cold, "file-cold"), scratch / "cold", "types")
    figures["types-cold"] = measure(
        "per-file types, no cache",
        len(cold),
        lambda: [LAYERS["types"]([p], StaticConfig()) for p in cold],
    )
    return figures


def write(candidates: list[Candidate], directory: Path, layer: LayerName) -> list[Path]:
    directory.mkdir(parents=True)
    paths = []
    for i, candidate in enumerate(candidates):
        path = directory / f"c-{i:04d}.py"
        text = candidate.code
        if layer == "types":
            text = prepare(candidate.code, candidate.fn, candidate.signature)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def single(args: argparse.Namespace, cache: Path) -> dict[str, float]:
    started = time.perf_counter()
    with Session(StaticConfig(cache_dir=cache)) as session:
        startup = time.perf_counter() - started
        times = []
        for candidate in generate(args.single, "single"):
            start = time.perf_counter()
            session.check(candidate)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    figures = {
        "startup_s": startup,
        "median_ms": statistics.median(times),
        "p90_ms": times[int(len(times) * 0.9) - 1],
        "max_ms": times[-1],
    }
    log(f"  single: median {figures['median_ms']:.1f} ms, p90 {figures['p90_ms']:.1f} ms")
    return figures


def report(
    batch: dict[str, Figure], files: dict[str, Figure], one: dict[str, float], args: Any
) -> str:
    lines = [
        f"static layers: {args.n} candidates (~30 lines), {args.jobs} jobs, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        "",
        f"{'layer':<10}{'batched wall':>14}{'batched CPU':>13}{'per-file wall':>15}"
        f"{'per-file CPU':>14}{'ratio (wall)':>14}",
    ]
    for layer in LAYER_NAMES:
        b, f = batch[layer], files[layer]
        lines.append(
            f"{layer:<10}{b.wall_ms:>11.2f} ms{b.cpu_ms:>10.2f} ms{f.wall_ms:>12.2f} ms"
            f"{f.cpu_ms:>11.2f} ms{f.wall_ms / b.wall_ms:>13.1f}x"
        )
    whole_file = sum(files[layer].wall_ms for layer in LAYER_NAMES)
    stage = batch["stage"]
    ratio = whole_file / stage.wall_ms
    lines += [
        f"{'stage':<10}{stage.wall_ms:>11.2f} ms{stage.cpu_ms:>10.2f} ms{whole_file:>12.2f} ms"
        f"{'':>14}{ratio:>13.1f}x",
        "",
        f"per-file mypy without a cache: {files['types-cold'].wall_ms:.0f} ms per candidate "
        f"({files['types-cold'].candidates} files)",
        f"per-file sample: {args.per_file} candidates per layer; batched: {args.n} per run",
        f"single candidate, warm session ({args.single} checks, start-up "
        f"{one['startup_s']:.2f} s): median {one['median_ms']:.1f} ms, "
        f"p90 {one['p90_ms']:.1f} ms, max {one['max_ms']:.1f} ms",
        "",
        f"goal: stage <= 20 ms/candidate batched on 2 cores: "
        f"{'met' if stage.wall_ms <= 20 else 'MISSED'} ({stage.wall_ms:.2f} ms)",
        f"goal: >= 30x cheaper than per-file: {'met' if ratio >= 30 else 'MISSED'} ({ratio:.0f}x)",
        f"goal: <= 150 ms for one candidate on a warm service: "
        f"{'met' if one['p90_ms'] <= 150 else 'MISSED'} (p90 {one['p90_ms']:.1f} ms)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="candidates per batched run")
    parser.add_argument("--jobs", type=int, default=2, help="cores for the batched runs")
    parser.add_argument("--per-file", type=int, default=40, help="candidates per per-file layer")
    parser.add_argument("--cold", type=int, default=3, help="per-file mypy runs without cache")
    parser.add_argument("--single", type=int, default=60, help="warm single-candidate checks")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gradebox-bench-static-") as tmp:
        cache, scratch = Path(tmp) / "mypy-cache", Path(tmp) / "files"
        log("warming mypy's cache (the standard library) ...")
        warm = measure(
            "cold batch of 20",
            20,
            lambda: check_batch(generate(20, "warm"), StaticConfig(cache_dir=cache)),
        )
        log("batched ...")
        batch = batched(args, cache)
        log("per file ...")
        files = per_file(args, cache, scratch)
        log("single candidate, warm ...")
        one = single(args, cache)
    if args.json:
        figures = {
            "batched": {
                k: asdict(v) | {"wall_ms": v.wall_ms, "cpu_ms": v.cpu_ms} for k, v in batch.items()
            },
            "per_file": {
                k: asdict(v) | {"wall_ms": v.wall_ms, "cpu_ms": v.cpu_ms} for k, v in files.items()
            },
            "single": one,
            "cold_warmup_s": warm.wall_s,
            "n": args.n,
            "jobs": args.jobs,
        }
        print(json.dumps(figures, indent=2))
    else:
        print(report(batch, files, one, args))


if __name__ == "__main__":
    main()
