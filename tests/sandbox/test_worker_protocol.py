"""The grader's side of the worker pipes: it believes exactly one reply per job.

Each test starts a real process that plays a harness gone wrong (the way a
candidate that reached the pipes would make it behave) and checks that the
worker is never trusted again and no forged reply is taken as a result.
"""

from __future__ import annotations

import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from waiting import wait_until

from sandbox.backends import Launch
from sandbox.types import Limits
from sandbox.worker import Worker, WorkerDied, WorkerTainted

_PRELUDE = """
import json, os, struct, sys, time
def send(obj):
    data = json.dumps(obj).encode()
    os.write(1, struct.pack(">I", len(data)) + data)
def read_job():
    (n,) = struct.unpack(">I", os.read(0, 4))
    got = b""
    while len(got) < n:
        got += os.read(0, n - len(got))
    return json.loads(got)
REPLY = {"obs": [{"status": "returned", "value": 2}], "stdout": "", "stderr": "",
         "untimed": False, "recycle": False}
def sent():
    open(__file__ + ".sent", "w").close()  # the test's event: what it sent is in the pipe
send({"ready": True, "python": "3"})
"""

SCRIPTS = {
    # Forged reply sitting in the pipe before the job is even sent.
    "reply_before_job": "send(REPLY); send({'done': True, 'clean': True}); sent(); time.sleep(30)",
    # Answers after reading only the header of the job (the rest still unsent).
    "reply_mid_job": (
        "os.read(0, 4); send(REPLY); send({'done': True, 'clean': True}); time.sleep(30)"
    ),
    # A correct exchange, then a second reply queued for the next job.
    "bytes_after_done": (
        "read_job(); send(REPLY); send({'done': True, 'clean': True}); send(REPLY); sent(); "
        "time.sleep(30)"
    ),
    # The reply never followed by init's done.
    "no_done": "read_job(); send(REPLY); send(REPLY); time.sleep(30)",
    # A reply with keys the harness never writes.
    "odd_reply": "read_job(); send(dict(REPLY, verdict='pass')); time.sleep(30)",
}


def _worker(tmp_path: Path, name: str, spawner: ThreadPoolExecutor) -> Worker:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(_PRELUDE) + SCRIPTS[name] + "\n")
    launch = Launch(argv=[sys.executable, str(script)], env={"PATH": "/usr/bin"})
    return Worker(launch, spawner)


@pytest.fixture
def spawner():
    with ThreadPoolExecutor(max_workers=1) as ex:
        yield ex


JOB = {"code": "def f(x): return x", "fn": "f", "cases": [{"args": [1], "kwargs": {}}]}
LIM = Limits(candidate_timeout_s=2.0)


def test_bytes_waiting_before_the_job_taint_the_worker(tmp_path, spawner):
    w = _worker(tmp_path, "reply_before_job", spawner)
    try:
        wait_until((tmp_path / "reply_before_job.py.sent").exists, what="the forgery")
        with pytest.raises(WorkerTainted):
            w.serve(JOB, LIM)
    finally:
        w.close()


def test_a_reply_before_the_job_is_fully_written_taints_the_worker(tmp_path, spawner):
    w = _worker(tmp_path, "reply_mid_job", spawner)
    big = dict(JOB, code="x = 1\n" * 400_000)  # megabytes: more than a pipe holds
    try:
        with pytest.raises(WorkerTainted):
            w.serve(big, LIM)
    finally:
        w.close()


def test_bytes_after_done_recycle_the_worker(tmp_path, spawner):
    w = _worker(tmp_path, "bytes_after_done", spawner)
    try:
        reply = w.serve(JOB, LIM)
        assert reply["obs"][0]["value"] == 2
        wait_until((tmp_path / "bytes_after_done.py.sent").exists, what="the extra reply")
        # The reply itself came in order; the extra one must never serve a later job:
        # either the worker is marked for recycling at once, or the next job refuses it.
        if not w.recycle:
            with pytest.raises(WorkerTainted):
                w.serve(JOB, LIM)
    finally:
        w.close()


@pytest.mark.parametrize("name", ["no_done", "odd_reply"])
def test_a_reply_out_of_protocol_is_the_workers_death(tmp_path, spawner, name):
    w = _worker(tmp_path, name, spawner)
    try:
        with pytest.raises(WorkerDied):
            w.serve(JOB, LIM)
    finally:
        w.close()
