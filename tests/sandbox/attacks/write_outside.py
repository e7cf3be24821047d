# ruff: noqa
"""Promise: a candidate cannot write outside its scratch dir.

Attack: create a file named after the marker in ``/``, ``/usr``, ``/etc``,
``/var/tmp``, the repository, world-writable host dirs the test made (under
the host's ``/tmp`` and inside the repo), the grader's site-packages (a
``.pth`` there runs in every later Python start), the harness's own folder,
the system stdlib, through ``/proc/*/root`` and ``/proc/*/cwd`` of every
visible process, and in the parent of the scratch dir. Then write and read back
a file in the working (scratch) dir, which must work.

Expected: the host sees none of the files; the scratch file round-trips.
"""

import os
import sys
import sysconfig


def _targets(host_dirs):
    dirs = list(host_dirs)
    dirs += ["/", "/usr", "/etc", "/var/tmp", "/usr/local", os.path.dirname(os.__file__)]
    dirs += [p for p in sysconfig.get_paths().values()]
    here = (
        os.path.dirname(os.path.abspath(sys.modules["__main__"].__file__))
        if hasattr(sys.modules["__main__"], "__file__")
        else None
    )
    if here:
        dirs.append(here)
    dirs.append(os.path.dirname(os.getcwd()))
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for link in ("root", "cwd"):
            dirs.append(f"/proc/{pid}/{link}")
            for d in host_dirs:
                dirs.append(f"/proc/{pid}/{link}{d}")
    return dirs


def f(host_dirs, marker):
    out = {}
    for i, d in enumerate(_targets(host_dirs)):
        path = os.path.join(d, f"{marker}-{i}")
        try:
            with open(path, "w") as fh:
                fh.write(marker)
            out[path] = "written"
        except Exception as exc:
            out[path] = type(exc).__name__
    with open(f"scratch-{marker}.txt", "w") as fh:
        fh.write("scratch works")
    with open(f"scratch-{marker}.txt") as fh:
        out["scratch"] = fh.read()
    return out
