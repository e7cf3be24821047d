"""Files that can hold what a run learned of hidden cases, readable by their owner only.

A results file, a run directory's files and the reports (HTML with per-case
outcomes and the candidates' code, JUnit with failure messages, SARIF with
findings) say which hidden cases each sample failed, and with ``--explain``
their arguments and expected values. Each is created ``0600`` whatever the
umask, and an existing one is narrowed to that before anything is written; a
run directory gradebox creates is ``0700`` (one that exists keeps its mode).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Literal

__all__ = ["DIR_MODE", "FILE_MODE", "private_binary", "private_dir", "private_text"]

FILE_MODE = 0o600
DIR_MODE = 0o700

_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


def _fd(path: Path, mode: Literal["w", "a", "x"]) -> int:
    fd = os.open(path, _FLAGS[mode] | os.O_CLOEXEC, FILE_MODE)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe or /dev/stdout keeps its mode
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def private_text(path: Path, mode: Literal["w", "a", "x"] = "w") -> IO[str]:
    """``open(path, mode, encoding="utf-8")``, the file ``0600`` before the first byte."""
    return os.fdopen(_fd(path, mode), mode, encoding="utf-8")


def private_binary(path: Path) -> IO[bytes]:
    """``open(path, "wb")``, the file ``0600`` before the first byte."""
    return os.fdopen(_fd(path, "w"), "wb")


def private_dir(path: Path) -> None:
    """Create ``path`` (and parents) if missing, the directory made ``0700``."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
