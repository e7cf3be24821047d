"""The supervisor names init's children by sequence number, never by pid.

A pid comes back: there are 32,768 of them on a default kernel and a candidate can
fork through them within its time limit, so a reap notice that init sent about an
earlier job's process (still unread when that job ended) may carry the pid of the
next job's child. Were children named by pid, that stale notice would end the next
candidate's run before it started: one candidate failing another. Here the test
plays init on the other end of the supervisor's control channel.
"""

from __future__ import annotations

import os
import socket
import threading
from types import SimpleNamespace
from typing import Any

from sandbox.child import harness


def _supervisor_side() -> tuple[harness.Job, socket.socket]:
    ours, init = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    return harness.Job(pidns=False, scratch="/nonexistent", ctl=ours), init


def _answer_fork(init: socket.socket, pid: int) -> Any:
    """Read the supervisor's fork request and answer it as init does; return the request."""
    msg, fds, _, _ = socket.recv_fds(init, 64, 4)
    for fd in fds:
        os.close(fd)
    seq = int(msg[1:])
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    socket.send_fds(init, [b"P%d:%d" % (seq, pid)], [r1, r2])
    for fd in (r1, w1, r2, w2):
        os.close(fd)
    return seq


def _spawn(job: harness.Job, init: socket.socket, pid: int) -> int:
    run: Any = SimpleNamespace(job={"code": "", "fn": "f", "cases": []}, next=0)
    region: Any = SimpleNamespace(size=4096, fd=os.memfd_create("r"))
    child_w: list[int] = []

    def init_side() -> None:
        child_w.append(_answer_fork(init, pid))

    t = threading.Thread(target=init_side)
    t.start()
    try:
        got, out_fd, err_fd = job.spawn(run, region)
    finally:
        t.join()
        os.close(region.fd)
    os.close(out_fd)
    os.close(err_fd)
    assert got == pid
    return child_w[0]


def test_a_stale_reap_notice_with_a_reused_pid_does_not_end_the_next_child() -> None:
    job, init = _supervisor_side()
    first = _spawn(job, init, pid=4242)
    init.send(b"E%d" % first)  # the first child ended: noticed
    job.messages(1.0)
    assert job.ended
    # The next job's child gets the same pid back; a notice about the first child
    # arrives late (it sat unread in the channel when the first job ended).
    second = _spawn(job, init, pid=4242)
    assert second != first
    init.send(b"E%d" % first)
    job.messages(0.2)
    assert not job.ended, "a stale notice about an earlier child ended the next one's run"
    init.send(b"E%d" % second)
    job.messages(1.0)
    assert job.ended


def test_init_names_its_reap_notice_by_the_childs_sequence_number() -> None:
    """Init's side: a reaped child is announced as ``E<seq>``, other processes not at all."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    init = harness.Init(pidns=False, scratch="/nonexistent")
    hold_r, hold_w = os.pipe()
    init.supervisor = os.fork()  # stands in for the supervisor: alive throughout
    if init.supervisor == 0:
        os.close(hold_w)
        os.read(hold_r, 1)
        os._exit(0)
    other = os.fork()
    if other == 0:
        os._exit(0)
    child = os.fork()
    if child == 0:
        os._exit(0)
    init.child, init.child_seq = child, 7
    for pid in (other, child):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # both ended, not yet reaped
    os.close(hold_r)
    try:
        assert init._reap(ours) is None
    finally:
        os.close(hold_w)
        os.waitpid(init.supervisor, 0)
    theirs.settimeout(5.0)
    assert theirs.recv(64) == b"E7"
    theirs.settimeout(0.0)
    try:
        extra = theirs.recv(64)
    except BlockingIOError:
        extra = b""
    assert extra == b"", f"init said more than the child's end: {extra!r}"
