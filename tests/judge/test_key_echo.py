"""The configured API key never leaves the judge, whatever the endpoint echoes back.

Real proxies quote the key they were sent ("Incorrect API key provided: sk-..."),
in error bodies, in headers, even in the status line; a model can be made to
repeat it in its reply. The endpoint here (the real local server, real sockets,
the real openai client) echoes a canary key in every one of those places, and in
the masked and partial forms proxies print. The key, or any 8 characters of it
in a row (see ``judge.redact``), must then appear in no result row, no probe
report, no exception a caller sees (traceback and cause included), no log line
of any logger at any level, and no byte of the cache files.
"""

from __future__ import annotations

import io
import json
import logging
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from key_echo import Canary, EchoServer
from openai_server import Scripted, completion, default_schema, valid_reply

from judge import Judge, JudgeConfig, RequestRejected
from judge.capabilities import Capabilities

CANARY = Canary("sk-canary-Q7f3e9d1c4b2a6e8-KEYTAIL", slice(4, 21))
KEY, MASKED, PARTIAL = CANARY.key, CANARY.masked, CANARY.partial
"""The canary (the judge's configured key) and the masked and partial forms proxies print."""
leaks = CANARY.leaks


def assert_clean(where: str, text: str | bytes) -> None:
    found = leaks(text)
    assert not found, f"the key leaked into {where}: {found[:3]}"


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    srv = EchoServer(CANARY).start()
    yield srv
    srv.stop()


class Captured(logging.Handler):
    """Every record of every logger, formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.stream = io.StringIO()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(self.format(record) + "\n")

    def text(self) -> str:
        return self.stream.getvalue()


@pytest.fixture
def logs() -> Iterator[Captured]:
    """Every logger at DEBUG, the non-propagating ones included."""
    handler = Captured()
    manager = logging.root.manager
    loggers = [logging.getLogger()] + [
        v for v in list(manager.loggerDict.values()) if isinstance(v, logging.Logger)
    ]
    saved = [(lg, lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
        if lg is logging.getLogger() or not lg.propagate:
            lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg, level, disabled in saved:
            lg.setLevel(level)
            lg.disabled = disabled
            lg.removeHandler(handler)


def unauthorized() -> Scripted:
    """A 401 as OpenAI and proxies send it, quoting the key whole, masked and in part."""
    return Scripted(
        401,
        {
            "error": {
                "message": f"Incorrect API key provided: {KEY}. Also seen as {MASKED} "
                f"and {PARTIAL}. You can find your API key in your dashboard.",
                "type": "invalid_request_error",
                "param": KEY,
                "code": "invalid_api_key",
            }
        },
        {"WWW-Authenticate": f'Bearer realm="{KEY}"'},
    )


def server_error() -> Scripted:
    """A 500 whose plain-text body repeats the request's authorization."""
    return Scripted(500, f"upstream failed; request had Authorization: Bearer {KEY}")


def echoing_reply(body: dict[str, Any]) -> Scripted:
    """A 200 whose valid JSON reply quotes the key (rationale, issue, unmet), as do model
    and fingerprint."""
    reply = valid_reply(default_schema())
    reply["rationale"] = f"The code is fine. By the way, your key is {KEY}."
    reply["issues"] = [{"line": 1, "severity": "info", "message": f"Saw {PARTIAL} in a header."}]
    return Scripted(200, completion(json.dumps(reply), model=KEY, fingerprint=f"fp-{KEY}"))


def echoing_prose(body: dict[str, Any]) -> Scripted:
    """A 200 that breaks protocol with the key in its content and refusal (raw is kept)."""
    return Scripted(200, completion(f"Not JSON. Key: {KEY}", refusal=f"refused {MASKED}"))


@pytest.fixture
def make(echo: EchoServer, tmp_path: Path) -> Iterator[Callable[..., Judge]]:
    judges: list[Judge] = []

    def build(**overrides: Any) -> Judge:
        settings: dict[str, Any] = {
            "base_url": echo.base_url,
            "model": "judge-model",
            "api_key": KEY,
            "timeout_s": 5.0,
            "max_attempts": 2,
            "backoff_initial_s": 0.001,
            "backoff_max_s": 0.01,
            "capabilities": Capabilities(),
            "cache_path": tmp_path / "cache" / "judge.sqlite",
            **overrides,
        }
        judge = Judge(JudgeConfig(**settings))
        judges.append(judge)
        return judge

    yield build
    for judge in judges:
        judge.close()


def cache_bytes(tmp_path: Path) -> bytes:
    """Every byte of the cache files (database, WAL, shared memory)."""
    return b"".join(p.read_bytes() for p in sorted((tmp_path / "cache").glob("*")) if p.is_file())


ITEM_CODE = "def is_even(n):\n    return n % 2 == 0\n"


def judge_once(make: Callable[..., Judge], item: Callable[..., Any], **overrides: Any) -> str:
    judge = make(**overrides)
    try:
        result = judge.judge_one(item(ITEM_CODE))
        row = json.dumps(result.to_row())
        again = json.dumps(judge.judge_one(item(ITEM_CODE)).to_row())  # from the cache, if kept
        record = json.dumps(judge.probe_report.to_json() if judge.probe_report else None)
    finally:
        judge.close()
    return "\n".join([row, again, record])


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(lambda srv: srv.push(unauthorized()), id="401-body-and-header"),
        pytest.param(lambda srv: setattr(srv, "responder", lambda b: server_error()), id="500"),
        pytest.param(lambda srv: setattr(srv, "responder", echoing_reply), id="200-reply"),
        pytest.param(lambda srv: setattr(srv, "responder", echoing_prose), id="200-prose"),
    ],
)
def test_the_key_reaches_no_row_log_or_cache(script, echo, make, item, logs, tmp_path):
    script(echo)
    out = judge_once(make, item)
    assert echo.requests and all(
        seen.headers["authorization"] == f"Bearer {KEY}" for seen in echo.requests
    )
    assert_clean("the result row", out)
    assert_clean("a log line", logs.text())
    assert_clean("the cache file", cache_bytes(tmp_path))


def test_what_the_reply_said_is_kept_with_the_key_cut_out(echo, make, item):
    echo.responder = echoing_reply
    judge = make(cache_path=None)
    row = judge.judge_one(item(ITEM_CODE)).to_row()
    assert row["status"] == "scored"
    assert row["rationale"].startswith("The code is fine. By the way, your key is ")
    assert "[REDACTED]" in row["rationale"] and "[REDACTED]" in row["model"]


@pytest.mark.parametrize(
    "scripted",
    [pytest.param(unauthorized, id="401"), pytest.param(server_error, id="500")],
)
def test_an_upstream_error_says_what_happened_without_the_key(scripted, echo, make, item):
    echo.responder = lambda body: scripted()
    judge = make(cache_path=None)
    row = judge.judge_one(item(ITEM_CODE)).to_row()
    assert row["status"] == "unavailable"
    assert str(scripted().status) in row["reason"]
    assert "[REDACTED]" in row["reason"]
    assert_clean("the reason", row["reason"])


def test_a_probe_refused_with_the_key_raises_without_it(echo, make, logs, tmp_path):
    echo.responder = lambda body: unauthorized()
    judge = make(capabilities=None)
    with pytest.raises(RequestRejected) as caught:
        judge.probe()
    exc = caught.value
    assert exc.status_code == 401
    shown = "".join(traceback.format_exception(exc))
    assert "401" in shown
    assert_clean("the exception and its cause", shown)
    assert_clean("the exception's parameter", str(exc.param))
    cause = exc.__cause__
    assert cause is not None
    assert_clean("the cause's body", json.dumps(getattr(cause, "body", None), default=str))
    assert_clean("the cause's message", str(getattr(cause, "message", "")))
    assert_clean("a log line", logs.text())


def test_a_probe_that_walks_down_the_ladder_records_no_key(echo, make, logs, tmp_path):
    def refuse_formats(body: dict[str, Any]) -> Scripted:
        if "response_format" in body:
            return Scripted(
                400, {"error": {"message": f"response_format is not allowed for key {KEY}"}}
            )
        return echoing_reply(body)

    echo.responder = refuse_formats
    judge = make(capabilities=None)
    report = judge.probe()
    assert report.capabilities.rung == "prompt_only"
    assert_clean("the probe report", json.dumps(report.to_json()))
    assert_clean("the fingerprints seen", json.dumps(judge.fingerprints_seen()))
    judge.close()
    assert_clean("a log line", logs.text())
    assert_clean("the cache file", cache_bytes(tmp_path))


def test_a_key_shorter_than_eight_characters_is_cut_out_whole(echo, make, item):
    short = "k3y-xyz"
    echo.responder = lambda body: Scripted(401, {"error": {"message": f"bad key {short}!"}})
    judge = make(api_key=short, cache_path=None)
    row = judge.judge_one(item(ITEM_CODE)).to_row()
    assert short not in row["reason"] and "bad key [REDACTED]!" in row["reason"]


# -- gradebox grade: results.jsonl, the run directory, stderr ---------------------------------

JUDGE_VARS = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.mark.parametrize("reply", ["401", "500", "200"])
def test_gradebox_grade_writes_no_key_anywhere(reply, echo, tmp_path, logs):
    from gradebox.cli import cli

    echo.responder = {
        "401": lambda body: unauthorized(),
        "500": lambda body: server_error(),
        "200": echoing_reply,
    }[reply]
    d = tmp_path
    (d / "hidden.jsonl").write_text(json.dumps({"fn": "inc", "args": [1], "expect": 2}) + "\n")
    (d / "public.jsonl").write_text(
        json.dumps({"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int)"})
        + "\n"
    )
    sample = {"id": "s1", "fn": "inc", "code": "def inc(x: int) -> int:\n    return x + 1\n"}
    (d / "samples.jsonl").write_text(json.dumps(sample) + "\n")
    env: dict[str, str | None] = dict.fromkeys(JUDGE_VARS)
    env |= {
        "XDG_CACHE_HOME": str(d / "xdg"),
        "GRADEBOX_JUDGE_BASE_URL": echo.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": KEY,
    }
    args = ["grade", "--hidden", str(d / "hidden.jsonl"), "--samples", str(d / "samples.jsonl")]
    args += ["--public", str(d / "public.jsonl"), "--no-static", "--out", str(d / "results.jsonl")]
    args += ["--run-dir", str(d / "run")]
    res = CliRunner().invoke(cli, args, env=env)
    assert res.exit_code == 0, res.output
    row = json.loads((d / "results.jsonl").read_text().splitlines()[0])
    assert row["judge"]["status"] == ("scored" if reply == "200" else "unavailable")
    assert_clean("results.jsonl", (d / "results.jsonl").read_text())
    assert_clean("the CLI's output", res.output + res.stderr)
    for path in [*(d / "run").rglob("*"), *(d / "xdg").rglob("*")]:
        if path.is_file():
            assert_clean(str(path.relative_to(d)), path.read_bytes())
    assert_clean("a log line", logs.text())
