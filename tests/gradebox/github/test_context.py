"""The Actions environment read once: the PR, the head commit, where the token may go."""

from __future__ import annotations

import json

import pytest

from gradebox.github import GitHubContext, NoContext

from .conftest import SHA, TOKEN

BASE = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": "acme/calc", "GITHUB_SHA": "b" * 40}


def _env(tmp_path, event, **extra):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return {**BASE, "GITHUB_EVENT_PATH": str(path), **extra}


def test_a_pull_request_event_gives_its_number_and_head(tmp_path):
    ctx = GitHubContext.from_env(
        _env(tmp_path, {"pull_request": {"number": 3, "head": {"sha": SHA}}})
    )
    assert (ctx.pr_number, ctx.head_sha, ctx.api_url) == (3, SHA, "https://api.github.com")
    assert TOKEN not in repr(ctx)


def test_an_issue_comment_on_a_pr_uses_github_sha(tmp_path):
    event = {"issue": {"number": 9, "pull_request": {"url": "x"}}}
    ctx = GitHubContext.from_env(_env(tmp_path, event))
    assert (ctx.pr_number, ctx.head_sha) == (9, "b" * 40)


def test_a_push_has_no_pull_request(tmp_path):
    ctx = GitHubContext.from_env(_env(tmp_path, {"ref": "refs/heads/main"}))
    assert ctx.pr_number is None and ctx.head_sha == "b" * 40


@pytest.mark.parametrize(
    "url",
    [
        "ftp://api.example.com",
        "https://user:pw@api.example.com",
        "https://api.example.com/?x=1",
        "http://10.0.0.1/api",
        "javascript:alert(1)",
    ],
)
def test_unsafe_api_urls_are_refused(tmp_path, url):
    with pytest.raises(NoContext):
        GitHubContext.from_env(_env(tmp_path, {}, GITHUB_API_URL=url))


def test_a_broken_event_or_repository_is_a_clear_error(tmp_path):
    with pytest.raises(NoContext, match="pull_request"):
        GitHubContext.from_env(_env(tmp_path, {"pull_request": {"number": 3}}))
    with pytest.raises(NoContext, match="GITHUB_REPOSITORY"):
        GitHubContext.from_env({**BASE, "GITHUB_REPOSITORY": "../../x"})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(NoContext, match="event file"):
        GitHubContext.from_env({**BASE, "GITHUB_EVENT_PATH": str(bad)})
