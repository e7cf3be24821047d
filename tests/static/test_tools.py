"""static.tools.ToolWorker: the warm-worker lifecycle that mypy's and bandit's workers share.

A tiny real child (a Python script that echoes the file names it is sent) stands
in for the tool: the lifecycle is the base class's, the process and pipes are real.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from static.findings import ToolError
from static.tools import ToolWorker

# Each request is logged on stderr. "wait": no reply until stdin closes (a hung tool);
# "garbage": a line that is not JSON; "nokey": JSON without "files"; a path that exists
# and ends in ".once" is removed and the child dies (a crash on that request only).
CHILD = (
    "import json, os, select, sys\n"
    "for line in sys.stdin:\n"
    "    files = json.loads(line)\n"
    "    print('request', *files, file=sys.stderr, flush=True)\n"
    "    once = [f for f in files if f.endswith('.once') and os.path.exists(f)]\n"
    "    if once:\n"
    "        os.unlink(once[0])\n"
    "        sys.exit(3)\n"
    "    if 'wait' in files:\n"
    "        select.select([sys.stdin], [], [], 60)\n"
    "        sys.exit(0)\n"
    "    reply = {'files': files, 'pid': os.getpid()}\n"
    "    if 'nokey' in files:\n"
    "        reply = {'pid': os.getpid()}\n"
    "    sys.stdout.write('not json\\n' if 'garbage' in files else json.dumps(reply) + '\\n')\n"
    "    sys.stdout.flush()\n"
)


class Echo(ToolWorker[list[str]]):
    tool = "echo"

    def __init__(
        self,
        *,
        requests: int = 100,
        files: int | None = None,
        timeout_s: float = 30.0,
        log: Path | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.limits = (requests, files)
        self.argv = argv or [sys.executable, "-I", "-c", CHILD]
        self.starts = 0
        super().__init__(timeout_s, log=log)

    def ask(self, *names: str) -> list[str]:
        """As the tools' check() does: recycle when due, then one request."""
        self._recycle_if_due()
        return self._request([Path(n) for n in names])

    def _argv(self) -> list[str]:
        return self.argv

    def _limits(self) -> tuple[int, int | None]:
        return self.limits

    def _decode(self, reply: dict[str, Any]) -> list[str]:
        return [str(name) for name in reply["files"]]

    def _started(self) -> None:
        self.starts += 1


@pytest.fixture
def workers() -> Any:
    started: list[Echo] = []

    def make(**kwargs: Any) -> Echo:
        worker = Echo(**kwargs)
        started.append(worker)
        return worker

    yield make
    for worker in started:
        worker.close()


def test_a_request_is_answered_by_the_running_worker(workers: Any) -> None:
    worker = workers()
    pid = worker.pid
    assert pid is not None
    assert worker.ask("a.py", "b.py") == ["a.py", "b.py"]
    assert worker.pid == pid and worker.starts == 1


def test_the_worker_is_replaced_after_so_many_requests(workers: Any) -> None:
    worker = workers(requests=2)
    pid = worker.pid
    worker.ask("a.py")
    worker.ask("b.py")
    assert worker.pid == pid
    assert worker.ask("c.py") == ["c.py"]
    assert worker.pid not in (None, pid) and worker.starts == 2


def test_the_worker_is_replaced_after_so_many_files(workers: Any) -> None:
    worker = workers(files=3)
    pid = worker.pid
    worker.ask("a.py", "b.py")
    worker.ask("c.py")  # 3 files served: due, but replaced only before the next request
    assert worker.pid == pid
    worker.ask("d.py")
    assert worker.pid not in (None, pid)


def test_a_worker_that_crashed_on_a_request_is_restarted_and_asked_again(
    workers: Any, tmp_path: Path
) -> None:
    worker = workers()
    pid = worker.pid
    once = tmp_path / "crash.once"
    once.write_text("")
    assert worker.ask(str(once)) == [str(once)]  # the second worker answered
    assert worker.pid not in (None, pid) and worker.starts == 2


def test_failing_twice_is_a_tool_error_chained_from_the_cause(workers: Any) -> None:
    worker = workers()
    with pytest.raises(ToolError, match=r"^the echo worker failed: JSONDecodeError") as info:
        worker.ask("garbage")
    assert isinstance(info.value.__cause__, ValueError)
    assert worker.starts == 2  # restarted once, and the second answer was garbage too
    with pytest.raises(ToolError, match="the echo worker failed: KeyError") as info:
        worker.ask("nokey")  # a reply that _decode cannot read is the tool's failure too
    assert isinstance(info.value.__cause__, KeyError)


def test_a_timeout_is_not_retried(workers: Any, tmp_path: Path) -> None:
    log = tmp_path / "echo.log"
    worker = workers(timeout_s=0.5, log=log)
    pid = worker.pid
    with pytest.raises(ToolError, match=r"took longer than 0\.5 s") as info:
        worker.ask("wait")
    assert isinstance(info.value.__cause__, subprocess.TimeoutExpired)
    assert worker.pid not in (None, pid) and worker.starts == 2  # a fresh worker is ready
    worker.close()  # a child that was asked logs the request before it sees stdin close
    assert log.read_text().count("request wait") == 1  # asked once: a retry would wait again


def test_with_a_log_a_failure_says_the_logs_tail(workers: Any, tmp_path: Path) -> None:
    worker = workers(log=tmp_path / "echo.log")
    with pytest.raises(
        ToolError, match=r"^the echo worker failed: request garbage\nrequest garbage$"
    ):
        worker.ask("garbage")


def test_a_worker_that_cannot_start_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="the echo worker did not start") as info:
        Echo(argv=[str(tmp_path / "no-such-tool")])
    assert isinstance(info.value.__cause__, OSError)


def test_closing_twice_is_safe_and_a_closed_worker_says_so(workers: Any) -> None:
    worker = workers()
    worker.close()
    worker.close()
    assert worker.pid is None
    with pytest.raises(ToolError, match="the echo worker is not running"):
        worker._ask([Path("a.py")])
