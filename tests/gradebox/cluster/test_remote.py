"""`gradebox grade --scheduler tcp://...` against a real scheduler and `gradebox worker`s.

The attacks here are what a candidate on a worker, or a worker that should not get
work, would try after reading the code: reach the scheduler or the worker's own
process, find expected values on a worker, or grade an isolated run unisolated.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest
from ports import free_port

from gradebox.cluster.address import parse_scheduler
from gradebox.cluster.coordinator import ClusterOptions, ClusterUnavailable, open_cluster
from gradebox.cluster.worker import CaseJob, Refused, run_cases
from gradebox.model import Sample, Task
from gradebox.pipeline.tests import GradeConfig, Grader
from sandbox.types import Limits, make_case

from .conftest import (
    GRADEBOX,
    clean_env,
    example_args,
    grade,
    rows,
    untimed,
    write_slow_task,
)


def _open(cluster, isolation="auto", wait_s=10.0):
    options = ClusterOptions(
        parse_scheduler(cluster.address), isolation, Limits(), 1, wait_s=wait_s
    )
    return open_cluster(options)


def test_rows_match_the_local_pool_and_the_none_worker_gets_nothing(cluster, tmp_path):
    # --explain: a failed or crashed case carries the sandbox's own detail on the row,
    # so a mismatch says what happened on the worker, not only that the outcome differs.
    local = grade(*example_args(tmp_path / "local.jsonl"), "--explain")
    assert local.returncode == 0, local.stderr
    remote = grade(
        *example_args(tmp_path / "remote.jsonl", "--scheduler", cluster.address), "--explain"
    )
    assert remote.returncode == 0, remote.stderr
    assert "tcp:// is unauthenticated" in remote.stderr
    want, got = rows(tmp_path / "local.jsonl"), rows(tmp_path / "remote.jsonl")
    assert [untimed(r) for r in got] == [untimed(r) for r in want]
    assert len(got) == 17 and {r["verdict"] for r in got} >= {"pass", "fail"}
    # The --isolation none worker advertised its own resource only: no isolated sample ran there.
    (none_worker,) = cluster.ready("none")
    ran = cluster.client.run(
        lambda dask_worker: sorted(
            {str(e[0]) for e in dask_worker.state.log if "gradebox-" in str(e[0])}
        ),
        workers=[none_worker],
    )
    assert ran[none_worker] == []


def test_expected_values_and_case_names_never_reach_a_worker_or_the_scheduler(cluster):
    secret_expect, secret_name, public_arg = "EXPECT-7f3a9c", "NAME-51be02", "ARG-a2c4e8"
    case = make_case("echo", public_arg, expect=secret_expect, name=secret_name)
    task = Task("echo", (case,))
    sb = _open(cluster)
    try:
        grader = Grader(sb, {"echo": task}, GradeConfig())
        graded = grader.grade_tests(Sample("s1", "echo", code="def echo(x):\n    return x\n"))
        assert graded.tests.outcomes == ("wrong",)  # compared here, against the secret
        dumps = cluster.client.run(
            lambda dask_worker: __import__("pickle").dumps(
                [
                    (n, vars(p) if hasattr(p, "__dict__") else p)
                    for n, p in dask_worker.plugins.items()
                    if n.startswith("gradebox-cases-")
                ]
            )
        )
        on_scheduler = cluster.client.run_on_scheduler(
            lambda dask_scheduler: __import__("pickle").dumps(dask_scheduler.worker_plugins)
        )
    finally:
        sb.close()
    assert dumps, "no worker answered"
    for blob in [*dumps.values(), on_scheduler]:
        assert secret_expect.encode() not in blob
        assert secret_name.encode() not in blob
    # The arguments do travel (the sandbox needs them): the check above is not vacuous.
    assert any(public_arg.encode() in blob for blob in dumps.values())
    assert all(
        not any(n.startswith("gradebox-cases-") for n in pickle.loads(b))
        for b in cluster.client.run(
            lambda dask_worker: __import__("pickle").dumps(list(dask_worker.plugins))
        ).values()
    ), "the run's task sets stay on the workers after it closed"


PROBE = """
def probe(host, ports, pid):
    import socket
    out = []
    for port in ports:
        try:
            socket.create_connection((host, port), timeout=1).close()
            out.append("connected")
        except OSError:
            out.append("unreachable")
    for path in (f"/proc/{pid}/environ", f"/proc/{pid}/mem", f"/proc/{pid}/fd/0"):
        try:
            open(path, "rb").read(1)
            out.append("read")
        except OSError:
            out.append("denied")
    return out
"""


def test_a_candidate_cannot_reach_the_scheduler_the_worker_or_its_memory(cluster):
    pids = cluster.client.run(os.getpid, workers=cluster.ready("bwrap"))
    sb = _open(cluster)
    try:
        for worker, pid in pids.items():
            ports = [urlsplit(cluster.address).port, urlsplit(worker).port]
            blocked = ["unreachable"] * 2 + ["denied"] * 3
            case = make_case("probe", "127.0.0.1", ports, pid, expect=blocked)
            # The gate's import denylist is off: the sandbox must hold on its own.
            config = GradeConfig(banned_imports=())
            grader = Grader(sb, {"probe": Task("probe", (case,))}, config)
            graded = grader.grade_tests(Sample("s", "probe", code=PROBE))
            assert graded.tests.outcomes == ("ok",), (worker, graded.tests)
    finally:
        sb.close()


def test_a_worker_without_isolation_is_never_given_isolated_work(cluster):
    (none_worker,) = cluster.ready("none")
    job = CaseJob("gradebox-cases-x", "f", "def f():\n    return 1\n", Limits(), "bwrap")
    future = cluster.client.submit(run_cases, job, workers=[none_worker], pure=False)
    with pytest.raises(Refused, match="'none'; the run needs 'bwrap'"):
        future.result(timeout=30)
    sb = _open(cluster, isolation="none")
    try:
        assert sb.slots == 1 and not sb.isolated  # only the none worker offers 'none'
    finally:
        sb.close()


def test_no_isolated_worker_means_cannot_start(tmp_path):
    from .conftest import dask_cluster

    with dask_cluster(tmp_path) as c:
        c.add_worker("--jobs", "1", "--isolation", "none")
        with pytest.raises(ClusterUnavailable, match="no worker offers a proven 'bwrap' sandbox"):
            _open(c, wait_s=1.0)


def test_a_worker_whose_sandbox_fails_refuses_work_and_says_why(cluster):
    before = set(cluster.ready("bwrap"))
    res = subprocess.run(
        [GRADEBOX, "worker", cluster.address, "--jobs", "1", "--sandbox-python", "/bin/false"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert "gradebox worker: cannot start: this worker refuses work: " in res.stderr
    refused = [e for e in cluster.events() if e.get("event") == "refused"]
    assert refused and "/bin/false" in str(refused[-1]["why"])
    assert set(cluster.ready("bwrap")) == before  # it never advertised a slot


def test_a_coordinator_killed_mid_run_resumes_from_its_run_dir(cluster, tmp_path):
    # Rows arrive in bursts (up to 8 samples per Dask task): enough samples, slow enough,
    # that the kill lands mid-run even when a loaded machine polls late.
    n = 24
    args = [*write_slow_task(tmp_path, samples=n, nap=0.1), "--scheduler", cluster.address]
    run_dir = tmp_path / "run"
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [GRADEBOX, "grade", *args, "--run-dir", str(run_dir), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    )
    results = run_dir / "results.jsonl"
    deadline = time.monotonic() + 120
    while not (results.exists() and len(results.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = len(results.read_text().splitlines())
    assert 3 <= kept < n
    again = grade(*args, "--run-dir", str(run_dir), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"resuming: {kept} samples already graded" in again.stderr
    final = rows(results)
    assert sorted(r["id"] for r in final) == [f"s{i:02d}" for i in range(n)]
    assert [r["id"] for r in rows(out)] == [f"s{i:02d}" for i in range(n)]
    assert all(r["verdict"] == "pass" for r in final)


def _gradebox(*args: str) -> str:
    res = subprocess.run(
        [GRADEBOX, *args], capture_output=True, text=True, timeout=60, env=clean_env(), check=True
    )
    return res.stdout


def test_serve_grades_on_the_cluster_with_sqlite_as_its_queue(cluster, tmp_path):
    db, port = tmp_path / "gradebox.sqlite", free_port()
    admin = _gradebox("token", "create", "--role", "admin", "--db", str(db)).strip()
    grader = _gradebox("token", "create", "--role", "grader", "--db", str(db)).strip()
    before = _batches(cluster)
    argv = [GRADEBOX, "serve", "--db", str(db), "--port", str(port), "--no-judge"]
    serve = subprocess.Popen(
        [*argv, "--static-sessions", "0", "--scheduler", cluster.address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while _status(f"{base}/readyz") != 200:
            assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
            assert time.monotonic() < deadline, "the service never became ready"
            time.sleep(0.2)
        task = {
            "public": {"spec": "Return True if n is even."},
            "hidden": [{"args": [2], "expect": True}, {"args": [7], "expect": False}],
            "disclosure": "cases",
        }
        assert _call("PUT", f"{base}/v1/tasks/is_even", admin, task)[0] in (200, 201)
        code = "def is_even(n):\n    return n % 2 == 0\n"
        status, row = _call(
            "POST", f"{base}/v1/grade", grader, {"id": "s1", "fn": "is_even", "code": code}
        )
        assert status == 200, row
        assert (row["verdict"], row["outcomes"]) == ("pass", ["ok", "ok"])
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    assert _batches(cluster) > before  # the sample ran on a worker, not in the service


def _batches(cluster) -> int:
    logs = cluster.client.run(
        lambda dask_worker: len(
            {str(e[0]) for e in dask_worker.state.log if str(e[0]).startswith("gradebox-batch-")}
        )
    )
    return sum(logs.values())


def _status(url: str) -> int:
    try:
        return int(urllib.request.urlopen(url, timeout=5).status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def _call(method: str, url: str, token: str, body: object) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read() or b"{}")
