"""The results channel between a candidate's process and the harness's supervisor.

Imported as plain ``region`` by the harness inside the sandbox (standard library
only, no state) and as ``sandbox.child.region`` by the tests.

A :class:`Region` is shared memory (a sealed memfd) created by the supervisor
before init forks a child onto it. The child appends one length-prefixed JSON frame per case and
bumps a header; no system call or wake-up per case. The candidate runs in that
child and can write anything anywhere in the region, so the supervisor treats
it as hostile input:

* it keeps its **own** read position and copies each frame out **once**, as
  soon as it is published; a frame rewritten later changes nothing, and a
  header that moves backwards or past the end is clamped;
* each frame is validated (:func:`check_frame`): size, nesting depth, the
  exact keys of its kind, the case index it must have, a closed set of
  statuses the child may claim (never ``timeout``, ``crash`` or ``not_run``),
  finite durations no longer than the supervisor measured itself;
* anything unexpected ends the child and is a ``crash`` of that case.

The clock of each case is the supervisor's own (``time.monotonic()`` when it
copied the previous case's frame); nothing in the region drives it.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from typing import Any

_HDR = struct.Struct(">I")
#: Deepest frame accepted: results are encoded at most 100 deep (wire.to_wire).
MAX_FRAME_DEPTH = 120
#: Room in a frame beyond the result itself (index, status, exception report).
FRAME_SLACK = 64 * 1024
_CHILD_STATUSES = ("returned", "raised", "unserializable")
_KEYS = {
    "returned": {"i", "status", "value", "duration_s"},
    "raised": {"i", "status", "exc", "duration_s"},
    "unserializable": {"i", "status", "detail", "duration_s"},
}


class BadFrame(Exception):
    """A frame the child published is not one the harness writes."""


class Region:
    """Shared memory for one child's results: a header and length-prefixed JSON frames.

    Header (little endian): ``seq`` (a seqlock: odd while the child updates it)
    and ``offset`` (end of the published frames).
    """

    HEAD = struct.Struct("<qq")
    DATA = 64
    TAIL = 4096  # kept free for a short "too large" frame

    def __init__(self, size: int, fd: int = -1) -> None:
        """Map ``size`` bytes: anonymous, or of the file ``fd`` (a memfd the child maps too)."""
        self.mm = mmap.mmap(fd, size)  # MAP_SHARED: both sides see every write
        self.fd = fd
        self.size = size
        self.seq = 0
        self.off = self.DATA
        self.pos = self.DATA  # the reader's own position, never taken from the region
        self._publish()

    def _publish(self) -> None:
        self.HEAD.pack_into(self.mm, 0, self.seq + 1, self.off)
        self.seq += 2
        self.HEAD.pack_into(self.mm, 0, self.seq, self.off)

    def append(self, obj: dict[str, Any]) -> None:
        """Child: add one frame."""
        data = json.dumps(obj, ensure_ascii=True, allow_nan=False).encode("ascii")
        if self.off + 4 + len(data) > self.size - self.TAIL:
            small: dict[str, Any] = {k: obj[k] for k in ("i", "duration_s") if k in obj}
            small.update(status="unserializable", detail="results exceed the total limit")
            data = json.dumps(small).encode("ascii")[: self.TAIL - 4]
            if self.off + 4 + len(data) > self.size:
                return
        _HDR.pack_into(self.mm, self.off, len(data))
        self.mm[self.off + 4 : self.off + 4 + len(data)] = data
        self.off += 4 + len(data)
        self._publish()

    def _published(self) -> int:
        """The end of the published frames, clamped to the region."""
        seq, off = self.HEAD.unpack_from(self.mm, 0)
        for _ in range(100):
            if seq % 2 == 0 and self.HEAD.unpack_from(self.mm, 0)[0] == seq:
                break
            seq, off = self.HEAD.unpack_from(self.mm, 0)
        return int(min(max(off, self.DATA), self.size))

    def take(self, max_frame: int) -> list[bytes]:
        """Reader: copy out every frame published since the last call (each exactly once).

        Raises:
            BadFrame: A frame announces more than ``max_frame`` bytes.
        """
        end, out = self._published(), []
        while self.pos + 4 <= end:
            (n,) = _HDR.unpack_from(self.mm, self.pos)
            if n > max_frame:
                raise BadFrame("result frame larger than the result limit")
            if self.pos + 4 + n > end:
                break
            out.append(bytes(self.mm[self.pos + 4 : self.pos + 4 + n]))
            self.pos += 4 + n
        return out

    def release_fd(self) -> None:
        """Close the file behind the region (the mapping stays)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> None:
        """Unmap the region."""
        self.release_fd()
        self.mm.close()


def _depth_ok(obj: Any, limit: int) -> bool:
    """True when ``obj`` nests no deeper than ``limit`` (iterative: no recursion)."""
    stack = [(obj, 0)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            return False
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)
    return True


def _short(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise BadFrame("a text field is not a string")
    return value[:limit]


def check_frame(raw: bytes, index: int, elapsed_s: float) -> dict[str, Any]:
    """Validate one frame the child published for case ``index``; return a clean copy.

    Args:
        raw: The frame's bytes, as copied out of the region.
        index: The case this frame must be about.
        elapsed_s: How long the case ran by the supervisor's clock; a claimed
            duration is clamped to it.

    Raises:
        BadFrame: Anything the harness itself would not have written.
    """
    try:
        frame = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadFrame("malformed result frame") from exc
    if not isinstance(frame, dict) or not _depth_ok(frame, MAX_FRAME_DEPTH):
        raise BadFrame("malformed result frame")
    status = frame.get("status")
    if status not in _CHILD_STATUSES or set(frame) != _KEYS[status]:
        raise BadFrame("unexpected result frame")
    i = frame["i"]
    if type(i) is not int or i != index:
        raise BadFrame("result frame for the wrong case")
    dur = frame["duration_s"]
    if type(dur) not in (int, float) or not math.isfinite(dur) or dur < 0:
        raise BadFrame("result frame with an impossible duration")
    clean: dict[str, Any] = {"status": status, "duration_s": min(float(dur), elapsed_s)}
    if status == "returned":
        clean["value"] = frame["value"]
    elif status == "unserializable":
        clean["detail"] = _short(frame["detail"], 300)
    else:
        report = frame["exc"]
        if not isinstance(report, dict) or set(report) != {"type", "mro", "message"}:
            raise BadFrame("malformed exception report")
        mro = report["mro"]
        if not isinstance(mro, list) or len(mro) > 64:
            raise BadFrame("malformed exception report")
        clean["exc"] = {
            "type": _short(report["type"], 200),
            "mro": [_short(m, 200) for m in mro],
            "message": _short(report["message"], 500),
        }
    return clean


def check_load_error(raw: bytes) -> str | None:
    """The message of a ``load_error`` frame, or ``None`` when ``raw`` is not one."""
    try:
        frame = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(frame, dict) and set(frame) == {"load_error"}:
        msg = frame["load_error"]
        return msg[:300] if isinstance(msg, str) else None
    return None
