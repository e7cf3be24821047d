"""A refusal is a capability answer whatever its status: llama-cpp-python's HTTP 500.

llama-cpp-python 0.3.36 answers ``response_format: json_schema`` with an HTTP 500
whose body is a pydantic validation error (``Input should be 'text' or
'json_object'``), and constrains output by grammar for ``{"type": "json_object",
"schema": ...}``. Treated as an outage, every judgement was ``unavailable``
(retried four times, then given up); read as what it says, the ladder steps down
to the rung that works. The real server is exercised in ``tests/e2e``; here its
replies are imitated (``llama_cpp_python`` in conftest) on the real scripted server.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from judge.capabilities import Capabilities, adjusted
from judge.endpoint import map_openai_error
from judge.errors import (
    ParameterUnsupported,
    RequestRejected,
    ServerError,
    StructuredOutputUnsupported,
)
from judge.servers import ServerInfo, identify


def _items(item, n):
    return [
        item(sample_id=f"s{i}", code=f"def is_even(n):\n    return n % 2 == {i % 2}\n")
        for i in range(n)
    ]


def test_the_probe_steps_past_the_500s_to_json_object_with_a_schema(server, make_judge, quirks):
    server.responder = quirks.llama_cpp_python
    judge = make_judge(capabilities=None)
    report = judge.probe()
    assert [(t.rung, t.outcome) for t in report.trials] == [
        ("json_schema", "rejected"),
        ("json_schema_nonstrict", "rejected"),
        ("json_object_schema", "validated"),
    ]
    assert len(server.requests) == 3  # a refusal is an answer: never retried
    assert report.capabilities.rung == "json_object_schema"
    assert "Input should be 'text' or 'json_object'" in report.trials[0].detail
    assert len(report.trials[0].detail) <= 300  # endpoint text is bounded
    assert (report.server, report.server_evidence.split()[0]) == ("llama-cpp-python", "an")
    asked = server.bodies()[-1]["response_format"]
    assert asked["type"] == "json_object" and asked["schema"]["type"] == "object"


def test_judgements_after_the_probe_are_scored_not_unavailable(server, make_judge, item, quirks):
    server.responder = quirks.llama_cpp_python
    judge = make_judge(capabilities=None)
    results = judge.judge_many(_items(item, 4))
    assert {(r.status, r.mode) for r in results} == {("scored", "json_object_schema")}
    assert len(server.requests) == 3 + 4


def test_a_pinned_top_rung_steps_down_per_request_without_retrying(
    server, make_judge, item, quirks
):
    server.responder = quirks.llama_cpp_python
    (result,) = make_judge().judge_many(_items(item, 1))  # pinned at json_schema
    assert (result.status, result.mode, result.attempts) == ("scored", "json_object_schema", 3)


def test_a_plain_500_is_still_an_outage_and_retried(server, make_judge, item):
    server.responder = lambda body: server.error(500, "internal error: CUDA out of memory")
    result = make_judge().judge_one(item())
    assert (result.status, result.reason_code, result.attempts) == (
        "unavailable",
        "server_error",
        3,
    )


# -- the mapping, unit by unit ---------------------------------------------------------------


def _mapped(status, body):
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)

    client = openai.OpenAI(
        base_url="http://mock.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    return map_openai_error(info.value)


def _pydantic(loc, msg):
    return f"1 validation error:\n  {{'type': 'literal_error', 'loc': {loc!r}, 'msg': {msg!r}}}"


@pytest.mark.parametrize(
    ("status", "body", "cls", "param"),
    [
        pytest.param(
            500,
            {
                "error": {
                    "message": _pydantic(
                        ("body", "response_format", "type"),
                        "Input should be 'text' or 'json_object'",
                    ),
                    "type": "internal_server_error",
                }
            },
            StructuredOutputUnsupported,
            "response_format",
            id="llama-cpp-python-500",
        ),
        pytest.param(
            422,
            {
                "detail": [
                    {
                        "type": "literal_error",
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                    }
                ]
            },
            StructuredOutputUnsupported,
            "response_format",
            id="fastapi-422",
        ),
        pytest.param(
            500,
            {
                "error": {
                    "message": _pydantic(
                        ("body", "temperature"), "Input should be less than or equal to 2"
                    )
                }
            },
            ParameterUnsupported,
            "temperature",
            id="500-names-temperature",
        ),
        pytest.param(
            400,
            {"error": {"message": "Unsupported parameter: 'max_tokens'", "param": "max_tokens"}},
            ParameterUnsupported,
            "max_tokens",
            id="openai-400-param",
        ),
        pytest.param(
            501,
            {"error": {"message": "response_format type json_schema is not supported"}},
            StructuredOutputUnsupported,
            "response_format",
            id="501-words",
        ),
        pytest.param(
            503, "response_format is not supported (upstream down)", ServerError, None, id="503"
        ),
        pytest.param(500, {"error": {"message": "boom"}}, ServerError, None, id="500-boom"),
        pytest.param(
            500, {"error": {"message": "invalid state"}}, ServerError, None, id="500-no-param"
        ),
        pytest.param(
            401, {"error": {"message": "Invalid API key"}}, RequestRejected, None, id="401"
        ),
    ],
)
def test_refusals_are_read_from_the_body_whatever_the_status(status, body, cls, param):
    error = _mapped(status, body)
    assert type(error) is cls
    assert error.param == param and error.status_code == status


def test_a_500_refusing_temperature_is_adjusted_like_a_400():
    error = _mapped(500, {"error": {"message": _pydantic(("body", "temperature"), "not allowed")}})
    change = adjusted(error, Capabilities(), token_cap=False)
    assert change is not None and change[0].temperature == "server_default"
    plain = _mapped(500, {"error": {"message": "temperature sensor overheated"}})
    assert adjusted(plain, Capabilities(), token_cap=False) is None


# -- naming the server -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "kind"),
    [
        (ServerInfo(("me",), {"server": "uvicorn"}), "llama-cpp-python"),
        (ServerInfo((), {}, ("HTTP 500: ... llama_cpp/server/app.py ...",)), "llama-cpp-python"),
        (ServerInfo(("llamacpp",), {}), "llama.cpp"),
        (ServerInfo((), {"server": "llama.cpp"}), "llama.cpp"),
        (ServerInfo(("vllm",), {"server": "uvicorn"}), "vLLM"),
        (ServerInfo(("sglang",), {}), "SGLang"),
        (ServerInfo(("library",), {}), "Ollama"),
        (ServerInfo(("organization_owner",), {}), "LM Studio"),
        (ServerInfo(("system",), {"openai-version": "2020-10-01"}), "OpenAI"),
        (ServerInfo(("system",), {}), None),
        (ServerInfo(("me",), {"server": "nginx"}), None),
        (ServerInfo(), None),
    ],
)
def test_the_server_is_named_only_when_it_tells(info, kind):
    found = identify(info)
    assert (found[0] if found else None) == kind


def test_what_the_server_says_is_bounded():
    info = ServerInfo.bounded(["x" * 500, "y"], {"Server": "s" * 500, "Set-Cookie": "secret"})
    assert info.owned_by == ("x" * 200, "y") and info.headers == {"server": "s" * 200}


def test_a_server_without_models_is_probed_all_the_same(server, make_judge, quirks):
    # The scripted server has no GET /models (501): the probe does not depend on it.
    server.responder = quirks.strict
    report = make_judge(capabilities=None).probe()
    assert report.validated and report.server is None and report.server_evidence == ""
