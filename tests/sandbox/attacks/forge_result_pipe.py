# ruff: noqa
"""Promise: a candidate cannot take the grader down or forge its results.

Attack: the harness reports each case on a private pipe (descriptor 3, read by
the zygote, relayed to the grader). The candidate shares that process, so it
can write its own frames there in the exact wire format. A frame can only
claim something the candidate could have returned anyway; the attack aims
instead at the code that parses and relays frames (``mode``):

* ``deep``: a value nested 100 000 deep (``json.loads`` recursion).
* ``near_limit``: a value nested ``depth`` deep, chosen to pass the zygote's
  parser and break the grader's (the test sends several depths).
* ``float_index``: close the case, then open the next one as ``"i": 1.0``.
* ``surrogate``: a value and an exception message with lone surrogates,
  which the harness's own encoder refuses (they are not valid Unicode).
* ``nan``: ``NaN`` where the protocol has numbers.
* ``oversized``: a header announcing a 4 GiB frame.
* ``truncated``: half a frame, then exit.

Expected: ``run`` returns a result (never raises), no ``infra_error``, the
case is not ``ok``, the result is valid Unicode, the next candidate passes.
"""

import json
import os
import struct


def _send(obj=None, raw=None):
    data = raw if raw is not None else json.dumps(obj).encode()
    buf = struct.pack(">I", len(data)) + data
    while buf:
        buf = buf[os.write(3, buf) :]


def _nested(depth):
    return b"[" * depth + b"]" * depth


def f(i, mode, depth):
    if mode == "deep":
        _send(raw=b'{"i": %d, "status": "returned", "value": ' % i + _nested(100_000) + b"}")
    elif mode == "near_limit":
        _send(raw=b'{"i": %d, "status": "returned", "value": ' % i + _nested(depth) + b"}")
    elif mode == "float_index":
        _send({"i": i, "status": "returned", "value": -1})
        _send({"i": i + 1.0, "start": True})
    elif mode == "surrogate":
        _send(raw=b'{"i": %d, "status": "returned", "value": "\\ud800 \\udcff"}' % i)
    elif mode == "surrogate_raised":
        _send(
            raw=(
                b'{"i": %d, "status": "raised", "exc": {"type": "\\udcff", '
                b'"mro": ["builtins.ValueError\\ud800"], "message": "\\ud800"}}' % i
            )
        )
    elif mode == "nan":
        _send(raw=b'{"i": %d, "status": "returned", "value": NaN, "duration_s": NaN}' % i)
    elif mode == "oversized":
        os.write(3, struct.pack(">I", 0xFFFFFFF0) + b"{")
    elif mode == "truncated":
        os.write(3, struct.pack(">I", 1000) + b'{"i": 0, "sta')
        os._exit(0)
    return -1
