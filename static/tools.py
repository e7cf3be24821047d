"""What the static tools share: finding their executables, and warm worker processes.

:func:`locate` is the one rule for finding a tool's executable. :class:`ToolWorker`
is the one lifecycle of a tool kept warm in a child process (mypy's and bandit's
``Worker``): start, a request per line, recycling after so many requests or
files, one restart when the worker fails, and closing.
"""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, ClassVar, Generic, TypeVar

from static.findings import ToolError

__all__ = ["TOOL_ENV", "ToolWorker", "locate"]

TOOL_ENV = {"LC_ALL": "C.UTF-8", "NO_COLOR": "1"}
"""The whole environment of every tool process: the same output whoever runs the grader."""

ReplyT = TypeVar("ReplyT")


def locate(name: str, override: str | None) -> str:
    """Find tool ``name``: ``override`` wins, else next to the running Python, else PATH.

    Args:
        name: The executable's name (``ruff``, ``mypy``, ``bandit``).
        override: An explicit path or name from the configuration.

    Returns:
        The executable to run.

    Raises:
        ToolError: It is not installed; the message says how to install it.
    """
    if override is not None:
        if shutil.which(override) is None:
            raise ToolError(f"{name} not found at {override!r}: fix the path or install {name}")
        return override
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise ToolError(f"{name} not found: install it (`pip install {name}`) next to gradebox")
    return found


class ToolWorker(ABC, Generic[ReplyT]):
    """A tool in a long-lived child process: one JSON line of file names in, one JSON object out.

    The child is started at once and again after :meth:`_limits` requests or
    files; a request that fails (the child died, replied garbage) restarts it
    and is asked once more, except a timeout (a retry would double the wait).
    Every failure is a :class:`~static.findings.ToolError` chained from its
    cause, never a result. The child exits by itself when this process goes
    away (its stdin closes). Not thread-safe: one per thread.
    """

    tool: ClassVar[str]
    """The tool's name in messages (``mypy``, ``bandit``)."""

    def __init__(self, timeout_s: float, *, log: Path | None = None) -> None:
        """Start the worker.

        Args:
            timeout_s: How long one request may take.
            log: Where the child's stderr goes (appended; its tail explains a failure);
                ``None``: nowhere.

        Raises:
            ToolError: the worker did not start.
        """
        self._timeout_s = timeout_s
        self._log = log
        self._proc: subprocess.Popen[bytes] | None = None
        self._served = self._files = 0
        self._start()

    @property
    def pid(self) -> int | None:
        """The worker's process id, ``None`` when it is not running."""
        return None if self._proc is None else self._proc.pid

    def close(self) -> None:
        """Stop the worker (kill it if it does not stop); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):  # a dead worker: buffered bytes cannot flush
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its handle
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    @abstractmethod
    def _argv(self) -> list[str]:
        """The child's command line (asked at every start)."""

    @abstractmethod
    def _limits(self) -> tuple[int, int | None]:
        """After how many requests, and files (``None``: any number), a worker is replaced."""

    @abstractmethod
    def _decode(self, reply: dict[str, Any]) -> ReplyT:
        """One reply as the tool's module uses it; raises KeyError, TypeError or ValueError."""

    def _started(self) -> None:
        """Called after each start (to warm the worker up); nothing by default."""

    def _recycle_if_due(self) -> None:
        """Replace the worker when it has served its requests or files."""
        requests, files = self._limits()
        if self._served >= requests or (files is not None and self._files >= files):
            self.close()
            self._start()

    def _request(self, files: Sequence[Path]) -> ReplyT:
        """Ask the worker; when that fails, start a new one and ask it once more.

        Raises:
            ToolError: the worker failed twice in a row, or timed out once.
        """
        try:
            return self._ask(files)
        except ToolError as exc:
            self.close()
            self._start()
            if isinstance(exc.__cause__, subprocess.TimeoutExpired):
                raise  # not retried: that would double the wait
            return self._ask(files)

    def _start(self) -> None:
        argv = self._argv()
        try:
            if self._log is None:
                self._proc = self._popen(argv, subprocess.DEVNULL)
            else:
                with self._log.open("ab") as log:
                    self._proc = self._popen(argv, log)
        except OSError as exc:
            raise ToolError(f"the {self.tool} worker did not start: {exc}") from exc
        self._served = self._files = 0
        self._started()

    @staticmethod
    def _popen(argv: list[str], stderr: IO[bytes] | int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=TOOL_ENV
        )

    def _ask(self, files: Sequence[Path]) -> ReplyT:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise ToolError(f"the {self.tool} worker is not running")
        self._served += 1
        self._files += len(files)
        try:
            proc.stdin.write(json.dumps([str(path) for path in files]).encode() + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], self._timeout_s)
            if not ready:
                raise ToolError(
                    f"the {self.tool} worker took longer than {self._timeout_s} s"
                ) from subprocess.TimeoutExpired(f"{self.tool} worker", self._timeout_s)
            reply = json.loads(proc.stdout.readline())
            if not isinstance(reply, dict):
                raise TypeError("not an object")
            return self._decode(reply)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ToolError(f"the {self.tool} worker failed: {self._why(exc)}") from exc

    def _why(self, exc: Exception) -> str:
        """What a failed request says: the log's tail when there is a log, else the error."""
        if self._log is None:
            return f"{type(exc).__name__}: {exc}"
        if not self._log.exists():
            return "(no log)"
        return self._log.read_text(errors="replace").strip()[-300:]
