"""Faults on a real cluster: SIGKILL of a worker's pid, a sample that cannot be graded, the
scheduler gone. Each test has a scheduler of its own (its configuration is part of the test).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import time
from pathlib import Path

from .conftest import GRADEBOX, clean_env, dask_cluster, grade, rows, write_slow_task

N = 12


def _start(args: list[str], out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [GRADEBOX, "grade", *args, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )


def _wait_rows(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not (path.exists() and len(path.read_text().splitlines()) >= n):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "no rows"
        time.sleep(0.05)


def _kill_a_busy_worker(c) -> subprocess.Popen[bytes]:
    """SIGKILL the `gradebox worker` process that holds a sample right now; return it."""
    pids = {proc.pid: proc for proc in c.workers}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = [a for a, keys in c.client.processing().items() if keys]
        if busy:
            pid = c.client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            return pids[pid]
        time.sleep(0.02)
    raise AssertionError("no worker ever held a sample")


def _ids(path: Path) -> list[str]:
    return [str(r["id"]) for r in rows(path)]


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path):
    with dask_cluster(tmp_path) as c:
        c.add_worker("--jobs", "1")
        c.add_worker("--jobs", "1")
        args = [*write_slow_task(tmp_path, samples=N), "--scheduler", c.address]
        out = tmp_path / "out.jsonl"
        proc = _start(args, out)
        _wait_rows(out, 2, proc)
        victim = _kill_a_busy_worker(c)  # its samples in flight go to the other worker
        _, err = proc.communicate(timeout=240)
        assert victim.wait(timeout=10) == -signal.SIGKILL
    assert proc.returncode == 0, err
    assert _ids(out) == [f"s{i:02d}" for i in range(N)]
    assert all(r["verdict"] == "pass" and r["infra_error"] is None for r in rows(out))


def test_a_sample_past_its_allowed_attempts_is_an_infra_row_and_resume_grades_it(tmp_path):
    # allowed-failures 0: the first death of a worker holding a sample decides it.
    with dask_cluster(tmp_path, allowed_failures=0) as c:
        c.add_worker("--jobs", "1")
        c.add_worker("--jobs", "1")
        run_dir = tmp_path / "run"
        args = [*write_slow_task(tmp_path, samples=N), "--scheduler", c.address]
        args += ["--run-dir", str(run_dir)]
        out = tmp_path / "out.jsonl"
        proc = _start(args, out)
        _wait_rows(out, 2, proc)
        victim = _kill_a_busy_worker(c)
        _, err = proc.communicate(timeout=240)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        assert proc.returncode == 2, err
        first = rows(out)
        assert _ids(out) == [f"s{i:02d}" for i in range(N)]
        infra = [r for r in first if r["infra_error"]]
        assert infra, "the killed worker held no sample"
        for r in infra:
            assert (r["verdict"], r["reason"]) == ("needs_review", "infra_error")
            assert "died" in str(r["infra_error"])
        assert all(r["verdict"] == "pass" for r in first if not r["infra_error"])
        again = grade(*args)
    assert again.returncode == 0, again.stderr
    assert f"regraded {len(infra)}: an infrastructure error before" in again.stderr
    final = rows(run_dir / "results.jsonl")
    assert collections.Counter(r["id"] for r in final) == {f"s{i:02d}": 1 for i in range(N)}
    assert all(r["verdict"] == "pass" for r in final)


def test_the_scheduler_gone_ends_the_run_with_exit_2_and_finished_rows_kept(tmp_path):
    with dask_cluster(tmp_path) as c:
        c.add_worker("--jobs", "1")
        args = [*write_slow_task(tmp_path, samples=N, nap=0.1), "--scheduler", c.address]
        out = tmp_path / "out.jsonl"
        proc = _start(args, out)
        _wait_rows(out, 3, proc)
        c.scheduler.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "the scheduler went away" in err and "--run-dir" in err
    got = rows(out)
    assert [r["id"] for r in got] == [f"s{i:02d}" for i in range(N)]
    finished = [r for r in got if not r["infra_error"]]
    assert len(finished) >= 3 and all(r["verdict"] == "pass" for r in finished)
    assert got[: len(finished)] == finished  # rows finished before the loss come first, in order
    assert all("scheduler went away" in str(r["infra_error"]) for r in got[len(finished) :])
