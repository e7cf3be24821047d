"""The real PyPA advisory snapshot the deps tests read, and a store over it shared by a run.

The snapshot lives beside the checkout (``shared/data/advisories``); tests that
need it skip, saying where they looked, when it is absent. The index is built
once per test run into a folder every xdist worker shares (builds are atomic, so
two workers racing both end with a whole index).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from static.advisories import AdvisoryStore

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "advisories"
SNAPSHOT = DATA / "pypa-advisory-database"


def real_store(factory: pytest.TempPathFactory) -> AdvisoryStore:
    """The real snapshot's store (skips when the data is not there)."""
    if not (SNAPSHOT / "vulns").is_dir():
        pytest.skip(f"the PyPA advisory snapshot is not at {SNAPSHOT}")
    shared = factory.getbasetemp().parent / "advisory-index"
    return AdvisoryStore.open(SNAPSHOT, shared)
