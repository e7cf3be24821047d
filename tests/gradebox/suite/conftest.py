"""Fixtures for the suite checks: one real sandbox for the module, the data corpora."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradebox.model import Task
from sandbox.cases import load_hidden, load_public
from sandbox.runner import Sandbox, open_sandbox

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
SUITES = ROOT / "tests" / "cases" / "suites"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A real bwrap sandbox with two workers (what ``gradebox suite`` uses)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (CI installs it: apt-get install -y bubblewrap)")
    with open_sandbox("auto", workers=2) as sb:
        yield sb


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The bundled examples (hidden, public, samples, reference)."""
    return EXAMPLES


@pytest.fixture(scope="session")
def suites_dir() -> Path:
    """Data of these tests: ``weak/`` and ``props/`` corpora."""
    return SUITES


@pytest.fixture(scope="session")
def load_tasks():
    """``load_tasks(hidden, public=None) -> (tasks by fn, public tasks by fn)``."""
    return _load_tasks


def _load_tasks(hidden: Path, public: Path | None = None) -> tuple[dict[str, Task], dict]:
    cases, _ = load_hidden(hidden)
    pub = load_public(public)[0] if public is not None else {}
    by_fn: dict[str, list] = {}
    for case in cases:
        by_fn.setdefault(case.fn, []).append(case)
    return {fn: Task(fn, tuple(cs), pub.get(fn)) for fn, cs in by_fn.items()}, pub
