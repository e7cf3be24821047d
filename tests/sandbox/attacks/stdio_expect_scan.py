# ruff: noqa
"""Promise: a stdio program cannot read the expected stdout of any case.

Attack: as a program (run once per case with the case's stdin), look for the
expected outputs everywhere in reach: every object the collector knows (strings,
bytes, dicts, the job), every frame on the stack and its locals and globals,
every open descriptor, and the whole scratch dir, /tmp and /dev/shm. Print
everything that looks like a marker.

Expected: only the stdin canary is found; no expected output.
"""

import gc
import os
import re
import sys

_MARK = re.compile(r"GBX-[A-Z]+-[0-9a-f]{16}")
found = set()


def look(text):
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if isinstance(text, str):
        found.update(_MARK.findall(text))


look(sys.stdin.read())
for obj in gc.get_objects():
    try:
        if isinstance(obj, (str, bytes)):
            look(obj)
        elif isinstance(obj, dict):
            look(repr(obj)[:1_000_000])
        elif isinstance(obj, (list, tuple)):
            look(repr(obj)[:1_000_000])
    except Exception:
        pass
frame = sys._getframe()
while frame is not None:
    try:
        look(repr(frame.f_locals)[:1_000_000])
        look(repr(frame.f_globals)[:1_000_000])
    except Exception:
        pass
    frame = frame.f_back
for fd in range(0, 64):
    try:
        os.lseek(fd, 0, 0)
        look(os.read(fd, 1 << 20))
    except OSError:
        pass
for top in (".", "/tmp", "/dev/shm"):
    for root, _dirs, files in os.walk(top):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    look(f.read(1 << 20))
            except OSError:
                pass
print(" ".join(sorted(found)))
