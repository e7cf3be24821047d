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
- ``judge``: ``static: true, judge: defer``, against a local OpenAI-compatible
  endpoint this script starts, answering every request after ``--judge-latency``
  seconds (the server runs without a judge cache, so every sample is a request;
  deferred judgements run behind the response, as in production).

After the server has stopped, the **CLI peer** grades the same sample mix with
``gradebox grade --no-static --no-judge --jobs W`` (W = the server's sandbox
workers) at two sizes and prints its rate net of start-up: the sandbox's own
ceiling on this machine in this run. With every client always waiting, p50 is
about clients / throughput, so the script also prints the p50 that the HTTP
floor and the CLI peer allow together (``--no-cli-peer`` skips it).

::

    .venv/bin/python bench/service.py                 # 16 clients, 60 s per mode
    .venv/bin/python bench/service.py --seconds 20 --json
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
import subprocess
import sys
import tempfile
import threading
import time
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


def _start(
    db: Path, port: int, args: argparse.Namespace, log: Path, judge_url: str | None
) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(db), "--port", str(port),
        "--workers", str(args.workers), "--per-token-concurrency", str(args.per_token_concurrency),
        "--log-level", "warning", "--rate-limit", str(args.rate_limit), "--no-judge-cache",
        "--judge-concurrency", str(args.judge_concurrency),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADEBOX_", "OPENAI_"))}
    if judge_url is not None:
        env |= {"GRADEBOX_JUDGE_BASE_URL": judge_url, "GRADEBOX_JUDGE_MODEL": "bench-judge"}
    else:
        argv.append("--no-judge")
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
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
    http: httpx.AsyncClient, headers: dict, samples: list[dict], start: int, stop_at: float
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
        elif r.status_code == 429:
            refused += 1
            await asyncio.sleep(float(r.headers.get("retry-after", "1")) / 10)
        else:
            errors += 1
    return latencies, errors, refused


async def _load(port: int, tokens: list[str], args: argparse.Namespace, mode: str) -> dict:
    samples = [json.loads(x) for x in (EXAMPLES / "samples.jsonl").read_text().splitlines() if x]
    samples = [s for s in samples if s["id"] not in args.exclude.split(",")]
    samples = [dict(s, **_MODES[mode]) for s in samples]
    limits = httpx.Limits(max_connections=args.clients * 2)
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
                )
                for c in range(args.clients)
            )
        )
        elapsed = time.monotonic() - t0
    lat = sorted(x for r in results for x in r[0])

    def pct(p: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None

    return {
        "mode": mode,
        "clients": args.clients,
        "seconds": round(elapsed, 1),
        "workers": args.workers,
        "ok": len(lat),
        "requests_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "errors": sum(r[1] for r in results),
        "refused_429": sum(r[2] for r in results),
    }


def _cli_rate(args: argparse.Namespace, tmp: Path) -> dict:
    """The CLI's tests-only grading rate on the same samples, net of its start-up.

    ``gradebox grade --no-static --no-judge --jobs W`` (W = the server's sandbox
    workers) over the clients' sample mix repeated to ``small`` and to ``large``
    samples; rate = (large - small) / (wall(large) - wall(small)), so start-up
    cancels. It is the sandbox's own ceiling on this machine, now: the service
    cannot grade faster than this, whatever its HTTP stack does.
    """
    samples = [json.loads(x) for x in (EXAMPLES / "samples.jsonl").read_text().splitlines() if x]
    samples = [s for s in samples if s["id"] not in args.exclude.split(",")]
    gradebox = Path(sys.executable).with_name("gradebox")
    walls = {}
    for n in (args.cli_small, args.cli_large):
        path = tmp / f"cli-{n}.jsonl"
        with path.open("w") as out:
            for i in range(n):
                sample = samples[i % len(samples)]
                out.write(json.dumps(dict(sample, id=f"{sample['id']}-{i}")) + "\n")
        argv = [
            str(gradebox), "grade", "--hidden", str(EXAMPLES / "hidden.jsonl"),
            "--public", str(EXAMPLES / "public.jsonl"), "--samples", str(path),
            "--out", str(tmp / f"cli-{n}.out"), "--no-static", "--no-judge",
            "--jobs", str(args.workers),
        ]  # fmt: skip
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls[n] = time.perf_counter() - t0
    extra = walls[args.cli_large] - walls[args.cli_small]
    rate = (args.cli_large - args.cli_small) / max(1e-9, extra)
    return {"mode": "cli", "workers": args.workers, "samples_per_s": round(rate, 1), "walls": walls}


_MODES: dict[str, dict] = {
    "floor": {"probe": True},
    "tests": {"static": False, "judge": "off"},
    "static": {"static": True, "judge": "off"},
    "judge": {"static": True, "judge": "defer"},
}
"""What each mode's clients send (``probe``: ``GET /healthz`` instead of a grade)."""


def main() -> None:
    # bench/static.py would shadow the static package when run as a script.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from gradebox.service import Store, create_token

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=16)
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
        default="floor,tests,static,judge",
        help="comma-separated, measured one after the other against the same server: "
        "floor (GET /healthz), tests (static: false), static (static: true), "
        "judge (static: true, judge: defer against the local endpoint)",
    )
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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gradebox-bench-") as tmp:
        db, port = Path(tmp) / "bench.sqlite", _free_port()
        store = Store(db)
        admin = create_token(store, "admin")
        tokens = [create_token(store, "grader") for _ in range(args.tokens)]
        store.close()
        modes = args.modes.split(",")
        unknown = sorted(set(modes) - set(_MODES))
        if unknown:
            raise SystemExit(f"unknown modes: {', '.join(unknown)}; known: {', '.join(_MODES)}")
        judge, served = _judge_endpoint(args.judge_latency) if "judge" in modes else (None, [0])
        url = f"http://127.0.0.1:{judge.server_address[1]}/v1" if judge else None
        proc = _start(db, port, args, Path(tmp) / "server.log", url)
        try:
            for fn, body in _tasks().items():
                r = httpx.put(
                    f"http://127.0.0.1:{port}/v1/tasks/{fn}",
                    json=body,
                    headers={"Authorization": f"Bearer {admin}"},
                )
                r.raise_for_status()
            runs = []
            for mode in modes:
                before = served[0]
                figures = asyncio.run(_load(port, tokens, args, mode))
                figures["judge_requests"] = served[0] - before
                runs.append(figures)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            if judge is not None:
                judge.shutdown()
        # After the server has stopped: the CLI has the machine to itself, as the server had.
        cli = None if args.no_cli_peer else _cli_rate(args, Path(tmp))
    if args.json:
        print(json.dumps(runs + ([cli] if cli else [])))
        return
    for figures in runs:
        print(
            f"{'GET /healthz' if figures['mode'] == 'floor' else 'POST /v1/grade'} "
            f"[{figures['mode']}], {figures['clients']} clients, "
            f"{figures['seconds']} s, {figures['workers']} sandbox workers: "
            f"{figures['requests_per_s']} req/s, p50 {figures['p50_ms']} ms, "
            f"p99 {figures['p99_ms']} ms, errors {figures['errors']}, "
            f"429s {figures['refused_429']} (ok {figures['ok']})"
            + (f", judge requests {figures['judge_requests']}" * (figures["mode"] == "judge"))
        )
    by_mode = {f["mode"]: f for f in runs}
    floor = by_mode.get("floor")
    for figures in runs:
        if floor and figures is not floor and floor["p50_ms"] and figures["p50_ms"]:
            ratio = figures["p50_ms"] / floor["p50_ms"]
            print(f"p50 {figures['mode']} / floor: {ratio:.1f}x (same server, same run)")
    if cli is None:
        return
    print(
        f"gradebox grade --no-static [cli peer], {cli['workers']} sandbox workers, same samples: "
        f"{cli['samples_per_s']} samples/s net of start-up"
    )
    tests = by_mode.get("tests")
    if tests:
        print(f"req/s tests / cli peer: {tests['requests_per_s'] / cli['samples_per_s']:.2f}x")
    if floor and floor["requests_per_s"]:
        # With every client waiting, p50 is about clients / throughput; if the HTTP
        # stack's cost and the sandbox's add up, throughput is one over their sum.
        per_request = 1 / floor["requests_per_s"] + 1 / cli["samples_per_s"]
        print(
            f"tests-only p50 at {args.clients} clients if the two same-run floors add up "
            f"(HTTP stack + sandbox): {args.clients * per_request * 1000:.0f} ms (goal 30 ms)"
        )


if __name__ == "__main__":
    main()
