"""Load on ``gradebox serve``: 16 clients sending ``POST /v1/grade`` for N seconds.

Starts a real uvicorn server (``python -m gradebox.service serve``) on a free
port with a fresh SQLite file, registers the bundled examples
(``examples/hidden.jsonl`` + ``public.jsonl``), and has ``--clients`` concurrent
clients grade ``examples/samples.jsonl`` round-robin, each as fast as it gets
answers. Clients share ``--tokens`` grader tokens (the server allows
``--per-token-concurrency`` grades in flight per token; a refusal is a 429,
counted apart from errors). Prints requests/s, p50/p99 latency, errors and 429s
for each of ``--modes``, one after the other against the same server:

- ``floor``: ``GET /healthz`` (the same uvicorn, HTTP client and 16 clients, no
  grading): the peer figure, what this machine's HTTP stack alone costs;
- ``tests``: ``static: false, judge: off``;
- ``static``: ``static: true, judge: off``;
- ``solo``: ``tests`` with one client: its p50 against the sandbox time the rows report;
- ``judge``: ``static: true, judge: defer``, against a local OpenAI-compatible
  endpoint this script starts, answering every request after ``--judge-latency``
  seconds (the server runs without a judge cache, so every sample is a request;
  deferred judgements run behind the response, as in production).

The **CLI peer** grades the same sample mix with ``gradebox grade --no-static
--no-judge --jobs W`` (W = the server's sandbox workers) at two sizes and prints
its rate net of start-up: the sandbox's own ceiling on this machine, now. Load
on a shared machine moves within minutes, so the two sides run in ``--rounds``
rounds (3 by default): each round measures the service's ``tests`` mode and the
CLI peer back to back, the side going first alternating (the server stays up,
idle, while the CLI runs); the first round also runs the other ``--modes`` (and
the CLI with static when ``static`` is one). It prints each round's ratio
(service req/s over CLI samples/s) and their median, which the throughput goal
reads. With every client always waiting, p50 is about clients / throughput, so
the script also prints the p50 that the HTTP floor and the CLI peer allow
together (``--no-cli-peer`` skips the peer).

CPU: each mode prints the server process's own CPU per request (``/proc/<pid>/stat``
user + system, all its threads, not its children: sandboxes, front workers,
static sessions), steadier than wall time on a loaded machine. That process also
drives the sandbox, as the CLI's own process does, so the CLI peer's own CPU per
sample (read the same way, net of start-up) is printed beside it: the server's
figure minus the CLI's is what HTTP, validation, thread hops, SQLite and logs cost,
printed per round (``the service's own``) and as the median of the rounds.
The load generator shares the machine: each mode also prints this script's own CPU
per answer. ``--client raw`` (the default) sends each sample's request, encoded once,
on keep-alive connections and reads status, length and body (~0.2 ms of CPU an answer);
``--client httpx`` uses httpx's ``AsyncClient`` (~1.5 ms an answer: as much as the
server's own process, CPU the server and the sandbox then lack).
Servers and the CLI peer run their tree's code (``PYTHONPATH``), whatever is installed;
``--baseline TREE`` adds a second server, of another tree, measured in each round beside
this one (its ``tests`` mode only): before and after a change in one run.
Tasks are registered with ``disclosure: "cases"`` so rows carry the exact sandbox
latency that the solo goal is measured against (``counts`` rounds it up to 100 ms).

::

    .venv/bin/python bench/service.py                 # 16 clients, 60 s per mode, 3 rounds
    .venv/bin/python bench/service.py --seconds 20 --json
    .venv/bin/python bench/service.py --modes tests --rounds 5 --seconds 20
    .venv/bin/python bench/service.py --exclude fib-exponential,dedupe-hangs  # no timeouts
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tasks() -> dict[str, dict]:
    tasks: dict[str, dict] = {}
    for line in (EXAMPLES / "hidden.jsonl").read_text().splitlines():
        case = json.loads(line)
        tasks.setdefault(case["fn"], {"public": {}, "hidden": []})["hidden"].append(case)
    for line in (EXAMPLES / "public.jsonl").read_text().splitlines():
        pub = json.loads(line)
        tasks[pub["fn"]]["public"] = pub
    return tasks


def _judge_reply(body: dict) -> dict:
    """A valid judge reply for whatever rubric schema the request carries."""
    schema = body["response_format"]["json_schema"]["schema"]
    scores = schema["properties"]["scores"]["properties"]
    content = {
        "verdict": "match",
        "unmet_requirements": [],
        "scores": {k: max(v["enum"]) for k, v in scores.items()},
        "issues": [],
        "rationale": "Benchmark endpoint.",
    }
    message = {"role": "assistant", "content": json.dumps(content)}
    return {
        "id": "bench", "object": "chat.completion", "created": 0, "model": "bench-judge",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


def _judge_endpoint(latency: float) -> tuple[ThreadingHTTPServer, list[int]]:
    """An OpenAI-compatible endpoint on 127.0.0.1 answering after ``latency`` seconds."""
    served = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def handle(self) -> None:
            # The server stopped while a judgement was in flight: nobody to answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            time.sleep(latency)
            data = json.dumps(_judge_reply(json.loads(raw))).encode()
            served[0] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, served


def _env(tree: Path) -> dict[str, str]:
    """The environment of a server or CLI run: ``tree``'s code first (not the installed one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADEBOX_", "OPENAI_"))}
    return env | {"PYTHONPATH": str(tree)}


def _start(
    db: Path,
    port: int,
    args: argparse.Namespace,
    log: Path,
    judge_url: str | None,
    tree: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``gradebox serve``, of this tree or of ``tree`` (``python -m`` from there)."""
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(db), "--port", str(port),
        "--workers", str(args.workers), "--per-token-concurrency", str(args.per_token_concurrency),
        "--log-level", "warning", "--rate-limit", str(args.rate_limit), "--no-judge-cache",
        "--judge-concurrency", str(args.judge_concurrency),
    ]  # fmt: skip
    env = _env(tree or ROOT)
    if judge_url is not None:
        env |= {"GRADEBOX_JUDGE_BASE_URL": judge_url, "GRADEBOX_JUDGE_MODEL": "bench-judge"}
    else:
        argv.append("--no-judge")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tree or ROOT
        )
    # The sandbox's self-check takes ~1 s alone and most of a minute on a loaded machine.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"server did not become ready; log:\n{log.read_text()[-2000:]}")


async def _client(
    http: httpx.AsyncClient,
    headers: dict,
    samples: list[dict],
    start: int,
    stop_at: float,
    sandbox_ms: list[float],
) -> tuple[list[float], int, int]:
    latencies: list[float] = []
    errors = refused = 0
    i = start
    while time.monotonic() < stop_at:
        sample = samples[i % len(samples)]
        i += 1
        t0 = time.perf_counter()
        try:
            if sample.get("probe"):
                r = await http.get("/healthz", headers=headers)
            else:
                r = await http.post("/v1/grade", json=sample, headers=headers)
        except httpx.HTTPError:
            errors += 1
            continue
        if r.status_code == 200:
            latencies.append(time.perf_counter() - t0)
            if not sample.get("probe") and isinstance(r.json().get("latency_ms"), int | float):
                sandbox_ms.append(float(r.json()["latency_ms"]))
        elif r.status_code == 429:
            refused += 1
            await asyncio.sleep(float(r.headers.get("retry-after", "1")) / 10)
        else:
            errors += 1
    return latencies, errors, refused


class _Raw:
    """One keep-alive HTTP/1.1 connection that sends prepared requests and reads answers.

    Written here rather than taken from a client library because the load generator
    shares the machine's two cores with the server and the sandbox it measures: httpx's
    AsyncClient spent 1.4 to 1.8 ms of CPU per request in this script (as much as the
    server's own process), which is grading time lost to the measurement. This sends
    bytes encoded once and reads the status, ``content-length`` and body; nothing else
    (no redirects, no chunked bodies: uvicorn answers these routes with a length).
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def send(self, request: bytes) -> tuple[int, bytes, dict[str, str]]:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, body, headers

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


def _request(method: str, path: str, token: str, body: bytes | None = None) -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {token}\r\n"
    )
    if body is not None:
        head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return (head + "\r\n").encode("latin-1") + (body or b"")


async def _raw_client(
    port: int,
    token: str,
    samples: list[dict],
    start: int,
    stop_at: float,
    sandbox_ms: list[float],
) -> tuple[list[float], int, int]:
    """:func:`_client` over :class:`_Raw`: each sample's request is encoded once."""
    prepared = [
        _request("GET", "/healthz", token)
        if s.get("probe")
        else _request("POST", "/v1/grade", token, json.dumps(s).encode())
        for s in samples
    ]
    conn = _Raw(port)
    latencies: list[float] = []
    errors = refused = 0
    i = start
    try:
        while time.monotonic() < stop_at:
            k = i % len(samples)
            i += 1
            t0 = time.perf_counter()
            try:
                status, body, headers = await conn.send(prepared[k])
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                errors += 1
                await conn.close()
                continue
            if status == 200:
                latencies.append(time.perf_counter() - t0)
                if not samples[k].get("probe"):
                    ms = json.loads(body).get("latency_ms")
                    if isinstance(ms, int | float):
                        sandbox_ms.append(float(ms))
            elif status == 429:
                refused += 1
                await asyncio.sleep(float(headers.get("retry-after", "1")) / 10)
            else:
                errors += 1
    finally:
        await conn.close()
    return latencies, errors, refused


def _batches(port: int, admin: str | None) -> tuple[float, float]:
    """The server's static batch-size histogram so far: (samples, batches)."""
    if admin is None:
        return 0.0, 0.0
    text = httpx.get(
        f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {admin}"}
    ).text
    found = dict(
        line.split()[:2] for line in text.splitlines()
        if line.startswith(("gradebox_static_batch_size_sum", "gradebox_static_batch_size_count"))
    )  # fmt: skip
    return (
        float(found.get("gradebox_static_batch_size_sum", 0)),
        float(found.get("gradebox_static_batch_size_count", 0)),
    )


async def _load(
    port: int,
    tokens: list[str],
    args: argparse.Namespace,
    mode: str,
    pid: int | None = None,
    admin: str | None = None,
) -> dict:
    samples = [json.loads(x) for x in (EXAMPLES / "samples.jsonl").read_text().splitlines() if x]
    samples = [s for s in samples if s["id"] not in args.exclude.split(",")]
    samples = [dict(s, **_MODES[mode]) for s in samples]
    clients = 1 if mode == "solo" else args.clients
    limits = httpx.Limits(max_connections=clients * 2)
    sandbox_ms: list[float] = []
    cpu0, batches0 = _cpu_s(pid), _batches(port, admin)
    client0 = time.process_time()
    if args.client == "raw":
        t0 = time.monotonic()
        stop_at = t0 + args.seconds
        results = await asyncio.gather(
            *(
                _raw_client(port, tokens[c % len(tokens)], samples, c, stop_at, sandbox_ms)
                for c in range(clients)
            )
        )
        elapsed = time.monotonic() - t0
    else:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=120, limits=limits
        ) as http:
            t0 = time.monotonic()
            stop_at = t0 + args.seconds
            results = await asyncio.gather(
                *(
                    _client(
                        http,
                        {"Authorization": f"Bearer {tokens[c % len(tokens)]}"},
                        samples,
                        c,
                        stop_at,
                        sandbox_ms,
                    )
                    for c in range(clients)
                )
            )
            elapsed = time.monotonic() - t0
    cpu = _cpu_s(pid) - cpu0
    client_cpu = time.process_time() - client0
    batched = [a - b for a, b in zip(_batches(port, admin), batches0, strict=True)]
    lat = sorted(x for r in results for x in r[0])
    sandbox_ms.sort()

    def pct(p: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None

    return {
        "mode": mode,
        "clients": clients,
        "seconds": round(elapsed, 1),
        "workers": args.workers,
        "ok": len(lat),
        "requests_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "errors": sum(r[1] for r in results),
        "refused_429": sum(r[2] for r in results),
        "server_cpu_ms_per_request": round(cpu * 1000 / len(lat), 2) if lat and pid else None,
        # The load generator shares the machine: what its own process spends per answer.
        "client_cpu_ms_per_request": round(client_cpu * 1000 / len(lat), 2) if lat else None,
        "row_latency_p50_ms": sandbox_ms[len(sandbox_ms) // 2] if sandbox_ms else None,
        "static_batch_mean": round(batched[0] / batched[1], 2) if batched[1] else None,
    }


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) the server's own process has used so far (Linux)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cli_rate(args: argparse.Namespace, tmp: Path, *, static: bool = False) -> dict:
    """The CLI's tests-only grading rate on the same samples, net of its start-up.

    ``gradebox grade --no-static --no-judge --jobs W`` (W = the server's sandbox
    workers) over the clients' sample mix repeated to ``small`` and to ``large``
    samples; rate = (large - small) / (wall(large) - wall(small)), so start-up
    cancels. It is the sandbox's own ceiling on this machine, now: the service
    cannot grade faster than this, whatever its HTTP stack does. When the load
    moved more than the extra samples cost (the large run no longer than the
    small one), the pair runs again, three times at most.
    """
    for _ in range(3):
        figures = _cli_pair(args, tmp, static=static)
        if figures["samples_per_s"] is not None:
            return figures
    return figures


def _cli_pair(args: argparse.Namespace, tmp: Path, *, static: bool) -> dict:
    samples = [json.loads(x) for x in (EXAMPLES / "samples.jsonl").read_text().splitlines() if x]
    samples = [s for s in samples if s["id"] not in args.exclude.split(",")]
    gradebox = Path(sys.executable).with_name("gradebox")
    walls, cpus = {}, {}
    small, large = (args.cli_static_small, args.cli_static_large) if static else (
        args.cli_small, args.cli_large)  # fmt: skip
    layers = [] if static else ["--no-static"]
    for n in (small, large):
        path = tmp / f"cli-{n}.jsonl"
        with path.open("w") as out:
            for i in range(n):
                sample = samples[i % len(samples)]
                out.write(json.dumps(dict(sample, id=f"{sample['id']}-{i}")) + "\n")
        argv = [
            str(gradebox), "grade", "--hidden", str(EXAMPLES / "hidden.jsonl"),
            "--public", str(EXAMPLES / "public.jsonl"), "--samples", str(path),
            "--out", str(tmp / f"cli-{n}.out"), *layers, "--no-judge",
            "--jobs", str(args.workers),
        ]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(ROOT), cwd=ROOT
        )
        cpus[n] = _cpu_until_exit(proc)
        walls[n] = time.perf_counter() - t0
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, argv)
    extra = walls[large] - walls[small]
    rate = round((large - small) / extra, 1) if extra > 0 else None
    cpu_ms = (cpus[large] - cpus[small]) * 1000 / (large - small)
    mode = "cli-static" if static else "cli"
    return {
        "mode": mode, "workers": args.workers, "samples_per_s": rate, "walls": walls,
        "cli_cpu_ms_per_sample": round(cpu_ms, 2),
    }  # fmt: skip


def _cpu_until_exit(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds of ``proc``'s own process (not its children), read until it exits.

    The last reading is at most 20 ms before the exit; between the two sizes that
    part cancels, as start-up does.
    """
    cpu = 0.0
    while proc.poll() is None:
        cpu = max(cpu, _cpu_s(proc.pid))
        time.sleep(0.02)
    return cpu


_MODES: dict[str, dict] = {
    "floor": {"probe": True},
    "tests": {"static": False, "judge": "off"},
    "solo": {"static": False, "judge": "off"},
    "static": {"static": True, "judge": "off"},
    "judge": {"static": True, "judge": "defer"},
}
"""What each mode's clients send (``probe``: ``GET /healthz`` instead of a grade)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="load generator: prepared bytes on keep-alive connections (raw, ~0.2 ms of CPU "
        "a request) or httpx's AsyncClient (~1.5 ms a request on this kind of machine)",
    )
    parser.add_argument("--tokens", type=int, default=4, help="grader tokens the clients share")
    parser.add_argument("--workers", type=int, default=2, help="sandbox workers of the server")
    parser.add_argument("--per-token-concurrency", type=int, default=4)
    parser.add_argument(
        "--rate-limit", type=float, default=0.0,
        help="the server's per-token, per-task rate (0: off, to measure throughput)",
    )  # fmt: skip
    parser.add_argument(
        "--exclude", default="", metavar="IDS", help="sample ids to leave out (comma-separated)"
    )
    parser.add_argument(
        "--modes",
        default="floor,tests,solo,static,judge",
        help="comma-separated, measured one after the other against the same server in the "
        "first round: floor (GET /healthz), tests (static: false), static (static: true), "
        "judge (static: true, judge: defer against the local endpoint)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="rounds of (service tests mode, CLI peer), the side going first alternating; "
        "the other modes run in the first round only",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", type=Path, metavar="TREE",
        help="another source tree (e.g. the last commit, unpacked with git archive): its server "
        "runs beside this tree's, with its own database, and each round measures its tests "
        "mode too, right after this tree's",
    )  # fmt: skip
    parser.add_argument(
        "--judge-latency", type=float, default=0.25,
        help="seconds the local judge endpoint takes per request",
    )  # fmt: skip
    parser.add_argument("--judge-concurrency", type=int, default=8)
    parser.add_argument(
        "--no-cli-peer", action="store_true",
        help="skip the CLI's tests-only rate on the same samples (the sandbox's ceiling)",
    )  # fmt: skip
    parser.add_argument("--cli-small", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--cli-large", type=int, default=1200, help=argparse.SUPPRESS)
    parser.add_argument("--cli-static-small", type=int, default=40, help=argparse.SUPPRESS)
    parser.add_argument("--cli-static-large", type=int, default=240, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    return parser


@dataclass(frozen=True)
class _Server:
    tree: str
    """``this`` (the tree this script is in) or ``baseline`` (``--baseline``)."""
    port: int
    pid: int
    tokens: list[str]
    admin: str


def main() -> None:
    # bench/static.py would shadow the static package when run as a script.
    here = Path(__file__).resolve().parent
    sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != here)]

    args = _parser().parse_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(_MODES))
    if unknown:
        raise SystemExit(f"unknown modes: {', '.join(unknown)}; known: {', '.join(_MODES)}")
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="gradebox-bench-") as tmp, contextlib.ExitStack() as up:
        judge, served = _judge_endpoint(args.judge_latency) if "judge" in modes else (None, [0])
        if judge is not None:
            up.callback(judge.shutdown)
        url = f"http://127.0.0.1:{judge.server_address[1]}/v1" if judge else None
        trees = {"this": None} | ({"baseline": args.baseline} if args.baseline else {})
        servers = [
            up.enter_context(_serving(name, tree, args, Path(tmp), url))
            for name, tree in trees.items()
        ]
        rounds = [_round(r, modes, args, Path(tmp), servers, served) for r in range(args.rounds)]
    summary = _summary(rounds)
    if args.json:
        figures = [f for r in rounds for f in r["service"] + r["cli"]]
        print(json.dumps([*figures, summary]))
        return
    _print(rounds, summary, args)


@contextlib.contextmanager
def _serving(
    name: str, tree: Path | None, args: argparse.Namespace, tmp: Path, judge_url: str | None
) -> Iterator[_Server]:
    """A server of ``tree`` on a free port, its own database, tokens and the example tasks."""
    from gradebox.service import Store, create_token

    db, port = tmp / f"{name}.sqlite", _free_port()
    store = Store(db)
    admin = create_token(store, "admin")
    tokens = [create_token(store, "grader") for _ in range(args.tokens)]
    store.close()
    proc = _start(db, port, args, tmp / f"{name}.log", judge_url, tree)
    try:
        _register(port, admin)
        yield _Server(name, port, proc.pid, tokens, admin)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _register(port: int, admin: str) -> None:
    for fn, body in _tasks().items():
        r = httpx.put(
            f"http://127.0.0.1:{port}/v1/tasks/{fn}",
            # "cases": rows carry the exact sandbox latency (the solo goal's yardstick)
            json=dict(body, disclosure="cases"),
            headers={"Authorization": f"Bearer {admin}"},
        )
        r.raise_for_status()


def _round(
    number: int,
    modes: list[str],
    args: argparse.Namespace,
    tmp: Path,
    servers: list[_Server],
    served: list[int],
) -> dict:
    """One round: the service's modes (all in the first round, ``tests`` after), the CLI peer.

    Odd rounds run the CLI peer first, so a load that drifts one way across the run
    does not always favour the same side. Servers stay up, idle, while another side runs.
    A baseline server runs ``tests`` only, right after this tree's (before it in odd rounds).
    """
    mine = modes if number == 0 else [m for m in modes if m == "tests"]

    def service() -> list[dict]:
        out = []
        for server in servers[::-1] if number % 2 else servers:
            for mode in mine if server.tree == "this" else [m for m in mine if m == "tests"]:
                before = served[0]
                figures = asyncio.run(
                    _load(server.port, server.tokens, args, mode, server.pid, server.admin)
                )
                figures["judge_requests"] = served[0] - before
                out.append(figures | {"round": number + 1, "tree": server.tree})
        return out

    def peers() -> list[dict]:
        if args.no_cli_peer:
            return []
        out = [_cli_rate(args, tmp)]
        if "static" in mine:
            out.append(_cli_rate(args, tmp, static=True))
        return [figures | {"round": number + 1} for figures in out]

    if number % 2:
        cli = peers()
        figures = service()
    else:
        figures = service()
        cli = peers()
    return {"round": number + 1, "service": figures, "cli": cli}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _summary(rounds: list[dict]) -> dict:
    """Per round and tree: tests req/s over the CLI's samples/s, both CPUs, their difference."""
    per_round = []
    for r in rounds:
        cli = next((f for f in r["cli"] if f["mode"] == "cli"), None)
        if cli is None or not cli["samples_per_s"]:
            continue
        for tests in (f for f in r["service"] if f["mode"] == "tests"):
            server_cpu, cli_cpu = tests["server_cpu_ms_per_request"], cli["cli_cpu_ms_per_sample"]
            per_round.append({
                "round": r["round"],
                "tree": tests["tree"],
                "ratio": round(tests["requests_per_s"] / cli["samples_per_s"], 3),
                "server_cpu_ms_per_request": server_cpu,
                "cli_cpu_ms_per_sample": cli_cpu,
                "service_overhead_ms": (
                    round(server_cpu - cli_cpu, 2) if server_cpu is not None else None
                ),
            })  # fmt: skip

    def median_of(tree: str, key: str) -> float | None:
        return _median([x[key] for x in per_round if x["tree"] == tree and x[key] is not None])

    keys = ("ratio", "server_cpu_ms_per_request", "cli_cpu_ms_per_sample", "service_overhead_ms")
    trees = sorted({x["tree"] for x in per_round}, key=lambda t: t != "this")
    return {
        "mode": "rounds",
        "rounds": per_round,
        "medians": {tree: {key: median_of(tree, key) for key in keys} for tree in trees},
    }


def _print(rounds: list[dict], summary: dict, args: argparse.Namespace) -> None:
    for r in rounds:
        for figures in r["service"]:
            _print_mode(figures)
        for peer in r["cli"]:
            print(
                f"round {peer['round']}: gradebox grade [{peer['mode']}], {peer['workers']} "
                f"sandbox workers, same samples: {peer['samples_per_s']} samples/s net of "
                f"start-up, its own process's CPU {peer['cli_cpu_ms_per_sample']} ms/sample"
            )
    first = {f["mode"]: f for f in rounds[0]["service"] if f["tree"] == "this"}
    floor = first.get("floor")
    for figures in first.values():
        if floor and figures is not floor and floor["p50_ms"] and figures["p50_ms"]:
            ratio = figures["p50_ms"] / floor["p50_ms"]
            print(f"p50 {figures['mode']} / floor: {ratio:.1f}x (same server, round 1)")
    for x in summary["rounds"]:
        print(f"round {x['round']} [{x['tree']}]: " + _line(x))
    if not summary["rounds"]:
        print("cli peer: no figure (skipped, no tests mode, or the load moved too much)")
        return
    for tree, medians in summary["medians"].items():
        n = sum(1 for x in summary["rounds"] if x["tree"] == tree)
        print(f"median of {n} rounds [{tree}]: " + _line(medians))
    cli = next(f for f in rounds[0]["cli"] if f["mode"] == "cli")
    if floor and floor["requests_per_s"] and cli["samples_per_s"]:
        # With every client waiting, p50 is about clients / throughput; if the HTTP
        # stack's cost and the sandbox's add up, throughput is one over their sum.
        per_request = 1 / floor["requests_per_s"] + 1 / cli["samples_per_s"]
        print(
            f"tests-only p50 at {args.clients} clients if the two round-1 floors add up "
            f"(HTTP stack + sandbox): {args.clients * per_request * 1000:.0f} ms"
        )
    _goals(rounds, summary, args.clients)


def _line(x: dict) -> str:
    return (
        f"req/s tests / cli peer {x['ratio']:.2f}x; server CPU "
        f"{x['server_cpu_ms_per_request']} ms/request, CLI's own CPU "
        f"{x['cli_cpu_ms_per_sample']} ms/sample, the service's own "
        f"{x['service_overhead_ms']} ms/request"
    )


def _print_mode(figures: dict) -> None:
    print(
        f"round {figures['round']} [{figures['tree']}]: "
        f"{'GET /healthz' if figures['mode'] == 'floor' else 'POST /v1/grade'} "
        f"[{figures['mode']}], {figures['clients']} clients, "
        f"{figures['seconds']} s, {figures['workers']} sandbox workers: "
        f"{figures['requests_per_s']} req/s, p50 {figures['p50_ms']} ms, "
        f"p99 {figures['p99_ms']} ms, errors {figures['errors']}, "
        f"429s {figures['refused_429']} (ok {figures['ok']}), "
        f"server CPU {figures['server_cpu_ms_per_request']} ms/request, "
        f"load generator's CPU {figures['client_cpu_ms_per_request']} ms/request"
        + (
            f", static batch mean {figures['static_batch_mean']}"
            if figures["static_batch_mean"]
            else ""
        )
        + (f", judge requests {figures['judge_requests']}" * (figures["mode"] == "judge"))
    )


def _goals(rounds: list[dict], summary: dict, clients: int) -> None:
    """The service's goals against the CLI, measured in this run (issue 28).

    The throughput goal reads the median of the rounds' ratios; the p50 goal each
    round's tests p50 against that round's CLI; the others round 1.
    """

    def say(what: str, value: float | None, goal: float, *, at_most: bool = False) -> None:
        if value is None:
            print(f"goal {what}: not measured")
            return
        met = value <= goal if at_most else value >= goal
        sign = "<=" if at_most else ">="
        print(f"goal {what}: {value:.2f} ({sign} {goal:.2f}) {'met' if met else 'NOT met'}")

    n = sum(1 for x in summary["rounds"] if x["tree"] == "this")
    ratio = summary["medians"].get("this", {}).get("ratio")
    say(f"tests req/s / cli peer (median of {n} rounds)", ratio, 0.8)
    for r in rounds:
        tests = next(
            (f for f in r["service"] if f["mode"] == "tests" and f["tree"] == "this"), None
        )
        cli = next((f for f in r["cli"] if f["mode"] == "cli"), None)
        if tests and cli and cli["samples_per_s"]:
            bound = 1.25 * clients / cli["samples_per_s"] * 1000
            say(f"round {r['round']} tests p50 ms at {clients} clients", tests["p50_ms"], bound,
                at_most=True)  # fmt: skip
    first = {f["mode"]: f for f in rounds[0]["service"] if f["tree"] == "this"}
    solo, static = first.get("solo"), first.get("static")
    cli_static = next((f for f in rounds[0]["cli"] if f["mode"] == "cli-static"), None)
    if solo and solo["p50_ms"] and solo["row_latency_p50_ms"]:
        say("solo p50 ms (1 client)", solo["p50_ms"], 2 * solo["row_latency_p50_ms"], at_most=True)
    if static and cli_static and cli_static["samples_per_s"]:
        ratio = static["requests_per_s"] / cli_static["samples_per_s"]
        say(f"static req/s / cli with static ({cli_static['samples_per_s']}/s)", ratio, 0.8)
    errors = sum(f["errors"] for r in rounds for f in r["service"] if f["tree"] == "this")
    say("errors", errors, 0, at_most=True)


if __name__ == "__main__":
    main()
