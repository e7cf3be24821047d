"""Posting to a fake GitHub on loopback: real sockets, the real httpx client, GitHub's limits."""

from __future__ import annotations

import json
import logging
import time

import pytest

from gradebox.github import ClientOptions, GitHubClient, MissingPermission, post
from gradebox.github.render import MARKER, SUMMARY_LIMIT

from .conftest import FAST, OTHER, PR, SHA, TOKEN, make_ctx, make_row
from .fakegithub import Fault


def ours(fake):
    return [c for c in fake.comments.get(PR, []) if c["user"]["login"] == "github-actions[bot]"]


def test_two_runs_leave_exactly_one_comment_edited_the_second_time(fake, ctx):
    first = post([make_row(verdict="fail")], ctx, FAST)
    assert first.ok, first.lines()
    assert first.part("comment").status == "created"
    second = post([make_row(verdict="pass")], ctx, FAST)
    assert second.part("comment").status == "updated"
    comments = fake.comments[PR]
    assert len(comments) == 1
    assert comments[0]["body"].startswith(MARKER + "\n")
    assert "**pass**" in comments[0]["body"] and "**fail**" not in comments[0]["body"]
    assert len(fake.writes("POST", r"/comments$")) == 1
    assert len(fake.writes("PATCH", r"/issues/comments/")) == 1


def test_a_comment_by_someone_else_with_the_marker_is_never_edited(fake, ctx):
    forged = fake.seed_comment(PR, "mallory", MARKER + "\nI am the gate now")
    post([make_row()], ctx, FAST)
    post([make_row()], ctx, FAST)
    by_id = {c["id"]: c for c in fake.comments[PR]}
    assert by_id[forged]["body"] == MARKER + "\nI am the gate now"
    assert len(ours(fake)) == 1
    assert not any(f"/issues/comments/{forged}" in w.path for w in fake.writes())


def test_our_own_comment_with_the_marker_not_first_is_not_the_sticky_one(fake, ctx):
    # e.g. another workflow of the same bot quoting candidate text
    other = fake.seed_comment(PR, "github-actions[bot]", "quoted:\n" + MARKER + "\nhello")
    post([make_row()], ctx, FAST)
    post([make_row()], ctx, FAST)
    by_id = {c["id"]: c for c in fake.comments[PR]}
    assert by_id[other]["body"].startswith("quoted:")
    assert len(ours(fake)) == 2  # theirs untouched, ours one


def test_a_marker_in_candidate_text_does_not_change_which_comment_is_edited(fake, ctx):
    evil = f"{MARKER}\n-->{MARKER}<!-- x"
    post([make_row(id=evil, detail=evil, message=evil, test_id=evil)], ctx, FAST)
    body = ours(fake)[0]["body"]
    assert body.count(MARKER) == 1 and body.startswith(MARKER)
    assert body.count("<!--") == 1
    post([make_row()], ctx, FAST)
    assert len(ours(fake)) == 1


def test_the_sticky_comment_is_found_past_the_first_page(fake, ctx):
    fake.page_size = 2
    for i in range(5):
        fake.seed_comment(PR, "someone", f"comment {i}")
    post([make_row()], ctx, FAST)
    for i in range(3):
        fake.seed_comment(PR, "someone", f"later {i}")
    report = post([make_row()], ctx, FAST)
    assert report.part("comment").status == "updated"
    assert len(ours(fake)) == 1
    pages = [s for s in fake.seen if s.method == "GET" and s.path.endswith("/comments")]
    assert any("page=5" in s.query for s in pages)


def test_a_next_page_elsewhere_is_not_followed_and_gets_no_token(fake, ctx, tmp_path):
    from .fakegithub import FakeGitHub, Identity

    elsewhere = FakeGitHub({TOKEN: Identity("github-actions[bot]")}).start()
    try:
        fake.page_size = 1
        fake.link_base = elsewhere.url
        fake.seed_comment(PR, "someone", "a")
        fake.seed_comment(PR, "someone", "b")
        report = post([make_row()], ctx, FAST)
        assert report.part("comment").status == "failed"
        assert "outside the API root" in report.part("comment").detail
        assert elsewhere.seen == []
    finally:
        elsewhere.stop()


def test_120_findings_go_out_as_3_annotation_requests(fake, ctx):
    report = post([make_row(n_findings=120)], ctx, FAST)
    assert report.ok, report.lines()
    assert report.part("check_run").requests == 3
    creates = fake.writes("POST", r"/check-runs$")
    updates = fake.writes("PATCH", r"/check-runs/\d+$")
    assert len(creates) == 1 and len(updates) == 2
    sizes = [len(w.body["output"]["annotations"]) for w in creates + updates]
    assert sizes == [50, 50, 20]
    (run,) = fake.check_runs
    assert run["name"] == "gradebox" and run["head_sha"] == SHA
    assert run["conclusion"] == "failure"
    assert len(run["annotations"]) == 120
    assert {a["path"] for a in run["annotations"]} == {"calc/ops.py"}
    assert {a["annotation_level"] for a in run["annotations"]} == {"failure"}


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["pass"], "success"),
        (["pass", "needs_review"], "neutral"),
        (["needs_review", "fail"], "failure"),
    ],
)
def test_conclusions(fake, ctx, verdicts, expected):
    rows = [make_row(id=f"g{i}", verdict=v, n_findings=0) for i, v in enumerate(verdicts)]
    post(rows, ctx, FAST)
    assert fake.check_runs[-1]["conclusion"] == expected


def test_a_summary_past_the_limit_is_cut_with_a_note(fake, ctx):
    rows = [make_row(id=f"gate-{i}-" + "x" * 100, detail="y" * 300) for i in range(400)]
    report = post(rows, ctx, FAST)
    assert report.ok, report.lines()
    summary = fake.check_runs[0]["output"]["summary"]
    assert len(summary) <= SUMMARY_LIMIT
    assert "truncated" in summary
    body = ours(fake)[0]["body"]
    assert len(body) <= SUMMARY_LIMIT and body.startswith(MARKER) and "truncated" in body


def test_a_403_is_a_clear_error_naming_the_permission(fake, tmp_path):
    fake.tokens[TOKEN].perms = {"pull-requests"}  # no checks: write
    report = post([make_row()], make_ctx(fake, tmp_path), FAST)
    assert not report.ok
    part = report.part("check_run")
    assert part.status == "failed"
    assert "403" in part.detail and "`checks: write`" in part.detail
    assert "permissions:" in part.detail
    assert report.part("comment").status == "created"  # the other parts still went out


def test_a_404_names_what_to_check(fake, ctx):
    fake.faults.append(Fault("GET", r"/comments$", 404, body={"message": "Not Found"}))
    part = post([make_row()], ctx, FAST).part("comment")
    assert part.status == "failed" and "404" in part.detail
    assert "pull-requests: read" in part.detail and "GITHUB_REPOSITORY" in part.detail


def test_a_5xx_then_success_is_retried(fake, ctx):
    fake.faults.append(Fault("GET", r"/comments$", 502, times=2))
    report = post([make_row()], ctx, FAST)
    assert report.ok, report.lines()
    listing = [s for s in fake.seen if s.method == "GET" and s.path.endswith("/comments")]
    assert len(listing) == 3


def test_5xx_every_time_gives_up_after_the_attempts(fake, ctx):
    fake.faults.append(Fault("GET", r"/comments$", 503, times=100))
    part = post([make_row()], ctx, FAST).part("comment")
    assert part.status == "failed" and "gave up" in part.detail
    listing = [s for s in fake.seen if s.method == "GET" and s.path.endswith("/comments")]
    assert len(listing) == FAST.attempts


def test_a_create_that_went_through_behind_a_502_is_not_doubled(fake, ctx):
    fake.faults.append(Fault("POST", r"/comments$", 502, after=True))
    fake.faults.append(Fault("POST", r"/check-runs$", 502, after=True))
    report = post([make_row()], ctx, FAST)
    assert report.ok, report.lines()
    assert len(ours(fake)) == 1
    assert len(fake.check_runs) == 1


def _napping_client(ctx):
    """A client whose every wait is recorded (and really waited): the waits decide, not a clock."""
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        time.sleep(seconds)

    return GitHubClient(ctx, FAST, sleep=sleep), naps


def test_a_rate_limit_reply_waits_as_told(fake, ctx):
    fake.faults.append(Fault("POST", r"/check-runs$", 429, headers={"Retry-After": "1"}))
    client, naps = _napping_client(ctx)
    try:
        report = post([make_row()], ctx, FAST, client=client)
    finally:
        client.close()
    assert report.ok, report.lines()
    posts = fake.writes("POST", r"/check-runs$")
    assert len(posts) == 2 and posts[1].at - posts[0].at >= 0.95
    assert 0.95 <= sum(naps) < 4, naps  # the second told, not the 5 s bound or a backoff ladder


def test_a_primary_rate_limit_waits_until_the_reset(fake, ctx):
    reset = str(int(time.time()) + 1)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
    fake.faults.append(
        Fault(
            "GET", r"/comments$", 403, headers=headers, body={"message": "API rate limit exceeded"}
        )
    )
    report = post([make_row()], ctx, FAST)
    assert report.ok, report.lines()
    listing = [s for s in fake.seen if s.method == "GET" and s.path.endswith("/comments")]
    assert listing[1].at - listing[0].at >= 0.9


def test_a_rate_limit_past_the_bound_is_not_waited(fake, ctx):
    fake.faults.append(Fault("GET", r"/comments$", 429, headers={"Retry-After": "3600"}))
    client, naps = _napping_client(ctx)
    try:
        part = post([make_row()], ctx, FAST, client=client).part("comment")
    finally:
        client.close()
    assert sum(naps) < 3, naps  # not the hour, nor the 5 s bound
    assert part.status == "failed" and "3600 s" in part.detail and "5 s" in part.detail


def test_a_personal_token_is_asked_who_it_is(fake, tmp_path):
    fake.seed_comment(PR, "github-actions[bot]", MARKER + "\nthe bot's, not mallory's")
    report = post([make_row()], make_ctx(fake, tmp_path, token=OTHER), FAST)
    assert report.part("comment").status == "created"
    assert [c["user"]["login"] for c in fake.comments[PR]] == ["github-actions[bot]", "mallory"]


def test_a_push_event_gets_a_check_run_and_no_comment(fake, tmp_path):
    report = post([make_row()], make_ctx(fake, tmp_path, pr=None), FAST)
    assert report.part("comment").status == "skipped"
    assert report.part("check_run").status == "created"
    assert fake.check_runs[0]["head_sha"] == "b" * 40  # GITHUB_SHA without a pull request


def test_the_job_summary_is_appended(fake, ctx):
    assert ctx.step_summary is not None
    ctx.step_summary.write_text("earlier step\n")
    post([make_row()], ctx, FAST)
    text = ctx.step_summary.read_text()
    assert text.startswith("earlier step\n") and "gradebox gate" in text and MARKER not in text


def test_the_token_is_nowhere(fake, tmp_path, caplog):
    """Not in a comment, a check run, the summary, a message, a repr or any log line."""
    caplog.set_level(logging.DEBUG)
    echo = {"message": f"Bearer {TOKEN} is not allowed here"}  # a server echoing it back
    fake.faults.append(Fault("POST", r"/check-runs$", 403, body=echo))
    fake.faults.append(Fault("GET", r"/comments$", 500, body=echo))
    ctx = make_ctx(fake, tmp_path)
    report = post([make_row(detail=TOKEN, message=TOKEN)], ctx, FAST)  # even a row quoting it
    texts = [*report.lines(), repr(ctx), repr(report), caplog.text]
    texts += [tmp_path.joinpath("summary.md").read_text()]
    texts += [c["body"] for c in fake.comments.get(PR, [])]
    texts += [json.dumps(s.body) for s in fake.seen]
    assert len(fake.comments[PR]) == 1 and "***" in fake.comments[PR][0]["body"]
    assert not [t for t in texts if TOKEN in t]
    assert all(s.authorization == f"Bearer {TOKEN}" for s in fake.seen)


def test_http_elsewhere_than_loopback_is_refused_before_any_request(tmp_path):
    from gradebox.github import GitHubContext, NoContext

    env = {
        "GITHUB_API_URL": "http://api.example.com",
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "acme/calc",
        "GITHUB_SHA": SHA,
    }
    with pytest.raises(NoContext, match="https"):
        GitHubContext.from_env(env)
    with pytest.raises(NoContext, match="GITHUB_TOKEN"):
        GitHubContext.from_env({**env, "GITHUB_TOKEN": ""})


def test_a_client_call_maps_403_to_missing_permission(fake, ctx):
    fake.tokens[TOKEN].perms = set()
    with (
        GitHubClient(ctx, ClientOptions(backoff_s=0.01)) as client,
        pytest.raises(MissingPermission) as info,
    ):
        client.call(
            "POST",
            f"repos/acme/calc/issues/{PR}/comments",
            need="pull-requests: write",
            json={"body": "x"},
        )
    assert info.value.status == 403 and "pull-requests: write" in str(info.value)
