"""Grading imported task sets in the real sandbox, through the pipeline ``gradebox grade`` runs."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from gradebox.pipeline.tests import GradeConfig, Grader
from gradebox.runs.inputs import load_inputs
from sandbox import open_sandbox


def grade_rows(hidden: Path, samples: Path, public: Path | None = None) -> list[dict[str, Any]]:
    """Rows of the hidden tests (no static layers, no judge), in sample order."""
    inputs = load_inputs(hidden, samples, public)
    with open_sandbox("auto", workers=2) as sb, ThreadPoolExecutor(2) as pool:
        grader = Grader(sb, inputs.tasks, GradeConfig())
        return list(pool.map(grader.grade, inputs.samples))


@pytest.fixture(scope="session")
def grade() -> Callable[..., list[dict[str, Any]]]:
    """:func:`grade_rows`, for tests."""
    return grade_rows


def zlib_bomb(mib: int) -> bytes:
    """A valid zlib stream of ``mib`` MiB of zeros in about ``mib`` KB, built fast.

    One MiB is compressed after a full flush (which resets the compressor), so its
    bytes are the same every time: they are repeated, and the checksum computed.
    """
    zeros = bytes(1024 * 1024)
    deflate = zlib.compressobj(9)
    head = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.flush()
    check = 1
    for _ in range(mib):
        check = zlib.adler32(zeros, check)
    return head + block * (mib - 1) + tail[:-4] + check.to_bytes(4, "big")


@pytest.fixture(scope="session")
def bomb() -> Callable[[int], bytes]:
    """:func:`zlib_bomb`, for tests."""
    return zlib_bomb
