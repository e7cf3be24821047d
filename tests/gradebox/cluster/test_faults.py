"""Faults on a real cluster: SIGKILL of a worker's pid, a sample that cannot be graded, the
scheduler gone. Each test has a scheduler of its own (its configuration is part of the test).

A fault lands mid-run only if the run is still going when it comes: rows are written in
input order, so on a busy machine the first rows can appear when nearly every sample is
done, and the run may end before a worker is seen holding one. Such a play proves
nothing and is played again (:func:`retry_starved`), on a fresh cluster, at most 3 times.
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from waiting import retry_starved

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


def _kill_a_busy_worker(c, proc: subprocess.Popen[str]) -> subprocess.Popen[bytes] | None:
    """SIGKILL the `gradebox worker` process that holds a sample right now; return it.

    ``None`` when the run ended before any worker was seen holding a sample.
    """
    pids = {proc.pid: proc for proc in c.workers}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = [a for a, keys in c.client.processing().items() if keys]
        if busy:
            pid = c.client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            return pids[pid]
        if proc.poll() is not None:
            return None
        time.sleep(0.02)
    raise AssertionError("no worker ever held a sample, and the run did not end")


def _plays(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory for each play."""
    for i in itertools.count():
        where = tmp_path / f"play{i}"
        where.mkdir()
        yield where


def _ids(path: Path) -> list[str]:
    return [str(r["id"]) for r in rows(path)]


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path):
    plays = _plays(tmp_path)

    def play() -> tuple[subprocess.Popen[bytes] | None, subprocess.Popen[str], str, Path]:
        where = next(plays)
        with dask_cluster(where) as c:
            c.add_worker("--jobs", "1")
            c.add_worker("--jobs", "1")
            args = [*write_slow_task(where, samples=N), "--scheduler", c.address]
            out = where / "out.jsonl"
            proc = _start(args, out)
            _wait_rows(out, 2, proc)
            victim = _kill_a_busy_worker(c, proc)  # its samples in flight go to the other worker
            _, err = proc.communicate(timeout=240)
            if victim is not None:
                assert victim.wait(timeout=10) == -signal.SIGKILL
        return victim, proc, err, out

    victim, proc, err, out = retry_starved(play, lambda played: played[0] is None)
    assert victim is not None, "the run ended before a worker held a sample, in every play"
    assert proc.returncode == 0, err
    assert _ids(out) == [f"s{i:02d}" for i in range(N)]
    assert all(r["verdict"] == "pass" and r["infra_error"] is None for r in rows(out))


def test_a_sample_past_its_allowed_attempts_is_an_infra_row_and_resume_grades_it(tmp_path):
    plays = _plays(tmp_path)

    # allowed-failures 0: the first death of a worker holding a sample decides it.
    def play() -> tuple[bool, Path, list[str]]:
        where = next(plays)
        with dask_cluster(where, allowed_failures=0) as c:
            c.add_worker("--jobs", "1")
            c.add_worker("--jobs", "1")
            run_dir = where / "run"
            args = [*write_slow_task(where, samples=N), "--scheduler", c.address]
            args += ["--run-dir", str(run_dir)]
            out = where / "out.jsonl"
            proc = _start(args, out)
            _wait_rows(out, 2, proc)
            victim = _kill_a_busy_worker(c, proc)
            _, err = proc.communicate(timeout=240)
            if victim is None:
                return False, run_dir, args
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
        return True, run_dir, args

    killed, run_dir, _ = retry_starved(play, lambda played: not played[0])
    assert killed, "the run ended before a worker held a sample, in every play"
    final = rows(run_dir / "results.jsonl")
    assert collections.Counter(r["id"] for r in final) == {f"s{i:02d}": 1 for i in range(N)}
    assert all(r["verdict"] == "pass" for r in final)


def test_the_scheduler_gone_ends_the_run_with_exit_2_and_finished_rows_kept(tmp_path):
    plays = _plays(tmp_path)

    def play() -> tuple[subprocess.Popen[str], str, Path]:
        where = next(plays)
        with dask_cluster(where) as c:
            c.add_worker("--jobs", "1")
            args = [*write_slow_task(where, samples=N, nap=0.1), "--scheduler", c.address]
            out = where / "out.jsonl"
            proc = _start(args, out)
            _wait_rows(out, 3, proc)
            c.scheduler.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        return proc, err, out

    # A run that ended before the scheduler went (exit 0, every row graded) proves nothing.
    proc, err, out = retry_starved(play, lambda played: played[0].returncode == 0)
    assert proc.returncode == 2, err
    assert "the scheduler went away" in err and "--run-dir" in err
    got = rows(out)
    assert [r["id"] for r in got] == [f"s{i:02d}" for i in range(N)]
    finished = [r for r in got if not r["infra_error"]]
    assert len(finished) >= 3 and all(r["verdict"] == "pass" for r in finished)
    assert got[: len(finished)] == finished  # rows finished before the loss come first, in order
    assert all("scheduler went away" in str(r["infra_error"]) for r in got[len(finished) :])
