# ruff: noqa
"""Promise: a candidate cannot read the hidden cases or the expected values.

Attack: knowing the grader's source, look everywhere a hidden case could be:
open the host paths of hidden.jsonl directly (the test passes them in, as if
the attacker had guessed them), walk the filesystem from ``/`` reading files
that look like case files, read every visible ``/proc/*/{cmdline,environ}``,
``/proc/*/{cwd,root}`` and ``/proc/*/fd/*``, scan the memory of other visible
processes for ``"expect"``, read stdin and every inherited descriptor, and
dump the harness's own frames and every dict in this process (``gc``).
Everything found is returned and printed.

Expected: nothing found contains a hidden-file marker or an expected value.
The test checks that the canary argument *is* found (the scanner works).
"""

import gc
import os
import re
import select
import sys
import time

_LIMIT = 1_500_000
_BUDGET_S = 2.5
_DONE = {}


def _printable(data):
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    return re.sub(rb"[^\x20-\x7e\n]", b".", data).decode("ascii")


class _Blob:
    def __init__(self):
        self.parts = []
        self.size = 0

    def add(self, where, data):
        if self.size > _LIMIT:
            return
        text = f"== {where}\n{_printable(data)[:200_000]}\n"
        self.parts.append(text)
        self.size += len(text)

    def text(self):
        return "".join(self.parts)[:_LIMIT]


def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except Exception as exc:
        return None


def _procs(blob, deadline):
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except Exception:
        return
    blob.add("pids", " ".join(pids))
    for pid in pids:
        for name in ("cmdline", "environ", "status"):
            data = _read(f"/proc/{pid}/{name}", 1 << 16)
            if data:
                blob.add(f"/proc/{pid}/{name}", data.replace(b"\0", b" "))
        for link in ("cwd", "root"):
            base = f"/proc/{pid}/{link}"
            try:
                for name in os.listdir(base)[:200]:
                    data = _read(os.path.join(base, name), 1 << 16)
                    if data:
                        blob.add(os.path.join(base, name), data)
            except Exception:
                pass
        try:
            # (our own pipes are read in _descriptors; reopening our result pipe
            # here would only steal our own frames)
            fds = [] if pid == str(os.getpid()) else os.listdir(f"/proc/{pid}/fd")
        except Exception:
            fds = []
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                blob.add(path + " ->", os.readlink(path))
                f = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    data = os.read(f, 1 << 16)
                    blob.add(path, data)
                finally:
                    os.close(f)
            except Exception:
                pass
        if pid != str(os.getpid()) and time.monotonic() < deadline:
            _scan_mem(blob, pid, deadline)


def _scan_mem(blob, pid, deadline):
    maps = _read(f"/proc/{pid}/maps")
    if not maps:
        return
    try:
        mem = open(f"/proc/{pid}/mem", "rb")
    except Exception:
        return
    budget = 64 << 20
    with mem:
        for line in maps.decode("ascii", "replace").splitlines():
            fields = line.split()
            if len(fields) < 2 or not fields[1].startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            size = min(hi - lo, budget)
            if size <= 0 or time.monotonic() > deadline:
                return
            budget -= size
            try:
                mem.seek(lo)
                data = mem.read(size)
            except Exception:
                continue
            for m in re.finditer(rb"expect", data):
                blob.add(
                    f"/proc/{pid}/mem@{lo + m.start():x}",
                    data[max(0, m.start() - 200) : m.start() + 200],
                )


def _files(blob, paths, deadline):
    for path in paths:
        data = _read(path)
        blob.add(f"direct {path}", data if data is not None else b"<unreadable>")
    hot = {"/tmp", "/var/tmp", "/dev/shm", "/root", "/home", "/work", "/srv", "/opt", os.getcwd()}
    for path in paths:
        d = os.path.dirname(path)
        while d not in ("", "/"):
            hot.add(d)
            d = os.path.dirname(d)
    for top in sorted(hot) + ["/"]:
        for root, dirs, files in os.walk(top):
            if time.monotonic() > deadline:
                return
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
            for name in files:
                full = os.path.join(root, name)
                interesting = (
                    root.startswith(tuple(h for h in hot if h != "/"))
                    or "hidden" in name
                    or name.endswith((".jsonl", ".json"))
                )
                if interesting:
                    data = _read(full, 1 << 16)
                    if data and (b'"expect"' in data or "hidden" in name):
                        blob.add(full, data)


def _descriptors(blob):
    try:
        blob.add("sys.stdin", sys.stdin.read(1 << 16))
    except Exception as exc:
        blob.add("sys.stdin", repr(exc))
    for fd in range(256):
        try:
            r, _, _ = select.select([fd], [], [], 0)
            if r:
                blob.add(f"fd {fd}", os.read(fd, 1 << 16))
        except Exception:
            pass


def _own_process(blob):
    frame = sys._getframe(1)
    while frame is not None:
        try:
            blob.add(f"frame {frame.f_code.co_name}", repr(frame.f_locals)[:100_000])
            blob.add(f"globals of {frame.f_code.co_name}", repr(sorted(frame.f_globals))[:10_000])
        except Exception:
            pass
        frame = frame.f_back
    gc.unfreeze()  # the zygote freezes its objects before forking; thaw them
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict) and any(
                isinstance(k, str) and ("expect" in k or k in ("cases", "args")) for k in obj
            ):
                blob.add("gc dict", repr(obj)[:50_000])
            elif (
                hasattr(obj, "expect")
                or hasattr(obj, "__slots__")
                and "expect" in getattr(obj, "__slots__", ())
            ):
                blob.add("gc object", repr(obj)[:50_000])
        except Exception:
            pass
    for name, mod in list(sys.modules.items()):
        for attr in ("expect", "EXPECT", "cases", "job"):
            if hasattr(mod, attr):
                blob.add(f"module {name}.{attr}", repr(getattr(mod, attr))[:50_000])


def f(paths, canary):
    blob = _Blob()
    deadline = time.monotonic() + _BUDGET_S
    _own_process(blob)
    _descriptors(blob)
    if not _DONE:
        _DONE["fs"] = True
        _procs(blob, deadline)
        _files(blob, paths, deadline + 1.0)
    text = blob.text()
    sys.stdout.write(text[:60_000])
    sys.stderr.write(text[-60_000:])
    return text
