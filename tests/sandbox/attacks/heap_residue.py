# ruff: noqa
"""Promise: a candidate cannot read the code or arguments of an earlier candidate.

Attack (aimed at how this sandbox is built): every candidate's process is
forked from a long-lived process of the harness. If that process ever held an
earlier job (the job text, its decoded arguments, the reply with the earlier
candidate's output), the bytes may still be in its heap, live or freed, and a
forked child inherits them. ``plant(secret)`` is an earlier candidate whose
code and argument both carry a secret and which prints it; ``scan(marker)``,
run next on the same worker, searches its *own* memory for it: every
readable mapping through ``/proc/self/mem`` (freed memory included), and
every object the garbage collector knows after ``gc.unfreeze()``.

Expected: ``plant`` returns ``"planted"``; ``scan`` returns ``[]``.
"""

import ctypes
import gc
import os
import stat


def plant(secret):
    # SECRET-IN-CODE-@@MARKER@@
    print("printing the secret:", secret)
    return "planted"


def _planted_at(text, needle, prefix):
    """True when ``prefix + needle`` occurs in ``text`` (never building that string)."""
    i = text.find(needle)
    while i >= 0:
        if i >= len(prefix) and text[i - len(prefix) : i] == prefix:
            return True
        i = text.find(needle, i + 1)
    return False


def scan(marker):
    found = []
    gc.unfreeze()
    for obj in gc.get_objects():
        values = obj.values() if isinstance(obj, dict) else (obj,)
        for v in values:
            if isinstance(v, str) and _planted_at(v, marker, "PLANTED-"):
                found.append("object " + type(obj).__name__)
            elif isinstance(v, bytes) and _planted_at(v, marker.encode(), b"PLANTED-"):
                found.append("bytes object")
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: our own /proc files again
    with open("/proc/self/maps") as fh:
        maps = fh.read().splitlines()
    for line in maps:
        parts = line.split()
        name = parts[5] if len(parts) > 5 else ""
        if "r" not in parts[1] or name in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
            continue
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        if hi - lo > 1 << 28:
            continue
        chunk = ctypes.string_at(lo, hi - lo)
        if _planted_at(chunk, marker.encode(), b"PLANTED-"):
            found.append(f"memory {parts[0]} {name}")
    return found


def scan_others(marker):
    """Search every other process's memory (the supervisor holds every earlier job).

    The supervisor lives as long as the worker and keeps what it read: the earlier
    candidate's job text and arguments, its reply. Nothing is forked from it, so the
    way in is from outside: its ``/proc/<pid>/mem`` (same uid), its ``environ`` and
    ``cmdline``, and any memfd of an earlier job still open or mapped in it
    (``/proc/<pid>/fd``, ``/proc/<pid>/map_files``). Returns what was readable and
    where the secret was found.
    """
    found = []
    me = os.getpid()
    needle = marker.encode()
    for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me]:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    if _planted_at(fh.read(), needle, b"PLANTED-"):
                        found.append(f"/proc/{pid}/{name}")
            except OSError:
                pass
        for sub in ("fd", "map_files"):
            try:
                names = os.listdir(f"/proc/{pid}/{sub}")
            except OSError:
                continue
            for n in names:
                try:
                    fd = os.open(f"/proc/{pid}/{sub}/{n}", os.O_RDONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                try:  # files and memfds only: a pipe of the grader's would block us
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        if _planted_at(os.pread(fd, 1 << 26, 0), needle, b"PLANTED-"):
                            found.append(f"/proc/{pid}/{sub}/{n}")
                except OSError:
                    pass
                finally:
                    os.close(fd)
        try:
            with open(f"/proc/{pid}/maps") as fh:
                maps = fh.read().splitlines()
            mem = open(f"/proc/{pid}/mem", "rb")
        except OSError:
            continue
        found.append(f"/proc/{pid}/mem opened")
        with mem:
            for line in maps:
                parts = line.split()
                lo, hi = (int(v, 16) for v in parts[0].split("-"))
                if parts[1][:2] != "rw" or hi - lo > 1 << 27:
                    continue  # what a process read lives in its writable mappings
                try:
                    mem.seek(lo)
                    chunk = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                if _planted_at(chunk, needle, b"PLANTED-"):
                    found.append(f"/proc/{pid}/mem {parts[0]}")
    return found
