"""The capability ladder against local servers that behave like the servers people run.

Each server is the real ``ScriptedServer`` (real sockets, the real openai client)
with a responder imitating one endpoint family's documented quirk (see
``QUIRKS_DOC`` in conftest). Probing is not pinned here: ``capabilities=None``.
"""

from __future__ import annotations

import json
import time

import pytest

from judge import Judge
from judge.capabilities import Capabilities, ProbeReport, adjusted
from judge.config import parse_extra_body
from judge.errors import JudgeConfigError, RequestRejected


@pytest.fixture
def probing(make_judge):
    def make(**overrides):
        return make_judge(capabilities=None, **overrides)

    return make


def _items(item, n, prefix="s"):
    return [
        item(sample_id=f"{prefix}{i}", code=f"def is_even(n):\n    return n % 2 == {i % 2}\n")
        for i in range(n)
    ]


# -- one server per endpoint family ------------------------------------------------------------


def test_a_strict_schema_server_keeps_the_top_rung_in_one_request(server, probing, quirks):
    server.responder = quirks.strict
    report = probing().probe()
    assert report.capabilities == Capabilities("json_schema", "zero", "max_tokens")
    assert [t.outcome for t in report.trials] == ["validated"]
    (probe,) = server.bodies()
    assert probe["response_format"]["json_schema"]["strict"] is True
    assert probe["temperature"] == 0
    # the schema is stated in the prompt too, not only in the response format
    assert "must validate against this JSON Schema" in probe["messages"][0]["content"]
    assert "def add(a: int, b: int)" in probe["messages"][1]["content"]  # the fixed item


def test_llama_cpp_failing_open_is_caught_by_validation_not_by_status(
    server, probing, item, quirks
):
    server.responder = quirks.llama_cpp
    judge = probing()
    report = judge.probe()
    # 200 with prose twice: not a rung that works, whatever the status said.
    assert [(t.rung, t.outcome) for t in report.trials] == [
        ("json_schema", "invalid"),
        ("json_schema_nonstrict", "invalid"),
        ("json_object_schema", "invalid"),
        ("json_object", "validated"),
    ]
    assert report.trials[0].detail.startswith("parse_failure")
    assert report.capabilities.rung == "json_object"
    results = judge.judge_many(_items(item, 4))
    assert {(r.status, r.mode) for r in results} == {("scored", "json_object")}
    assert report.system_fingerprints == ("b4000-llama",)


def test_a_prose_server_gives_needs_review_never_unavailable(server, probing, item, quirks):
    server.responder = quirks.prose
    judge = probing()
    report = judge.probe()
    assert not report.validated
    assert [t.outcome for t in report.trials] == ["invalid"] * 5
    # none validated: keep the first rung that answered (a better rung costs nothing)
    assert report.capabilities.rung == "json_schema"
    results = judge.judge_many(_items(item, 3))
    assert {(r.status, r.reason_code) for r in results} == {("needs_review", "parse_failure")}
    assert all(r.raw == quirks.PROSE for r in results)


def test_lm_studio_refusing_json_object_never_makes_rows_unavailable(server, probing, item, quirks):
    server.responder = quirks.lm_studio
    judge = probing()
    assert judge.probe().capabilities.rung == "json_schema"
    # A strict request refused for this one item goes down a rung for it alone; LM Studio
    # refuses json_object, and the rung below (no format) answers.
    server.push(server.error(400, "response_format json_schema: grammar too complex"))
    first, second = (judge.judge_one(i) for i in _items(item, 2))
    assert (first.status, first.mode) == ("scored", "json_schema_nonstrict")
    assert (second.status, second.mode) == ("scored", "json_schema")


def test_lm_studio_refusal_of_json_object_is_a_rejected_rung(server, probing, quirks):
    # The strict rung is made to fail: the probe walks past LM Studio's json_object refusal.
    calls = {"n": 0}

    def first_two_prose(body):
        calls["n"] += 1
        if quirks.rung(body).startswith("json_schema"):
            return server.ok(quirks.PROSE)
        return quirks.lm_studio(body)

    server.responder = first_two_prose
    report = probing().probe()
    assert [(t.rung, t.outcome) for t in report.trials] == [
        ("json_schema", "invalid"),
        ("json_schema_nonstrict", "invalid"),
        ("json_object_schema", "rejected"),
        ("json_object", "rejected"),
        ("prompt_only", "validated"),
    ]
    assert "must be 'json_schema' or 'text'" in report.trials[3].detail
    assert report.capabilities.rung == "prompt_only"


def test_a_reasoning_model_runs_at_its_default_temperature_with_repeats(
    server, probing, item, quirks
):
    server.responder = quirks.reasoning
    judge = probing(max_output_tokens=2048)
    report = judge.probe()
    assert report.capabilities == Capabilities(
        "json_schema", "server_default", "max_completion_tokens"
    )
    assert not report.capabilities.deterministic
    assert any("temperature 0 refused" in note for note in report.adjustments)
    assert any("max_tokens refused" in note for note in report.adjustments)
    assert judge.repeat == 3  # turned on because the run is not deterministic
    before = len(server.requests)
    results = judge.judge_many(_items(item, 4))
    asked = server.bodies()[before:]
    assert len(asked) == 12 and all("temperature" not in b for b in asked)
    assert all(b["max_completion_tokens"] == 2048 and "max_tokens" not in b for b in asked)
    assert {r.status for r in results} == {"scored"}
    assert all(r.repeat is not None and r.repeat.n == 3 for r in results)


def test_the_user_can_turn_repeats_off_on_a_non_deterministic_judge(server, probing, item, quirks):
    server.responder = quirks.reasoning
    judge = probing(repeat=1)
    assert judge.repeat == 1
    (result,) = judge.judge_many(_items(item, 1))
    assert result.status == "scored" and result.repeat is None


# -- caching the probe -------------------------------------------------------------------------


def test_the_probe_is_cached_per_endpoint_model_and_options(server, probing, quirks, tmp_path):
    server.responder = quirks.llama_cpp
    cache = tmp_path / "j.sqlite"
    first = probing(cache_path=cache).probe()
    asked = len(server.requests)
    again = probing(cache_path=cache).probe()
    assert len(server.requests) == asked and again.cached
    assert again.capabilities == first.capabilities
    # another model, or other request options, is another endpoint
    probing(cache_path=cache, model="other").probe()
    probing(cache_path=cache, extra_body={"top_k": 1}).probe()
    assert len(server.requests) == 3 * asked
    # a stale entry is probed again
    probing(cache_path=cache, probe_ttl_s=0.0).probe()
    assert len(server.requests) == 4 * asked


def test_a_damaged_cached_probe_is_probed_again(server, probing, quirks, tmp_path):
    import sqlite3

    server.responder = quirks.strict
    cache = tmp_path / "j.sqlite"
    probing(cache_path=cache).probe()
    with sqlite3.connect(cache) as db:
        db.execute('UPDATE probes SET report = \'{"capabilities": {"rung": "telepathy"}}\'')
    report = probing(cache_path=cache).probe()
    assert not report.cached and len(server.requests) == 2


def test_an_unreachable_endpoint_is_unavailable_rows_not_a_crash(probing, item):
    judge = probing(base_url="http://127.0.0.1:9/v1", max_attempts=1)
    (result,) = judge.judge_many(_items(item, 1))
    assert (result.status, result.reason_code) == ("unavailable", "connection")
    assert result.reason.startswith("probing the endpoint failed")


def test_an_auth_failure_stops_the_probe_at_once(server, probing, item):
    server.responder = lambda body: server.error(401, "invalid api key")
    judge = probing()
    (result,) = judge.judge_many(_items(item, 1))
    assert (result.status, result.reason_code) == ("unavailable", "rejected")
    assert len(server.requests) == 1


def test_probe_report_round_trips():
    report = ProbeReport(
        "http://x/v1", "m", Capabilities("json_object", "server_default"), (), ("a",), ("fp",), 1.5
    )
    assert ProbeReport.from_json(json.loads(json.dumps(report.to_json()))) == report


# -- hostile candidates and endpoints ------------------------------------------------------------


def test_a_candidate_provoking_a_format_or_temperature_error_changes_nothing_for_others(
    server, probing, item, quirks
):
    """A server that echoes the prompt into its 400 (context length, say) lets a candidate
    choose the error's words. Only the probe's fixed item decides rungs and temperature."""
    evil = "def is_even(n):\n    # 'temperature' response_format json_schema\n    return 1\n"

    def echo(body):
        if "json_schema" in body["messages"][1]["content"]:
            return server.error(400, f"prompt too long: {body['messages'][1]['content'][:300]}")
        return quirks.strict(body)

    server.responder = echo
    judge = probing()
    judge.probe()
    bad = judge.judge_one(item(sample_id="evil", code=evil))
    good = judge.judge_many(_items(item, 3))
    assert bad.status == "unavailable"
    assert judge.capabilities() == Capabilities()  # rung and temperature untouched
    last = server.bodies()[-3:]
    assert all(b["temperature"] == 0 for b in last)
    assert all(b["response_format"]["json_schema"]["strict"] for b in last)
    assert {r.status for r in good} == {"scored"}


def test_temperature_and_token_refusals_are_read_from_the_named_parameter():
    caps = Capabilities()
    by_param = RequestRejected("HTTP 400: no", status_code=400, param="temperature")
    assert adjusted(by_param, caps, token_cap=False)[0].temperature == "server_default"
    # another parameter named: not ours to adapt, even if the message mentions temperature
    other = RequestRejected("HTTP 400: 'temperature' bad", status_code=400, param="top_p")
    assert adjusted(other, caps, token_cap=True) is None
    words = RequestRejected(
        "HTTP 400: 'max_tokens' is not supported, use 'max_completion_tokens'", status_code=400
    )
    assert adjusted(words, caps, token_cap=True)[0].token_param == "max_completion_tokens"
    assert adjusted(words, caps, token_cap=False) is None  # no cap sent: nothing to rename
    not_400 = RequestRejected("HTTP 422: 'temperature'", status_code=422)
    assert adjusted(not_400, caps, token_cap=True) is None


# -- extra body ------------------------------------------------------------------------------------


def test_extra_body_goes_into_every_request_and_the_cache_key(server, make_judge, item, tmp_path):
    extra = {"provider": {"require_parameters": True}}
    cache = tmp_path / "j.sqlite"
    with_extra = make_judge(extra_body=extra, cache_path=cache).judge_one(item())
    without = make_judge(cache_path=cache).judge_one(item())
    assert server.bodies()[0]["provider"] == {"require_parameters": True}
    assert "provider" not in server.bodies()[1]
    assert with_extra.key != without.key and not without.cache_hit


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"temperature": 1}', "must not set ['temperature']"),
        ('{"messages": []}', "must not set ['messages']"),
        ("[1]", "must be a JSON object"),
        ("{nope", "not JSON"),
        ('{"x": NaN}', "not JSON"),
    ],
)
def test_extra_body_that_overrides_the_protocol_is_refused(text, problem):
    with pytest.raises(JudgeConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_extra_body(text)


def test_probe_latency_is_one_round_trip_on_a_good_server(server, probing, quirks):
    server.responder = quirks.strict
    started = time.monotonic()
    probing().probe()
    assert time.monotonic() - started < 2.0 and len(server.requests) == 1


def test_a_pinned_judge_never_probes(server, make_judge, item):
    judge: Judge = make_judge()
    judge.judge_one(item())
    assert len(server.requests) == 1
    assert judge.probe_report is not None and judge.probe_report.trials == ()


# -- gradebox judge probe ------------------------------------------------------------------------


def _probe_cli(server, *args, model="judge-model"):
    from click.testing import CliRunner

    from gradebox.cli import cli

    env = {
        "GRADEBOX_JUDGE_BASE_URL": server.base_url,
        "GRADEBOX_JUDGE_MODEL": model,
        "GRADEBOX_JUDGE_API_KEY": "sk-canary-probe-key",
        "OPENAI_BASE_URL": None,
        "OPENAI_API_KEY": None,
    }
    return CliRunner().invoke(cli, ["judge", "probe", "--no-judge-cache", *args], env=env)


def test_judge_probe_command_reports_the_rung_and_exits_0(server, quirks):
    server.responder = quirks.llama_cpp
    result = _probe_cli(server, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["capabilities"]["rung"] == "json_object" and data["validated"] is True
    assert data["repeat"] == 1
    assert "sk-canary-probe-key" not in result.output
    text = _probe_cli(server)
    assert "rung json_object (validated); temperature 0 (deterministic)" in text.output


def test_judge_probe_exits_1_when_no_rung_validates(server, quirks):
    server.responder = quirks.prose
    result = _probe_cli(server)
    assert result.exit_code == 1
    assert "NO rung validated" in result.output


def test_judge_probe_on_a_reasoning_model_says_it_is_not_deterministic(server, quirks):
    server.responder = quirks.reasoning
    result = _probe_cli(server, "--judge-max-tokens", "512", "--json")
    data = json.loads(result.output)
    assert data["capabilities"]["temperature"] == "server_default" and data["repeat"] == 3
    assert data["capabilities"]["token_param"] == "max_completion_tokens"


def test_judge_probe_exits_2_unreachable_or_bad_options(server):
    from click.testing import CliRunner

    from gradebox.cli import cli

    env = {"GRADEBOX_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "GRADEBOX_JUDGE_MODEL": "m"}
    result = CliRunner().invoke(cli, ["judge", "probe", "--no-judge-cache"], env=env)
    assert result.exit_code == 2 and "cannot be probed" in result.output
    bad = _probe_cli(server, "--judge-extra-body", '{"temperature": 2}')
    assert bad.exit_code == 2 and "must not set ['temperature']" in bad.output
    help_text = CliRunner().invoke(cli, ["judge", "probe", "--help"]).output
    assert "Example:" in help_text and "gradebox judge probe --json" in help_text
