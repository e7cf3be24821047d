"""The sandbox's workers start once per eval, serve every sample and epoch, and stop after it.

Counted from inside: the candidate reports the inode of its PID namespace (one
per sandbox worker) through its outcomes, one bit per hidden case, so each row
says which worker ran it. Eight epochs on two workers show at most two
namespaces; a sandbox opened per sample would show eight. After the eval, no
worker process of this test is left.
"""

from __future__ import annotations

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import read_eval_log
from inspect_ai.solver import generate
from waiting import live_children

from gradebox.integrations.inspect import gradebox_dataset, gradebox_scorer

EPOCHS = 8
JOBS = 2


def _worker_of(outcomes: list[str]) -> int:
    assert set(outcomes) <= {"ok", "wrong"}, outcomes
    return sum(1 << i for i, outcome in enumerate(outcomes) if outcome == "ok")


def _workers(task, model, log_dir) -> set[int]:
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    samples = read_eval_log(log.location).samples or []
    assert len(samples) == EPOCHS
    rows = [next(iter(s.scores.values())).metadata for s in samples]
    assert sorted(r["id"] for r in rows) == [f"worker#{i}" for i in range(EPOCHS)]
    return {_worker_of(r["outcomes"]) for r in rows}


def test_workers_start_once_per_eval_and_stop_when_it_ends(taskset, reply, mock_model, log_dir):
    before = live_children()
    dataset = MemoryDataset([s for s in gradebox_dataset(taskset) if s.id == "worker"])
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=gradebox_scorer(taskset, static=False, jobs=JOBS),
        epochs=EPOCHS,
    )
    bits = reply("worker", "worker_bits")
    first = _workers(task, mock_model(dataset, {"worker": [bits] * EPOCHS}), log_dir)
    assert 1 <= len(first) <= JOBS, first  # every sample on the eval's own workers
    assert all(ns > 0 for ns in first)
    assert live_children() <= before  # the run's end stopped them
    # The same task evaluated again gets workers of its own, and stops them too.
    again = _workers(task, mock_model(dataset, {"worker": [bits] * EPOCHS}), log_dir)
    assert 1 <= len(again) <= JOBS, again
    assert live_children() <= before


def test_a_refused_sandbox_fails_the_eval_saying_why(
    taskset, reply, mock_model, log_dir, monkeypatch
):
    dataset = MemoryDataset([s for s in gradebox_dataset(taskset) if s.id == "is_even"])
    task = Task(
        dataset=dataset,
        solver=generate(),
        scorer=gradebox_scorer(taskset, static=False, jobs=1),
        epochs=3,
    )
    model = mock_model(dataset, {"is_even": [reply("is_even", "right")] * 3})
    monkeypatch.setenv("PATH", str(log_dir))  # no bwrap to be found: the sandbox refuses
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    assert log.status == "error"
    assert "bwrap" in str(log.error)
