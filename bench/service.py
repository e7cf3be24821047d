"""Load on ``gradebox serve``: 16 clients sending ``POST /v1/grade`` for N seconds.

Starts a real uvicorn server (``python -m gradebox.service serve``) on a free
port with a fresh SQLite file, registers the bundled examples
(``examples/hidden.jsonl`` + ``public.jsonl``), and has ``--clients`` concurrent
clients grade ``examples/samples.jsonl`` round-robin, each as fast as it gets
answers. Clients share ``--tokens`` grader tokens (the server allows
``--per-token-concurrency`` grades in flight per token; a refusal is a 429,
counted apart from errors). Prints requests/s, p50/p99 latency, errors and 429s
for each of ``--modes`` (``tests``: ``static: false``; ``static``: ``static: true``),
one after the other against the same server, and the p50 ratio between them::

    .venv/bin/python bench/service.py                 # 16 clients, 60 s
    .venv/bin/python bench/service.py --seconds 20 --json
    .venv/bin/python bench/service.py --exclude fib-exponential,dedupe-hangs  # no timeouts
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
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


def _start(db: Path, port: int, args: argparse.Namespace, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "gradebox.service", "serve", "--db", str(db), "--port", str(port),
        "--workers", str(args.workers), "--per-token-concurrency", str(args.per_token_concurrency),
        "--log-level", "warning", "--rate-limit", str(args.rate_limit),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
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
    samples = [dict(s, static=mode == "static", judge="off") for s in samples]
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
        default="tests,static",
        help="comma-separated, measured one after the other against the same server: "
        "tests (static: false) and static (static: true); the judge is off",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gradebox-bench-") as tmp:
        db, port = Path(tmp) / "bench.sqlite", _free_port()
        store = Store(db)
        admin = create_token(store, "admin")
        tokens = [create_token(store, "grader") for _ in range(args.tokens)]
        store.close()
        proc = _start(db, port, args, Path(tmp) / "server.log")
        try:
            for fn, body in _tasks().items():
                r = httpx.put(
                    f"http://127.0.0.1:{port}/v1/tasks/{fn}",
                    json=body,
                    headers={"Authorization": f"Bearer {admin}"},
                )
                r.raise_for_status()
            runs = [asyncio.run(_load(port, tokens, args, m)) for m in args.modes.split(",")]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    if args.json:
        print(json.dumps(runs))
        return
    for figures in runs:
        print(
            f"POST /v1/grade [{figures['mode']}], {figures['clients']} clients, "
            f"{figures['seconds']} s, {figures['workers']} sandbox workers: "
            f"{figures['requests_per_s']} req/s, p50 {figures['p50_ms']} ms, "
            f"p99 {figures['p99_ms']} ms, errors {figures['errors']}, "
            f"429s {figures['refused_429']} (ok {figures['ok']})"
        )
    if len(runs) == 2 and runs[0]["p50_ms"] and runs[1]["p50_ms"]:
        ratio = runs[1]["p50_ms"] / runs[0]["p50_ms"]
        print(f"p50 {runs[1]['mode']} / {runs[0]['mode']}: {ratio:.2f}x (same server, same run)")


if __name__ == "__main__":
    main()
