"""Retries, Retry-After, the retry budget, timeouts and the JSON-mode fallback, over real sockets.

The error mapping itself is unit-tested through ``httpx.MockTransport`` at the
bottom: the openai client accepts an ``httpx.Client`` as its HTTP client.
"""

from __future__ import annotations

import itertools
import socket
import time
from datetime import UTC, datetime, timedelta

import httpx
import openai
import pytest

from judge import (
    ConnectionFailed,
    EndpointError,
    EndpointTimeout,
    Judge,
    RateLimited,
    RequestRejected,
    ServerError,
    StructuredOutputUnsupported,
    map_openai_error,
)
from judge.capabilities import Capabilities
from judge.endpoint import parse_retry_after


def arrival_gaps(server) -> list[float]:
    times = [seen.at for seen in server.requests]
    return [b - a for a, b in itertools.pairwise(times)]


# -- retries -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "wait"),
    [({"Retry-After": "0.2"}, 0.2), ({"retry-after-ms": "250"}, 0.25)],
    ids=["retry-after", "retry-after-ms"],
)
def test_429_honours_retry_after(server, make_judge, item, headers, wait):
    server.push(server.error(429, "slow down", headers=headers))
    # Backoff without a hint would be ~1 ms: only the header explains a longer wait.
    result = make_judge(backoff_initial_s=0.001, backoff_max_s=0.001).judge_one(item())
    assert result.status == "scored"
    assert result.attempts == 2
    assert len(server.requests) == 2
    (gap,) = arrival_gaps(server)
    assert wait <= gap < wait * 1.1 + 0.3


def test_500_then_success(server, make_judge, item):
    server.push(server.error(500, "boom"), server.error(503, "overloaded"))
    result = make_judge().judge_one(item())
    assert result.status == "scored"
    assert result.attempts == 3
    assert len(server.requests) == 3


def test_exhausted_budget_is_unavailable_not_a_verdict(server, make_judge, item):
    server.responder = lambda body: server.error(502, "bad gateway")
    result = make_judge(max_attempts=4).judge_one(item())
    row = result.to_row()
    assert row["status"] == "unavailable"
    assert row["reason_code"] == "server_error"
    assert "HTTP 502" in row["reason"] and "after 4 attempt(s)" in row["reason"]
    assert row["attempts"] == 4 and len(server.requests) == 4
    assert (row["verdict"], row["scores"], row["weighted"], row["raw"]) == (None, {}, None, None)
    assert not result.mismatch and not result.unscored


def test_rate_limited_to_exhaustion(server, make_judge, item):
    server.responder = lambda body: server.error(429, "quota", headers={"Retry-After": "0.01"})
    result = make_judge(max_attempts=2).judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == (
        "unavailable",
        "rate_limited",
        2,
    )


def test_retry_after_beyond_the_limit_stops_at_once(server, make_judge, item):
    server.responder = lambda body: server.error(
        429, "come back later", headers={"Retry-After": "3600"}
    )
    started = time.monotonic()
    result = make_judge(max_attempts=5, retry_after_max_s=30.0).judge_one(item())
    assert (result.status, result.attempts) == ("unavailable", 1)
    # The alternative told apart is a wait of the capped 30 s before giving up; one
    # refused request takes well under a second even on a busy machine.
    assert time.monotonic() - started < 30.0


def test_backoff_grows_without_retry_after(server, make_judge, item):
    server.responder = lambda body: server.error(500, "boom")
    make_judge(max_attempts=3, backoff_initial_s=0.05, backoff_max_s=1.0).judge_one(item())
    assert len(server.requests) == 3  # full jitter: each wait is random in [0, 0.05 * 2**n]
    assert all(gap < 1.5 for gap in arrival_gaps(server))


def test_slow_reply_times_out_and_is_retried(server, make_judge, item):
    slow = server.ok_json(server.valid())
    slow.delay = 8.0
    server.push(slow)
    started = time.monotonic()
    result = make_judge(timeout_s=1.0).judge_one(item())
    assert result.status == "scored"
    # the slow first reply was given up on: a busy machine may make a later attempt time out
    # too, but never makes the judge wait the 8 s the first one would have taken
    assert result.attempts >= 2
    assert time.monotonic() - started < 7.0


def test_every_attempt_timing_out_is_unavailable(server, make_judge, item):
    def slow(body):
        reply = server.ok_json(server.valid(server.schema_of(body)))
        reply.delay = 0.5
        return reply

    server.responder = slow
    result = make_judge(timeout_s=0.1, max_attempts=2).judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == ("unavailable", "timeout", 2)


def test_connection_refused_is_unavailable(make_config, item):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = make_config(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2)
    with Judge(config) as judge:
        result = judge.judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == ("unavailable", "connection", 2)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(server, make_judge, item, status):
    server.responder = lambda body: server.error(status, "no such model")
    result = make_judge().judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == ("unavailable", "rejected", 1)
    assert len(server.requests) == 1


# -- structured output fallback ----------------------------------------------------------


def test_a_refused_format_goes_one_rung_down_for_that_request_only(server, make_judge, item):
    # A 400 naming response_format can be provoked by one candidate (a server that echoes
    # the prompt in its error): it costs that request a rung, never anyone else's.
    server.push(
        server.error(
            400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported."
        )
    )
    judge = make_judge()
    first = judge.judge_one(item(code="def is_even(n):\n    return not n % 2\n"))
    second = judge.judge_one(item())

    formats = [b["response_format"] for b in server.bodies()]
    assert formats[0]["json_schema"]["strict"] is True
    assert formats[1]["type"] == "json_schema" and "strict" not in formats[1]["json_schema"]
    assert formats[2]["json_schema"]["strict"] is True  # the next request: the probe's rung
    # The schema travels in the system prompt on every rung, and the text is the same.
    system, again = (seen.body["messages"][0]["content"] for seen in server.requests[:2])
    assert system == again
    assert "must validate against this JSON Schema" in system and '"scores"' in system
    assert (first.status, first.mode, first.attempts) == ("scored", "json_schema_nonstrict", 2)
    assert (second.status, second.mode, second.attempts) == ("scored", "json_schema", 1)


def test_a_lower_rungs_reply_is_validated_all_the_same(server, make_judge, item):
    server.push(server.error(400, "response_format json_schema unsupported"))
    bad = server.valid()
    bad["scores"]["INT001"] = 7
    server.push(server.ok_json(bad))
    result = make_judge().judge_one(item())
    assert (result.status, result.reason_code, result.mode) == (
        "needs_review",
        "rubric_violation",
        "json_schema_nonstrict",
    )


def test_every_rung_refused_is_unavailable(server, make_judge, item):
    server.responder = lambda body: server.error(400, "response_format is not supported at all")
    result = make_judge().judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == ("unavailable", "rejected", 5)
    formats = [b.get("response_format", {}).get("type") for b in server.bodies()]
    assert formats == ["json_schema", "json_schema", "json_object", "json_object", None]
    assert "schema" in server.bodies()[2]["response_format"]  # llama-cpp-python's form


# -- error mapping (unit, through httpx.MockTransport) ------------------------------------


def client_answering(status: int, body: dict | str = "", headers: dict | None = None):
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, dict):
            return httpx.Response(status, json=body, headers=headers)
        return httpx.Response(status, text=body, headers=headers)

    return openai.OpenAI(
        base_url="http://mock.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def mapped(client: openai.OpenAI) -> EndpointError:
    with pytest.raises(openai.OpenAIError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    return map_openai_error(info.value)


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (429, {"error": {"message": "rate"}}, RateLimited),
        (500, {"error": {"message": "x"}}, ServerError),
        (503, "Service Unavailable", ServerError),
        (408, {"error": {"message": "request timeout"}}, EndpointTimeout),
        (
            400,
            {"error": {"message": "bad", "param": "response_format"}},
            StructuredOutputUnsupported,
        ),
        (400, {"error": {"message": "messages too long"}}, RequestRejected),
        (401, {"error": {"message": "bad key"}}, RequestRejected),
        (404, {"error": {"message": "no model"}}, RequestRejected),
    ],
)
def test_status_mapping(status, body, cls):
    error = mapped(client_answering(status, body))
    assert type(error) is cls
    assert error.status_code == status


def test_mapping_reads_retry_after_on_5xx_too():
    error = mapped(client_answering(503, {"error": {"message": "x"}}, {"Retry-After": "7"}))
    assert isinstance(error, ServerError) and error.retry_after == 7.0


def test_transport_errors_map_to_connection_and_timeout():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def stall(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("stalled", request=request)

    for handler, cls in ((refuse, ConnectionFailed), (stall, EndpointTimeout)):
        client = openai.OpenAI(
            base_url="http://mock.invalid/v1",
            api_key="k",
            max_retries=0,
            http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        )
        assert type(mapped(client)) is cls


def test_judge_raises_mapped_errors_from_the_original(server, make_config, item):
    # The chain is kept: the endpoint raises ServerError from openai's InternalServerError.
    from judge.endpoint import Endpoint

    server.responder = lambda body: server.error(500, "boom")
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    endpoint = Endpoint(client, make_config(max_attempts=1))
    with pytest.raises(ServerError) as info:
        endpoint.complete(lambda mode: [{"role": "user", "content": "x"}], {}, Capabilities())
    assert isinstance(info.value.__cause__, openai.InternalServerError)
    assert info.value.attempts == 1


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(httpx.Headers(headers)) == expected


def test_parse_retry_after_http_date():
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after(httpx.Headers({"retry-after": later}), now=lambda: now) == 30.0
