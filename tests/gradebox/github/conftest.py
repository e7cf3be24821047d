"""Fixtures: a fake GitHub on loopback, a context pointing at it, and gate rows."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gradebox.github import ClientOptions, GitHubContext
from gradebox.patches import GateRow
from gradebox.patches.model import ApplyReport, StaticPart, TestsPart
from gradebox.patches.tamper import TamperHit
from static.differential import Tagged
from static.findings import Finding

from ..patches.conftest import env_cache  # noqa: F401 - the session's environment cache
from .fakegithub import FakeGitHub, Identity

TOKEN = "ghs_s3cr3tT0kenNeverToBeSeen0123456789"
OTHER = "ghs_otherUserToken"
SHA = "a" * 40
PR = 7
FAST = ClientOptions(attempts=4, max_wait_s=5, backoff_s=0.01, timeout_s=5)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(
        {TOKEN: Identity("github-actions[bot]"), OTHER: Identity("mallory", can_ask_user=True)}
    ).start()
    yield server
    server.stop()


@pytest.fixture
def ctx(fake: FakeGitHub, tmp_path: Path) -> GitHubContext:
    return make_ctx(fake, tmp_path)


def make_ctx(
    fake: FakeGitHub, tmp_path: Path, *, token: str = TOKEN, pr: int | None = PR
) -> GitHubContext:
    event = tmp_path / "event.json"
    payload = (
        {"pull_request": {"number": pr, "head": {"sha": SHA}, "body": "fix mean"}} if pr else {}
    )
    event.write_text(json.dumps(payload))
    env = {
        "GITHUB_API_URL": fake.url,
        "GITHUB_TOKEN": token,
        "GITHUB_REPOSITORY": "acme/calc",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": "b" * 40,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    return GitHubContext.from_env(env)


def finding(path: str, line: int, *, rule: str = "B324", message: str = "weak hash") -> Tagged:
    f = Finding("security", rule, "high", line, 1, message)
    return Tagged(path, f, "new", f"{rule}:{path}:{line}")


def make_row(
    id: str = "fix-mean",
    verdict: str = "fail",
    *,
    n_findings: int = 1,
    detail: str | None = "a new finding fails the policy",
    message: str = "weak hash",
    test_id: str = "tests/test_ops.py::test_add",
    tamper: tuple[TamperHit, ...] = (),
    apply: ApplyReport | None = None,
    added: dict[str, str] | None = None,
    tripwires: str = "unavailable",
    rules: tuple[tuple[str, str], ...] = (),
) -> GateRow:
    found = tuple(finding("calc/ops.py", i + 1, message=message) for i in range(n_findings))
    tests = TestsPart(
        fail_to_pass={"tests/test_ops.py::test_mean": "F2P"},
        pass_to_pass={test_id: "P2F"},
        by_category={"F2P": ("tests/test_ops.py::test_mean",), "P2F": (test_id,)},
        quarantined=(),
        base_runs=1,
        head_problems=(),
        head_timed_out=False,
        head_exit_code=1,
        collected=3,
        pass_to_pass_auto=False,
        added=dict(added or {}),  # type: ignore[arg-type]
        tripwires=tripwires,  # type: ignore[arg-type]
    )
    static = StaticPart(found, found, "added", "fail")
    return GateRow(
        id,
        verdict,  # type: ignore[arg-type]
        "policy:static" if verdict == "fail" else "ok",
        detail,
        SHA,
        apply or ApplyReport("exact"),
        tests,
        tamper,
        static,
        rules=rules,
    )


@pytest.fixture
def row() -> Callable[..., GateRow]:
    return make_row
