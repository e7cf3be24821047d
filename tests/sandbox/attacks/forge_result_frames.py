# ruff: noqa
"""Promise: a candidate cannot take the grader down or forge its results.

Attack: the harness reports each case from inside the candidate's own process
(frames appended to a shared-memory ``Region`` that the zygote reads after
the child dies). Having read the source, the candidate finds that channel (on
the stack, or with ``gc`` after ``gc.unfreeze()``) and appends its own raw
frames; if it cannot find it, it raises ``ATTACK-NO-CHANNEL`` so the test
says the attack needs updating rather than passing. A frame can only claim what the candidate could
have returned anyway, so the attack aims at the code that parses and relays
frames (``mode``):

* ``deep``: a value nested 100 000 deep (``json.loads`` recursion).
* ``near_limit``: a value nested ``depth`` deep, chosen to pass the zygote's
  parser and break the grader's (the test sweeps the depth).
* ``float_index``: a frame for case ``1.0`` instead of ``1``.
* ``surrogate``: a value with lone surrogates, which the harness's own
  encoder refuses (they are not valid Unicode).
* ``surrogate_raised``: an exception report with lone surrogates.
* ``nan``: ``NaN`` where the protocol has numbers.
* ``oversized``: a frame header announcing 4 GiB.
* ``truncated``: half a frame, then exit.

Expected: ``run`` returns a result (never raises), no ``infra_error``, the
case is not ``ok``, the result is valid Unicode, the next candidate passes.
"""

import gc
import sys
import os
import struct


def _region():
    """The harness's result channel: found on the stack, or among all objects."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if type(value).__name__ == "Region" and hasattr(value, "mm"):
                return value
        frame = frame.f_back
    gc.unfreeze()  # the zygote freezes its objects before forking; thaw them
    for obj in gc.get_objects():
        if type(obj).__name__ == "Region" and hasattr(obj, "mm"):
            return obj
    return None


def _send(raw, exit_after=False):
    r = _region()
    if r is not None:  # write a raw frame the way Region.append does
        struct.pack_into(">I", r.mm, r.off, len(raw) if len(raw) < 2**32 else 0)
        r.mm[r.off + 4 : r.off + 4 + len(raw)] = raw
        r.off += 4 + len(raw)
        r.current = -1
        r._publish()
    else:
        raise RuntimeError("ATTACK-NO-CHANNEL: the harness's result channel was not found")
    if exit_after:
        os._exit(0)


def _header_only(size):
    r = _region()
    if r is not None:
        struct.pack_into(">I", r.mm, r.off, size)
        r.off += 4 + 1
        r.current = -1
        r._publish()
    else:
        raise RuntimeError("ATTACK-NO-CHANNEL: the harness's result channel was not found")


def _nested(depth):
    return b"[" * depth + b"]" * depth


def f(i, mode, depth):
    if mode == "deep":
        _send(b'{"i": %d, "status": "returned", "value": ' % i + _nested(100_000) + b"}")
    elif mode == "near_limit":
        _send(b'{"i": %d, "status": "returned", "value": ' % i + _nested(depth) + b"}")
    elif mode == "float_index":
        _send(b'{"i": %d.0, "status": "returned", "value": -1}' % i)
    elif mode == "surrogate":
        _send(b'{"i": %d, "status": "returned", "value": "\\ud800 \\udcff"}' % i)
    elif mode == "surrogate_raised":
        _send(
            b'{"i": %d, "status": "raised", "exc": {"type": "\\udcff", '
            b'"mro": ["builtins.ValueError\\ud800"], "message": "\\ud800"}}' % i
        )
    elif mode == "nan":
        _send(b'{"i": %d, "status": "returned", "value": NaN, "duration_s": NaN}' % i)
    elif mode == "oversized":
        _header_only(0xFFFFFFF0)
    elif mode == "truncated":
        _header_only(1000)
        os._exit(0)
    return -1
