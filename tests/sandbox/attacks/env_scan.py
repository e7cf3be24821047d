# ruff: noqa
"""Promise: a candidate cannot read the grader's environment (API keys).

Attack: read ``os.environ``, ``/proc/self/environ`` and the environment and
command line of every process visible in ``/proc`` (the zygote, its parent,
PID 1, and the grader itself if it were visible).

Expected: no API key value appears. The test checks that the candidate's own
``PATH`` variable *is* reported (the scanner works).
"""

import os


def f():
    parts = ["os.environ: " + repr(dict(os.environ))]
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()) + ["self"]:
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    data = fh.read(1 << 16)
                parts.append(
                    f"/proc/{pid}/{name}: " + data.replace(b"\0", b" ").decode("ascii", "replace")
                )
            except Exception as exc:
                parts.append(f"/proc/{pid}/{name}: {type(exc).__name__}")
    text = "\n".join(parts)
    print(text[:30_000])
    return text
