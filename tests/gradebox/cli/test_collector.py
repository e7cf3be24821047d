"""The cyclic collector is paused while a command starts, and what start-up made is frozen.

Start-up's ~10^5 long-lived objects (modules, classes, dataclass functions) cost
collector passes that free nothing (~10-20 ms of a one-candidate ``grade``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gradebox.cli import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was_on = gc.isenabled()
    yield
    gc.unfreeze()  # what the tests froze goes back to the collector
    if was_on:
        gc.enable()
    else:
        gc.disable()


def test_no_collection_runs_while_paused_and_what_was_made_is_frozen() -> None:
    gc.enable()
    passes: list[str] = []

    def seen(phase: str, _info: dict[str, int]) -> None:
        passes.append(phase)

    frozen = gc.get_freeze_count()
    gc.callbacks.append(seen)
    try:
        with collector_paused():
            assert not gc.isenabled()
            made = [[i] for i in range(50_000)]  # far past the first generation's threshold
            assert passes == []
    finally:
        gc.callbacks.remove(seen)
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
