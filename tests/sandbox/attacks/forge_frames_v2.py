# ruff: noqa
"""Promise: a candidate cannot forge its results, switch off its clock, or make its
failure look like the grader's.

Attack (aimed at how the results channel is read): the candidate's process
shares a memory region with the job process that forked it and reports each
case there as a length-prefixed JSON frame behind a small header. Having read
the source, the candidate writes that region itself (``mode``):

* ``ahead``: publishes a (wrong) frame for every case at once, so no case is
  "running" and no per-case clock applies, computes for longer than a case
  may take, then rewrites the frames in place with right answers and exits.
* ``extra_frame``: the right frame for each case, then one more.
* ``huge_duration`` / ``negative_duration``: a right value with a duration of
  ``1e308`` or ``-1`` seconds.
* ``wrong_index``: a right value filed under case 7 of 2.
* ``claim_status``: claims the case ``not_run`` (or ``timeout``) instead of
  returning, with extra keys the grader might copy into a row.
* ``oversized``: a frame larger than the job's ``result_bytes``.
* ``header_backwards``: publishes a right frame, then moves the header's
  offset back to the start and publishes a different frame over it.

Expected: no ``infra_error``; no case judged ``ok`` except where the
candidate only ever published a right answer once (none of these modes);
bounded time; the next candidate is graded correctly.
"""

import gc
import json
import os
import struct
import sys
import time


def _region():
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if type(value).__name__ == "Region" and hasattr(value, "mm"):
                return value
        frame = frame.f_back
    gc.unfreeze()
    for obj in gc.get_objects():
        if type(obj).__name__ == "Region" and hasattr(obj, "mm"):
            return obj
    return None


def _put(r, obj, at=None):
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    off = r.off if at is None else at
    struct.pack_into(">I", r.mm, off, len(raw))
    r.mm[off + 4 : off + 4 + len(raw)] = raw
    r.off = off + 4 + len(raw)
    r._publish()


def _frame(i, value, **extra):
    return {"status": "returned", "value": value, "i": i, "duration_s": 0.0, **extra}


def f(x, mode, n=2):
    r = _region()
    if r is None:
        raise RuntimeError("ATTACK-NO-CHANNEL: the harness's result channel was not found")
    base = r.off
    if mode == "ahead":
        for i in range(n):
            _put(r, _frame(i, -1))
        time.sleep(2.5)
        r.off = base
        for i in range(n):
            _put(r, _frame(i, x + 1 + i))
        os._exit(0)
    if mode == "extra_frame":
        for i in range(n):
            _put(r, _frame(i, x + 1 + i))
        _put(r, _frame(n, 0))
        os._exit(0)
    if mode in ("huge_duration", "negative_duration"):
        d = 1e308 if mode == "huge_duration" else -1.0
        for i in range(n):
            _put(r, {"status": "returned", "value": x + 1 + i, "i": i, "duration_s": d})
        os._exit(0)
    if mode == "wrong_index":
        _put(r, _frame(7, x + 1))
        os._exit(0)
    if mode == "claim_status":
        _put(r, {"status": "not_run", "i": 0, "duration_s": 0.0, "infra_error": "forged"})
        os._exit(0)
    if mode == "oversized":
        _put(r, _frame(0, "A" * (1 << 21)))
        os._exit(0)
    if mode == "header_backwards":
        _put(r, _frame(0, -1))
        time.sleep(0.2)
        _put(r, _frame(0, x + 1), at=base)
        for i in range(1, n):
            _put(r, _frame(i, x + 1 + i))
        os._exit(0)
    raise ValueError(mode)
