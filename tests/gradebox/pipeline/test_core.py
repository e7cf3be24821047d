"""The scheduler: grades in input order, and a bounded number of samples in flight at any size."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from gradebox.grade import GateReport, TestsReport
from gradebox.pipeline.core import Annotation, Graded, stream

TESTS = TestsReport(outcomes=("ok",), gate=GateReport("ok", (), "ok"), claim="none", latency_ms=1)


class _Stage:
    field = "static"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def run(self, items: Sequence[Graded]) -> list[Annotation]:
        self.calls.append(len(items))
        return [Annotation(None)] * len(items)

    def crashed(self, items: Sequence[Graded], message: str) -> list[Annotation]:
        raise AssertionError(message)


@pytest.mark.parametrize(("stages", "chunk", "window"), [(0, 4, 10), (1, 4, 10), (1, 8, 3)])
def test_samples_in_flight_stay_within_the_window(stages: int, chunk: int, window: int) -> None:
    count = 500
    lock = threading.Lock()
    submitted: list[int] = []
    yielded = 0
    most = 0

    with ThreadPoolExecutor(max_workers=2) as pool:

        def submit(i: int) -> Future[Graded]:
            nonlocal most
            with lock:
                submitted.append(i)
                most = max(most, len(submitted) - yielded)
            return pool.submit(Graded, f"s{i}", "f", "x = 1\n", None, None, TESTS)

        stage = _Stage()
        grades = stream(
            submit,
            count,
            lambda i, exc: pytest.fail(str(exc)),
            stages=[stage] * stages,
            chunk=chunk,
            window=window,
        )
        ids = []
        for grade in grades:
            ids.append(grade.id)
            with lock:
                yielded += 1
    assert ids == [f"s{i}" for i in range(count)]
    assert submitted == list(range(count))
    # A chunk of room, and one more for the chunk a stage is gathering.
    assert most <= max(window, (1 + bool(stages)) * chunk)
    if stages:
        assert sum(stage.calls) == count


def test_a_stage_with_a_min_batch_gets_whole_batches_but_at_the_end() -> None:
    stage = _Stage()
    stage.min_batch = 20  # three chunks of 8

    with ThreadPoolExecutor(max_workers=2) as pool:

        def submit(i: int) -> Future[Graded]:
            return pool.submit(Graded, f"s{i}", "f", "x = 1\n", None, None, TESTS)

        grades = list(
            stream(submit, 203, lambda i, exc: pytest.fail(str(exc)), stages=[stage], chunk=8)
        )
    assert [g.id for g in grades] == [f"s{i}" for i in range(203)]
    assert sum(stage.calls) == 203
    assert all(n >= 24 for n in stage.calls[:-1]), stage.calls
