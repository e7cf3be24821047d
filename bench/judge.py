"""Judge throughput: 1,000 candidates against a local OpenAI-compatible server with 50 ms replies.

Prints figures and, with ``--check``, exits 1 when a warm run (at either
concurrency) is not at least 100x faster than the cold run at concurrency 32 --
the fastest cold run, so the hardest bar. Run from the repository root::

    .venv/bin/python bench/judge.py                 # 1000 candidates, concurrency 1 and 32
    .venv/bin/python bench/judge.py --n 200 --json  # quicker, machine-readable

Runs, each with a fresh Judge (a new process would behave the same):

* ``cold c=1``: no cache entries, one request at a time (~n x 50 ms);
* ``warm c=1``: the cache filled by ``cold c=1``; no request reaches the server;
* ``cold c=32``: no cache entries (another file), 32 requests in flight;
* ``warm c=32``: the cache filled by ``cold c=32``; no request reaches the server.

A warm run serves stored, already-checked results looked up by input key in a
few batched queries: no rendering, no re-validation.

The server is stdlib ``http.server`` on 127.0.0.1, in its own process, that sleeps
``--latency`` before each valid reply, so the figures measure the judge, not a model.

With ``--real BASE_URL --model NAME`` it measures a real server instead (e.g.
llama-cpp-python, ``python -m llama_cpp.server``): the probe once, then seconds per
judged item (no cache), beside a peer figure from the same run -- the same prompt
and response format sent with the bare openai client -- so the judge's own overhead
shows as the difference::

    .venv/bin/python bench/judge.py --real http://127.0.0.1:8765/v1 --model smol \
        --rubric tests/e2e/rubric/brief.toml --max-tokens 64 --n 4
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge import JudgeConfig, JudgeItem

# This file is named like the package it measures: take its folder off sys.path so
# that `import judge` (done lazily, below) finds the package, not this script.
BENCH_DIR = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]


@dataclass
class Run:
    name: str
    concurrency: int
    seconds: float
    requests: int
    statuses: dict[str, int]
    cache_hits: int


def valid_reply(schema: dict[str, Any]) -> str:
    props = schema["properties"]
    reply: dict[str, Any] = {"scores": dict.fromkeys(props["scores"]["required"], 4)}
    if "verdict" in props:
        reply |= {"verdict": "match", "unmet_requirements": []}
    reply |= {"issues": [], "rationale": "Meets the specification."}
    return json.dumps(reply)


class Server:
    """The scripted endpoint; runs in its own process so it does not share the judge's GIL."""

    def __init__(self, latency: float, counter: Any) -> None:
        self.latency = latency
        self.counter = counter
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 128

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.counter.get_lock():
                    server.counter.value += 1
                time.sleep(server.latency)
                data = completion(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def completion(body: dict[str, Any]) -> str:
    content = valid_reply(body["response_format"]["json_schema"]["schema"])
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "system_fingerprint": "fp_bench",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 80, "total_tokens": 980},
        }
    )


def serve(latency: float, counter: Any, ports: Any) -> None:
    server = Server(latency, counter)
    ports.put(server.httpd.server_address[1])
    server.httpd.serve_forever()


@dataclass
class Endpoint:
    base_url: str
    counter: Any

    @property
    def requests(self) -> int:
        return int(self.counter.value)


@contextmanager
def serving(latency: float) -> Iterator[Endpoint]:
    ctx = multiprocessing.get_context("spawn")
    counter, ports = ctx.Value("i", 0), ctx.Queue()
    process = ctx.Process(target=serve, args=(latency, counter, ports), daemon=True)
    process.start()
    try:
        port = ports.get(timeout=30)
        yield Endpoint(f"http://127.0.0.1:{port}/v1", counter)
    finally:
        process.terminate()
        process.join()


def candidates(n: int) -> list[JudgeItem]:
    from judge import JudgeItem

    return [
        JudgeItem(
            sample_id=f"s{i}",
            fn="clamp",
            spec="Return x limited to the closed range [lo, hi]. Raise ValueError if lo > hi.",
            signature="def clamp(x: float, lo: float, hi: float) -> float",
            code=(
                "def clamp(x: float, lo: float, hi: float) -> float:\n"
                "    if lo > hi:\n"
                f"        raise ValueError('lo > hi')  # variant {i}\n"
                "    return max(lo, min(x, hi))\n"
            ),
        )
        for i in range(n)
    ]


def run(name: str, server: Endpoint, config: JudgeConfig, items: list[JudgeItem]) -> Run:
    from judge import Judge

    before = server.requests
    with Judge(config) as judge:
        judge.rubric("default")  # rubric loading is not what is measured
        started = time.perf_counter()
        results = judge.judge_many(items)
        seconds = time.perf_counter() - started
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    hits = sum(r.cache_hit for r in results)
    return Run(name, config.concurrency, seconds, server.requests - before, statuses, hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="candidates (default 1000)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per reply")
    parser.add_argument("--concurrency", type=int, default=32, help="the parallel run's limit")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a warm run is not >= 100x cold c=32"
    )
    parser.add_argument("--real", metavar="BASE_URL", help="measure this server instead")
    parser.add_argument("--model", default="model", help="the real server's model")
    parser.add_argument("--rubric", default="default", help="rubric name or path (--real)")
    parser.add_argument("--max-tokens", type=int, default=256, help="token cap (--real)")
    args = parser.parse_args(argv)
    if args.real:
        return real(args)

    items = candidates(args.n)
    runs: list[Run] = []
    with serving(args.latency) as server, tempfile.TemporaryDirectory() as tmp:

        def config(concurrency: int, cache: str) -> JudgeConfig:
            from judge import JudgeConfig

            return JudgeConfig(
                base_url=server.base_url,
                model="bench-model",
                concurrency=concurrency,
                cache_path=Path(tmp) / cache,
            )

        par = args.concurrency
        runs.append(run("cold c=1", server, config(1, "serial.sqlite"), items))
        runs.append(run("warm c=1", server, config(1, "serial.sqlite"), items))
        runs.append(run(f"cold c={par}", server, config(par, "par.sqlite"), items))
        runs.append(run(f"warm c={par}", server, config(par, "par.sqlite"), items))

    serial, warm_serial, parallel, warm = runs
    worst_warm = max(warm_serial.seconds, warm.seconds)
    figures = {
        "n": args.n,
        "latency_s": args.latency,
        "runs": [r.__dict__ for r in runs],
        "speedup_parallel": serial.seconds / parallel.seconds,
        "warm_vs_cold_serial": serial.seconds / warm_serial.seconds,
        "warm_vs_cold_parallel": parallel.seconds / warm.seconds,
        "worst_warm_vs_cold_parallel": parallel.seconds / worst_warm,
        "per_candidate_warm_ms": warm.seconds / args.n * 1000,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for r in runs:
            print(
                f"{r.name:>10}: {r.seconds:8.3f} s  {args.n / r.seconds:9.1f} cand/s  "
                f"requests={r.requests:<5} cache_hits={r.cache_hits:<5} {r.statuses}"
            )
        print(f"concurrency {par} vs 1: {figures['speedup_parallel']:.1f}x")
        print(f"warm c=1 vs cold c=1: {figures['warm_vs_cold_serial']:.0f}x")
        print(f"warm c={par} vs cold c={par}: {figures['warm_vs_cold_parallel']:.1f}x")
        print(
            f"slowest warm vs cold c={par}: {figures['worst_warm_vs_cold_parallel']:.1f}x "
            "(--check needs >= 100x)"
        )
        print(f"warm cost per candidate: {figures['per_candidate_warm_ms']:.3f} ms")
    if args.check and figures["worst_warm_vs_cold_parallel"] < 100:
        print(
            f"FAIL: a warm run is less than 100x faster than the cold c={par} run",
            file=sys.stderr,
        )
        return 1
    return 0


def real(args: argparse.Namespace) -> int:
    """Seconds per judged item on a real server, and the bare client's seconds per call."""
    import openai

    from judge import Judge, JudgeConfig, reply_schema
    from judge.prompt import render

    items = [replace_rubric(i, args.rubric) for i in candidates(args.n)]
    config = JudgeConfig(
        base_url=args.real,
        model=args.model,
        timeout_s=600,
        max_output_tokens=args.max_tokens,
        probe_rubric=args.rubric,
        no_cache=True,
        concurrency=1,
    )
    with Judge(config) as judge:
        started = time.perf_counter()
        report = judge.probe()
        probe_s = time.perf_counter() - started
        rubric = judge.rubric(args.rubric)
        started = time.perf_counter()
        results = judge.judge_many(items)
        judged_s = (time.perf_counter() - started) / len(items)
    schema = reply_schema(rubric)
    rung = report.capabilities.rung
    client = openai.OpenAI(base_url=args.real, api_key="no-key", max_retries=0, timeout=600)
    started = time.perf_counter()
    for item in items:
        client.chat.completions.create(
            model=args.model,
            messages=render(item, rubric, schema).messages(rung),
            temperature=0,
            seed=config.seed,
            max_tokens=args.max_tokens,
            **_format(rung, schema),
        )
    raw_s = (time.perf_counter() - started) / len(items)
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    figures = {
        "server": report.server,
        "rung": rung,
        "n": len(items),
        "probe_s": round(probe_s, 2),
        "judge_s_per_item": round(judged_s, 2),
        "openai_client_s_per_call": round(raw_s, 2),
        "statuses": statuses,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"server {report.server or 'unknown'}, rung {rung}, probe {probe_s:.1f} s")
        print(f"judge: {judged_s:.2f} s per judged item ({len(items)} items, {statuses})")
        print(f"bare openai client, same prompt and format: {raw_s:.2f} s per call")
    return 0


def replace_rubric(item: JudgeItem, rubric: str) -> JudgeItem:
    import dataclasses

    return dataclasses.replace(item, rubric_name=rubric)


def _format(rung: str, schema: dict[str, Any]) -> dict[str, Any]:
    if rung == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if rung == "json_object":
        return {"response_format": {"type": "json_object"}}
    if rung.startswith("json_schema"):
        spec = {"name": "judgement", "schema": schema, "strict": rung == "json_schema"}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    return {}


if __name__ == "__main__":
    raise SystemExit(main())
