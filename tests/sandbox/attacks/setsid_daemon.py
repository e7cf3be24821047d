# ruff: noqa
"""Promise: a candidate's child processes cannot outlive it, nor leave anything behind.

Attack: the classic daemon. Fork, ``setsid`` (leave the process group and
session), fork again, close nothing (hold stdout/stderr open, so a grader that
reads to EOF hangs), and ``exec`` a new Python whose command line carries the
marker. The daemon ignores SIGTERM/SIGHUP, writes marker files in ``/tmp``,
``/dev/shm``, the scratch dir and the host dir it was given after 1 s, then spins
for up to 20 s (it ends itself, so an escape does not linger forever). The
candidate returns once it sees the daemon's command line in ``/proc`` (and a
moment more, for the host to see it too).

Expected: ``run`` returns promptly; no marked process is alive on the host;
no marker file appears; a later candidate finds nothing.
"""

import os
import sys
import time

_DAEMON = r"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
marker, host_dir, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
time.sleep(1.0)
for d in ("/tmp", "/dev/shm", scratch, host_dir):
    try:
        with open(os.path.join(d, "daemon-" + marker), "w") as fh:
            fh.write(marker)
    except OSError:
        pass
end = time.monotonic() + 20
while time.monotonic() < end:
    pass
"""


def f(x, marker, host_dir):
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(
                    sys.executable, [sys.executable, "-c", _DAEMON, marker, host_dir, os.getcwd()]
                )
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    while not _running(marker):  # exec'd: a busy machine takes its time starting Python
        time.sleep(0.01)
    time.sleep(0.5)  # let the host see it
    return x + 1


def _running(marker):
    """Whether a process with the marker on its command line runs (the daemon)."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    return True
        except OSError:
            pass
    return False
