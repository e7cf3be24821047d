"""Real Dask clusters for the cluster tests: a scheduler process and `gradebox worker` processes.

Nothing is mocked: the scheduler is Dask's own (`python -m distributed.cli.dask_scheduler`),
each worker is the real `gradebox worker` command with a bubblewrap sandbox, and faults are
SIGKILLs of real pids.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client
from waiting import wait_until

from gradebox.cluster.worker import EVENT_TOPIC, resource_name

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
GRADEBOX = str(Path(sys.executable).parent / "gradebox")
JUDGE_ENV = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a child: no judge endpoint, whatever the developer's shell holds."""
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
    env.update(extra)
    return env


def _address(file: Path) -> str | None:
    """The scheduler's address from its file, once the file holds a whole JSON document."""
    try:
        return str(json.loads(file.read_text())["address"])
    except (OSError, ValueError, KeyError):
        return None


class DaskCluster:
    """A scheduler process plus `gradebox worker` processes, stopped by pid at the end."""

    def __init__(self, tmp: Path, *, allowed_failures: int = 3) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        file = tmp / "scheduler.json"
        env = clean_env(DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=str(allowed_failures))
        self.scheduler = self._spawn(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
            "scheduler",
            env,
        )
        # Until the file holds the whole document (it is written, not renamed, into place).
        self.address = wait_until(
            lambda: _address(file), timeout=60, what="the scheduler to write its address"
        )
        self.client = Client(self.address, timeout=30)

    def _spawn(self, argv: list[str], name: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs.append(proc)
        return proc

    def add_worker(self, *args: str, wait: bool = True) -> subprocess.Popen[bytes]:
        """Start `gradebox worker ADDRESS ARGS...`; with ``wait``, until it advertises slots."""
        before = self.ready(args_backend(args))
        proc = self._spawn([GRADEBOX, "worker", self.address, *args], "worker", clean_env())
        self.workers.append(proc)
        if wait:
            deadline = time.monotonic() + 120  # a hang bound: it starts and proves a sandbox
            while len(self.ready(args_backend(args))) <= len(before):
                assert proc.poll() is None, f"worker exited {proc.returncode}"
                assert time.monotonic() < deadline, "the worker never became ready"
                time.sleep(0.1)
        return proc

    def ready(self, backend: str = "bwrap") -> list[str]:
        """Addresses of workers advertising a proven ``backend`` sandbox."""
        want = resource_name(backend)
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return [a for a, w in info.items() if w.get("resources", {}).get(want, 0) > 0]

    def events(self) -> list[dict[str, object]]:
        """The scheduler's gradebox events (``ready``, ``refused``)."""
        return [msg for _, msg in self.client.get_events(EVENT_TOPIC)]

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=5)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def args_backend(args: tuple[str, ...]) -> str:
    """The backend `gradebox worker ARGS` asks for."""
    if "--isolation" in args:
        value = args[args.index("--isolation") + 1]
        return "bwrap" if value == "auto" else value
    return "bwrap"


@contextlib.contextmanager
def dask_cluster(tmp: Path, **kwargs: int) -> Iterator[DaskCluster]:
    cluster = DaskCluster(tmp, **kwargs)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    """A scheduler with two one-slot bubblewrap workers and one `--isolation none` worker."""
    with dask_cluster(tmp_path_factory.mktemp("cluster")) as c:
        c.add_worker("--jobs", "1")
        c.add_worker("--jobs", "1")
        c.add_worker("--jobs", "1", "--isolation", "none")
        yield c


def grade(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`gradebox grade ARGS...` as a real process (its LocalCluster spawns real processes)."""
    return subprocess.run(
        [GRADEBOX, "grade", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(),
        check=False,
    )


def _roomy_hidden(where: Path) -> Path:
    """examples/hidden.jsonl with every case limit five times as long, written in ``where``.

    fib(30) done naively takes ~0.3 s against its 1 s limit: on a busy machine one pool
    judged it ``ok`` and the other ``timeout``. The rows compared are the pools', not the
    machine's speed; fib(300) still never ends (it costs 5 s instead of 1 s).
    """
    lines = []
    for line in (EXAMPLES / "hidden.jsonl").read_text().splitlines():
        case = json.loads(line)
        if "timeout_s" in case:
            case["timeout_s"] *= 5
        lines.append(json.dumps(case))
    path = where / "hidden-roomy.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def example_args(out: Path, *extra: str) -> list[str]:
    return [
        "--hidden",
        str(_roomy_hidden(out.parent)),
        "--public",
        str(EXAMPLES / "public.jsonl"),
        "--samples",
        str(EXAMPLES / "samples.jsonl"),
        "--no-judge",
        "--jobs",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def untimed(row: dict[str, object]) -> dict[str, object]:
    """A row without its timing, the one field a cluster may change."""
    return {k: v for k, v in row.items() if k != "latency_ms"}


def write_slow_task(tmp: Path, *, samples: int, cases: int = 4, nap: float = 0.3) -> list[str]:
    """A task whose every candidate sleeps ``nap`` seconds per case; the grade args for it."""
    hidden = tmp / "slow_hidden.jsonl"
    hidden.write_text(
        "".join(json.dumps({"fn": "nap", "args": [i], "expect": i}) + "\n" for i in range(cases))
    )
    code = f"import time\n\n\ndef nap(x):\n    time.sleep({nap})\n    return x\n"
    lines = [json.dumps({"id": f"s{i:02d}", "fn": "nap", "code": code}) for i in range(samples)]
    path = tmp / "slow_samples.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return ["--hidden", str(hidden), "--samples", str(path), "--no-static", "--no-judge"]
