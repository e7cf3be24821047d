"""The deps layer's cost: indexing the real advisory snapshot, and a lookup per candidate.

Prints the time to index the PyPA snapshot (cold, then the stamp check of a warm
open), and per candidate the deps layer (:func:`static.deps.check`) beside its
peer from the same run, the imports layer (:func:`static.imports.check`), on the
same candidates (each imports jinja2, yaml and requests; the lockfile pins them).

    .venv/bin/python -P bench/advisories.py [SNAPSHOT_DIR]   (-P: bench/static.py is not `static`)
"""

from __future__ import annotations

import importlib.metadata
import sys
import tempfile
import time
from pathlib import Path

from static import deps, imports
from static.advisories import AdvisoryStore

SNAPSHOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "advisories"
PINS = {"jinja2": "2.7", "pyyaml": "5.3", "requests": "2.19.0", "django": "3.2"}


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SNAPSHOT / "pypa-advisory-database"
    env = importlib.metadata.packages_distributions()
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        AdvisoryStore.open(source, Path(cache)).close()
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        store = AdvisoryStore.open(source, Path(cache))
        warm = time.perf_counter() - t0
        codes = [
            f"import jinja2\nimport yaml\nimport requests\nimport django\n\ndef f{i}(x):\n"
            f"    return jinja2.Template(x).render(n={i})\n"
            for i in range(500)
        ]
        t0 = time.perf_counter()
        deps.check(codes[0], store, PINS, installed={}, environment=env)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for code in codes:
            deps.check(code, store, PINS, installed={}, environment=env)
        per_deps = (time.perf_counter() - t0) / len(codes)
        t0 = time.perf_counter()
        for code in codes:
            imports.check(code, PINS, environment=env)
        per_imports = (time.perf_counter() - t0) / len(codes)
        snap = store.snapshot
        store.close()
    print(f"snapshot: {snap.records} records, {snap.skipped} skipped, as of {snap.date}")
    print(f"index (cold build): {cold:.2f} s; open of a built index (stamp check): {warm:.3f} s")
    print(f"first candidate (reads 4 distributions' advisories): {first * 1000:.2f} ms")
    print(f"deps layer per candidate: {per_deps * 1000:.3f} ms")
    print(f"peer, imports layer per candidate (same run, same code): {per_imports * 1000:.3f} ms")


if __name__ == "__main__":
    main()
