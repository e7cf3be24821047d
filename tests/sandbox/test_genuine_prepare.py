"""genuine.prepare: what the zygote makes once, and when a candidate's process may not use it.

Run in a fresh interpreter each (an audit hook cannot be removed), as the harness
runs: ``genuine`` imported from the child folder, the standard library only.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sandbox.child

CHILD = Path(sandbox.child.__file__).parent


def _run(body: str) -> str:
    script = f"import sys\nsys.path.insert(0, {str(CHILD)!r})\nimport genuine\n{body}"
    cmd = [sys.executable, "-I", "-S", "-c", script]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_module_the_zygote_loaded_after_prepare_is_still_genuine() -> None:
    # The prepared record predates the import: watch_imports must see the count moved.
    out = _run(
        "genuine.prepare()\n"
        "import statistics\n"
        "genuine.watch_imports()\n"
        "print(genuine.genuine_name(statistics.StatisticsError))\n"
    )
    assert out == "statistics.StatisticsError"


def test_a_module_the_candidate_imports_after_prepare_is_loaded_by_the_hook() -> None:
    out = _run(
        "genuine.prepare()\n"
        "genuine.watch_imports()\n"
        "sys.modules['fake'] = None\n"  # a change the count sees, made after the hook
        "import statistics\n"
        "print(genuine.genuine_name(statistics.StatisticsError))\n"
    )
    assert out == "statistics.StatisticsError"


def test_without_prepare_the_process_records_for_itself() -> None:
    out = _run(
        "import statistics\n"
        "genuine.watch_imports()\n"
        "import csv\n"
        "print(genuine.genuine_name(statistics.StatisticsError), genuine.genuine_name(csv.Error))\n"
    )
    assert out == "statistics.StatisticsError _csv.Error"
