"""A gate in a process of its own: what the service runs for each ``POST /v1/gates``.

The server starts ``python -I -c`` with a two-line bootstrap (its own
``sys.path``, then :func:`main`); the spec and the configuration arrive
pickled on stdin from the server (never the other way: the server unpickles
nothing from a process that read a hostile patch). One JSON object goes to
the descriptor that was stdout: ``{"row": ...}``, or ``{"error": "setup" |
"internal", "message": ...}``; anything else printed goes to stderr (the log).
A thread waits on ``alive``, a pipe the server holds: end of file means the
server is gone, and the gate's whole process group is killed.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import threading
import traceback

__all__ = ["BOOTSTRAP", "main"]

BOOTSTRAP = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from gradebox.patches.child import main; main(int(sys.argv[2]))"
)
"""The ``-c`` program: the server's import path, then :func:`main` with the ``alive`` pipe."""


def _orphaned(alive: int) -> None:
    os.read(alive, 1)  # returns at end of file: the server is gone
    os.killpg(0, signal.SIGKILL)


def main(alive: int) -> None:
    """Gate the pickled ``(spec, config)`` on stdin; one JSON result on the original stdout."""
    out = os.fdopen(os.dup(1), "w", encoding="ascii")
    os.dup2(2, 1)  # what anything prints goes to the log, never into the result
    threading.Thread(target=_orphaned, args=(alive,), daemon=True).start()
    from gradebox.errors import GradeboxError  # noqa: PLC0415 - after the descriptors are set
    from gradebox.patches import run_gate  # noqa: PLC0415

    spec, config = pickle.load(sys.stdin.buffer)  # noqa: S301 - written by our own server
    result: dict[str, object]
    try:
        result = {"row": run_gate(spec, config).to_row()}
    except GradeboxError as exc:  # the sandbox or the environment: nothing was decided
        result = {"error": "setup", "message": str(exc)[:500]}
    except Exception:  # a gradebox bug: the server logs it
        result = {"error": "internal", "message": traceback.format_exc()[-4000:]}
    json.dump(result, out)
    out.close()
