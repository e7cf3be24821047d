"""The Judge: request shape, cache, concurrency, ordering, skipping, rubric errors."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

import rubrics
from judge import Judge, ReplyCache, cache_key, reply_schema
from judge.types import Reply


def test_request_is_temperature_zero_seeded_and_strictly_schema_bound(server, make_judge, item):
    make_judge(seed=1234).judge_one(item())
    (seen,) = server.requests
    body = seen.body
    assert body["model"] == "judge-model"
    assert body["temperature"] == 0
    assert body["seed"] == 1234
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "gradebox_judgement"
    assert fmt["json_schema"]["schema"] == reply_schema(rubrics.load("default"))
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert seen.headers["authorization"] == "Bearer sk-test-key"


def test_openai_client_retries_are_off(server, make_judge, item):
    # Only our policy retries: with max_attempts=1 one 500 is one request.
    server.responder = lambda body: server.error(500, "boom")
    make_judge(max_attempts=1).judge_one(item())
    assert len(server.requests) == 1


def test_injected_client_is_used_with_its_retries_off(server, make_config, item):
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="injected", max_retries=5)
    server.responder = lambda body: server.error(503, "down")
    with Judge(make_config(max_attempts=2), client=client) as judge:
        result = judge.judge_one(item())
    assert result.attempts == 2 and len(server.requests) == 2
    assert server.requests[0].headers["authorization"] == "Bearer injected"
    client.models  # the caller's client is not closed by the judge  # noqa: B018


# -- cache -------------------------------------------------------------------------------


def test_second_run_is_a_cache_hit_with_the_same_annotation(server, make_judge, item, tmp_path):
    cache = tmp_path / "judge.sqlite"
    first = make_judge(cache_path=cache).judge_one(item())
    second = make_judge(cache_path=cache).judge_one(item())  # a new process would do the same

    assert len(server.requests) == 1
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert (first.attempts, second.attempts) == (1, 0)
    varying = {"latency_ms", "cache_hit", "attempts"}
    a, b = first.to_row(), second.to_row()
    assert {k: v for k, v in a.items() if k not in varying} == {
        k: v for k, v in b.items() if k not in varying
    }
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # The full request is kept beside the reply, for a human to see what the judge saw.
    stored = ReplyCache(cache)
    request = stored.request(first.key)
    stored.close()
    assert request is not None
    assert request["messages"] == server.requests[0].body["messages"]
    assert (request["seed"], request["temperature"]) == (7, 0.0)


def test_no_cache_config_neither_reads_nor_writes(server, make_judge, item, tmp_path):
    cache = tmp_path / "judge.sqlite"
    make_judge(cache_path=cache).judge_one(item())
    results = [make_judge(cache_path=cache, no_cache=True).judge_one(item()) for _ in range(2)]
    assert len(server.requests) == 3
    assert not any(r.cache_hit for r in results)


def test_bypass_cache_asks_again_and_keeps_the_first_entry(server, make_judge, item, tmp_path):
    judge = make_judge(cache_path=tmp_path / "c.sqlite")
    judge.judge_one(item())
    again = judge.judge_many([item()], bypass_cache=True)
    assert len(server.requests) == 2 and not again[0].cache_hit
    assert judge.judge_one(item()).cache_hit
    assert len(server.requests) == 2


def test_needs_review_replies_are_cached_as_needs_review(server, make_judge, item, tmp_path):
    server.push(server.ok("I think this is fine."))
    cache = tmp_path / "c.sqlite"
    first = make_judge(cache_path=cache).judge_one(item())
    second = make_judge(cache_path=cache).judge_one(item())
    assert len(server.requests) == 1
    assert (first.status, second.status) == ("needs_review", "needs_review")
    assert second.raw == "I think this is fine." and second.cache_hit


def test_unavailable_is_not_cached(server, make_judge, item, tmp_path):
    server.push(*[server.error(500, "boom")] * 2)
    cache = tmp_path / "c.sqlite"
    assert make_judge(cache_path=cache, max_attempts=2).judge_one(item()).status == "unavailable"
    again = make_judge(cache_path=cache).judge_one(item())
    assert (again.status, again.cache_hit) == ("scored", False)


BASE = {
    "base_url": "http://x/v1",
    "model": "m",
    "messages": [{"role": "user", "content": "c"}],
    "schema_sha256": "a" * 64,
    "rubric": ("default", "1.0.0", "d" * 64),
    "code": "def f(): ...",
    "seed": 1,
    "temperature": 0.0,
}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_url", "http://y/v1"),
        ("model", "m2"),
        ("messages", [{"role": "user", "content": "c2"}]),
        ("schema_sha256", "b" * 64),
        ("messages", [{"role": "system", "content": "c"}]),
        ("rubric", ("default", "1.0.1", "d" * 64)),
        ("rubric", ("default", "1.0.0", "e" * 64)),
        ("code", "def f(): pass"),
        ("seed", 2),
    ],
)
def test_cache_key_covers_the_full_request(field, value):
    assert cache_key(**BASE) != cache_key(**{**BASE, field: value})
    assert cache_key(**BASE) == cache_key(**dict(BASE))


def test_cache_survives_lone_surrogates(tmp_path):
    from judge.types import Reply

    cache = ReplyCache(tmp_path / "c.sqlite")
    reply = Reply("{\ud800}", "m", None, "stop", None, None, "json_schema")
    cache.put("k", reply, {"messages": [{"role": "user", "content": "\udfff"}]})
    assert cache.get("k") == reply
    assert cache.request("k") == {"messages": [{"role": "user", "content": "\udfff"}]}
    cache.close()


# -- concurrency and order ---------------------------------------------------------------


def test_concurrency_limit_is_respected(server, make_judge, item):
    def slow(body):
        reply = server.ok_json(server.valid(server.schema_of(body)))
        reply.delay = 0.05
        return reply

    server.responder = slow
    items = [
        item(sample_id=f"s{i}", code=f"def is_even(n):\n    return {i} or n\n") for i in range(24)
    ]
    results = make_judge(concurrency=4).judge_many(items)
    assert len(server.requests) == 24
    assert server.max_in_flight == 4
    assert all(r.status == "scored" for r in results)


def test_results_come_back_in_input_order(server, make_judge, item):
    lock = threading.Lock()
    seen = []

    def by_code(body):
        user = body["messages"][1]["content"]
        n = int(user.split("return ")[1].split()[0])
        with lock:
            seen.append(n)
        reply = server.ok_json(server.valid(server.schema_of(body), score=n % 5 + 1))
        reply.delay = (10 - n) * 0.005  # later items answer first
        return reply

    server.responder = by_code
    items = [item(sample_id=f"s{n}", code=f"def f(n):\n    return {n}\n") for n in range(10)]
    results = make_judge(concurrency=10).judge_many(items)
    assert [r.scores["INT001"] for r in results] == [n % 5 + 1 for n in range(10)]


def test_empty_code_is_skipped_without_a_request(server, make_judge, item):
    result = make_judge().judge_one(item(code="  \n"))
    assert (result.status, result.reason_code) == ("skipped", "no_code")
    assert server.requests == []


def test_bad_rubric_stops_judge_many_before_any_request(server, make_judge, item, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n')
    with pytest.raises(rubrics.RubricError) as info:
        make_judge().judge_many([item(), item(sample_id="s2", rubric_name=str(bad))])
    assert f"{bad}: rubric: 'version' is a required property" in str(info.value)
    assert server.requests == []


def test_judge_many_of_nothing(make_judge):
    assert make_judge().judge_many([]) == []


def test_unusable_cache_file_is_a_config_error(make_config, tmp_path):
    from judge import JudgeConfigError

    bad = tmp_path / "not-a-db.sqlite"
    bad.write_bytes(b"this is not an SQLite database, just some bytes" * 100)
    with pytest.raises(JudgeConfigError, match="cannot open the judge cache"):
        Judge(make_config(cache_path=bad))


def test_judge_many_mixes_hits_skips_and_requests_in_order(server, make_judge, item, tmp_path):
    judge = make_judge(cache_path=tmp_path / "c.sqlite", concurrency=3)
    judge.judge_one(item(sample_id="a"))
    items = [
        item(sample_id="a"),
        item(sample_id="b", code=""),
        item(sample_id="c", code="def is_even(n):\n    return n & 1 == 0\n"),
        item(sample_id="d", code="def is_even(n):\n    return not n % 2\n"),
    ]
    results = judge.judge_many(items)
    assert [(r.status, r.cache_hit) for r in results] == [
        ("scored", True),
        ("skipped", False),
        ("scored", False),
        ("scored", False),
    ]
    assert len(server.requests) == 3


# -- the fast path: stored, checked results by input key ---------------------------------

VARYING = {"latency_ms", "cache_hit", "attempts"}


def _stable(result):
    return {k: v for k, v in result.to_row().items() if k not in VARYING}


def _slow_path_hit(judge, item):
    """The request-key path: render, look the reply up, check it again."""
    plan = judge._plan(item, judge._input_key(item))
    return judge._cached(plan, bypass_cache=False)


@pytest.mark.parametrize("reply", ["valid", "prose"])
def test_fast_path_hit_matches_the_slow_path_row(server, make_judge, item, tmp_path, reply):
    if reply == "prose":
        server.push(server.ok("I think this is fine."))
    cache = tmp_path / "c.sqlite"
    first = make_judge(cache_path=cache).judge_one(item())
    judge = make_judge(cache_path=cache)
    fast = judge.judge_many([item()])[0]
    slow = _slow_path_hit(judge, item())
    assert len(server.requests) == 1
    assert (fast.cache_hit, fast.attempts) == (True, 0)
    assert _stable(fast) == _stable(slow) == _stable(first)
    assert fast.status == ("scored" if reply == "valid" else "needs_review")
    # The full request and the raw reply stay stored for audit, under the row's key.
    stored = ReplyCache(cache)
    assert stored.request(fast.key) is not None
    assert stored.get(fast.key).content == fast.raw
    stored.close()


def test_fast_path_skips_rendering_and_revalidation(
    server, make_judge, item, tmp_path, monkeypatch
):
    cache = tmp_path / "c.sqlite"
    make_judge(cache_path=cache).judge_many(
        [item(sample_id=f"s{i}", code=f"x = {i}\n") for i in range(3)]
    )
    from judge.prompt import PromptBuilder
    from judge.reply import ReplyChecker

    def boom(*args, **kwargs):
        raise AssertionError("the fast path must not render or check")

    monkeypatch.setattr(PromptBuilder, "render", boom)
    monkeypatch.setattr(ReplyChecker, "check", boom)
    judge = make_judge(cache_path=cache)
    results = judge.judge_many([item(sample_id=f"s{i}", code=f"x = {i}\n") for i in range(3)])
    assert all(r.cache_hit and r.status == "scored" for r in results)
    assert judge.judge_one(item(code="x = 1\n")).cache_hit
    assert len(server.requests) == 3


def test_batched_lookup_over_many_chunks(tmp_path):
    from judge.cache import input_key

    cache = ReplyCache(tmp_path / "c.sqlite")
    reply = Reply("{}", "m", None, "stop", None, None, "json_schema")
    rows = []
    for i in range(1203):
        cache.put(f"r{i}", reply, {})
        rows.append(
            (input_key("c" * 64, fn="f", signature="s", spec="p", code=str(i)), f"r{i}", {"i": i})
        )
    cache.put_results(rows)
    found = cache.results([k for k, _, _ in rows] + ["absent"])
    assert len(found) == 1203 and "absent" not in found
    assert found[rows[700][0]] == ("r700", '{"i":700}')
    cache.close()


def _rubric_copy(tmp_path):
    src = Path(rubrics.load("default").source)
    dest = tmp_path / "rubrics"
    shutil.copytree(src.parent, dest)
    return str(dest / src.name)


def test_changed_rubric_content_misses(server, make_judge, item, tmp_path):
    cache = tmp_path / "c.sqlite"
    path = _rubric_copy(tmp_path)
    make_judge(cache_path=cache).judge_one(item(rubric_name=path))
    assert make_judge(cache_path=cache).judge_one(item(rubric_name=path)).cache_hit
    text = Path(path).read_text()
    assert 'title = "' in text
    Path(path).write_text(text.replace('title = "', 'title = "Edited: ', 1))
    again = make_judge(cache_path=cache).judge_one(item(rubric_name=path))
    assert not again.cache_hit and len(server.requests) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other-model"},
        {"seed": 8},
    ],
)
def test_changed_model_or_sampling_misses(server, make_judge, item, tmp_path, change):
    cache = tmp_path / "c.sqlite"
    make_judge(cache_path=cache).judge_one(item())
    again = make_judge(cache_path=cache, **change).judge_many([item()])[0]
    assert not again.cache_hit and len(server.requests) == 2


@pytest.mark.parametrize("field", ["fn", "signature", "spec", "code"])
def test_changed_item_field_misses(server, make_judge, item, tmp_path, field):
    cache = tmp_path / "c.sqlite"
    make_judge(cache_path=cache).judge_one(item())
    base = item()
    judge = make_judge(cache_path=cache)
    changed = item(**{field: getattr(base, field) + "x"})
    assert judge._input_key(changed) != judge._input_key(base)
    again = judge.judge_one(changed)
    assert not again.cache_hit and len(server.requests) == 2


def test_input_context_covers_what_decides_a_result(monkeypatch):
    from judge import cache as cache_module

    base = {
        "base_url": "http://x/v1",
        "model": "m",
        "seed": 1,
        "temperature": 0.0,
        "rubric": ("default", "1.0.0", "d" * 64),
        "schema_sha256": "a" * 64,
        "templates_sha256": "t" * 64,
    }
    key = cache_module.input_context(**base)
    for field, value in [
        ("base_url", "http://y/v1"),
        ("model", "m2"),
        ("seed", 2),
        ("temperature", 0.5),
        ("rubric", ("default", "1.0.1", "d" * 64)),
        ("rubric", ("default", "1.0.0", "e" * 64)),
        ("schema_sha256", "b" * 64),
        ("templates_sha256", "u" * 64),
    ]:
        assert cache_module.input_context(**{**base, field: value}) != key
    monkeypatch.setattr(cache_module, "RESULT_FORMAT", cache_module.RESULT_FORMAT + 1)
    assert cache_module.input_context(**base) != key
    monkeypatch.undo()
    monkeypatch.setattr(cache_module, "CACHE_FORMAT", cache_module.CACHE_FORMAT + 1)
    assert cache_module.input_context(**base) != key
    monkeypatch.undo()
    monkeypatch.setattr(cache_module, "logic_sha256", lambda: "0" * 64)
    assert cache_module.input_context(**base) != key


CORRUPTIONS = [
    "not json at all {",
    "[]",
    "null",
    '{"status": "scored"}',
    "EDIT:status=pass",
    "EDIT:status=unavailable",
    "EDIT:scores={}",
    'EDIT:scores={"INT001": "4"}',
    "EDIT:issues=[{}]",
    'EDIT:key="0"',
    'EDIT:rubric="default@0.0.0"',
    "EDIT:latency_ms=1.0",
]


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_corrupted_stored_result_falls_back_to_the_slow_path(
    server, make_judge, item, tmp_path, corruption
):
    import json

    cache = tmp_path / "c.sqlite"
    first = make_judge(cache_path=cache).judge_one(item())
    with sqlite3.connect(cache) as db:
        (text,) = db.execute("SELECT result FROM results").fetchone()
        if corruption.startswith("EDIT:"):
            name, value = corruption[5:].split("=", 1)
            row = json.loads(text)
            row[name] = json.loads(value) if value[:1] in '[{"0123456789' else value
            bad = json.dumps(row)
        else:
            bad = corruption
        db.execute("UPDATE results SET result = ?", (bad,))
    results = [make_judge(cache_path=cache).judge_many([item()])[0] for _ in range(2)]
    assert len(server.requests) == 1  # the stored reply was checked again, not re-asked
    assert all(r.cache_hit for r in results)
    assert _stable(results[0]) == _stable(results[1]) == _stable(first)
    with sqlite3.connect(cache) as db:  # and the result row was repaired
        assert json.loads(db.execute("SELECT result FROM results").fetchone()[0]) == _stable(first)


def test_result_without_its_reply_is_not_served(server, make_judge, item, tmp_path):
    cache = tmp_path / "c.sqlite"
    make_judge(cache_path=cache).judge_one(item())
    with sqlite3.connect(cache) as db:
        db.execute("DELETE FROM replies")
    again = make_judge(cache_path=cache).judge_many([item()])[0]
    assert not again.cache_hit and len(server.requests) == 2


def test_old_cache_without_results_is_upgraded_by_the_slow_path(server, make_judge, item, tmp_path):
    cache = tmp_path / "c.sqlite"
    first = make_judge(cache_path=cache).judge_one(item())
    with sqlite3.connect(cache) as db:
        db.execute("DROP TABLE results")
    slow = make_judge(cache_path=cache).judge_many([item()])[0]
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
    fast = make_judge(cache_path=cache).judge_many([item()])[0]
    assert len(server.requests) == 1 and slow.cache_hit and fast.cache_hit
    assert _stable(first) == _stable(slow) == _stable(fast)


def test_bypass_and_no_cache_skip_the_fast_path(server, make_judge, item, tmp_path):
    cache = tmp_path / "c.sqlite"
    make_judge(cache_path=cache).judge_one(item())
    assert not make_judge(cache_path=cache).judge_many([item()], bypass_cache=True)[0].cache_hit
    assert not make_judge(cache_path=cache, no_cache=True).judge_many([item()])[0].cache_hit
    assert len(server.requests) == 3


def test_unavailable_stores_no_result(server, make_judge, item, tmp_path):
    server.push(*[server.error(500, "boom")] * 2)
    cache = tmp_path / "c.sqlite"
    assert (
        make_judge(cache_path=cache, max_attempts=2).judge_many([item()])[0].status == "unavailable"
    )
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 0
