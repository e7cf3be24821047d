"""What importing gradebox loads: its front doors are lazy, a tests-only run stays lean.

``gradebox`` and ``sandbox`` export their public names on first use (PEP 562),
so ``import gradebox`` or ``import sandbox`` loads none of the grading
pipeline, the case files' JSON-schema validator or the later layers; the
``grade`` command module loads the sandbox and nothing of the pipeline, so its
workers start before the pipeline is imported; and a ``--no-static --no-judge``
run never loads the static tools, the judge, its HTTP client or, when every input
line is valid, ``jsonschema`` (``jsonschema_rs`` accepts them). Each check
reads ``sys.modules`` of a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Never loaded by the front doors (a module, or a package and everything in it).
HEAVY = ("jsonschema", "gradebox.pipeline", "static", "judge", "openai", "httpx")
#: Never loaded by a run with --no-static --no-judge.
LATER_LAYERS = (
    "gradebox.pipeline.static",
    "gradebox.pipeline.judge",
    "gradebox.pipeline.task_static",
    "static.lockfiles",
    "packaging",
    "static.batch",
    "static.tools",
    "judge",
    "openai",
    "httpx",
    "gradebox.reports",
    "gradebox.cluster",
    "hypothesis",
    "tqdm",
    "gradebox.judging",  # the judge's figures: a run without a judge has none to compute
    "gradebox.runs.fingerprint",  # only a --run-dir run fingerprints its samples
    "gradebox.runs.rundir",
    "secrets",  # cgroup names take os.urandom (secrets loaded hmac)
)


def _loaded(code: str, *argv: str) -> set[str]:
    """``sys.modules`` of a fresh interpreter once ``code`` ran (at exit, if it exits)."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print('\\nMODULES ' + json.dumps(sorted(sys.modules))))\n" + code
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("MODULES ")]
    assert lines, f"no module list (exit {out.returncode}): {out.stderr[-2000:]}"
    return set(json.loads(lines[-1].removeprefix("MODULES ")))


def _among(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("statement", ["import gradebox", "import sandbox"])
def test_a_front_door_loads_nothing_heavy(statement: str) -> None:
    assert _among(_loaded(statement), HEAVY) == []


def test_the_grade_command_module_loads_the_sandbox_but_not_the_pipeline() -> None:
    loaded = _loaded("import gradebox.cli.grade")
    assert "sandbox.runner" in loaded  # its workers start first...
    assert _among(loaded, HEAVY) == []  # ...while the pipeline is imported


@pytest.mark.parametrize("package", ["gradebox", "sandbox"])
def test_every_exported_name_resolves(package: str) -> None:
    code = (
        f"import {package} as p\n"
        "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(p.__all__) <= set(dir(p))\n"
        f"exec('from {package} import *')\n"
    )
    _loaded(code)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import sandbox

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = sandbox.nope  # type: ignore[attr-defined]


def test_a_tests_only_run_loads_no_later_layer(tmp_path: Path) -> None:
    hidden, samples = tmp_path / "h.jsonl", tmp_path / "s.jsonl"
    hidden.write_text('{"fn": "inc", "args": [1], "expect": 2}\n')
    samples.write_text('{"id": "a", "fn": "inc", "code": "def inc(x):\\n    return x + 1\\n"}\n')
    argv = ["--hidden", str(hidden), "--samples", str(samples), "--out", str(tmp_path / "r")]
    code = (
        "from gradebox.cli import main\n"
        "sys.argv = ['gradebox', 'grade', *sys.argv[1:], '--no-static', '--no-judge', '-j', '1']\n"
        "main()\n"
    )
    loaded = _loaded(code, *argv)
    assert json.loads((tmp_path / "r").read_text())["pass"] is True  # it did grade
    assert "jsonschema_rs" in loaded  # the inputs were checked...
    assert "jsonschema" not in loaded  # ...and, all valid, needed no words for a miss
    assert _among(loaded, LATER_LAYERS) == []
