"""Fixtures for the inspect_ai integration: a small task set, scripted replies, a mock model.

Every eval here is a real inspect eval: the real ``mockllm/model`` provider
(scripted through its ``custom_outputs`` callable), the real log writer and
reader, gradebox's real sandbox. Mock outputs carry a ``usage``: without one,
mockllm counts tokens with tiktoken, which downloads its encoding on first use
(the tests run offline).
"""

from __future__ import annotations

import json
import shutil
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CASES = Path(__file__).resolve().parent / "cases"
REPLIES = [json.loads(line) for line in (CASES / "replies.jsonl").read_text().splitlines()]
JUDGE_ENV = (
    "GRADEBOX_JUDGE_BASE_URL",
    "GRADEBOX_JUDGE_API_KEY",
    "GRADEBOX_JUDGE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No judge endpoint, whatever the developer's environment holds."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def taskset(tmp_path: Path) -> Path:
    """A copy of the small task set (is_even, mean, worker) in a scratch directory."""
    return Path(shutil.copytree(CASES / "taskset", tmp_path / "taskset"))


@pytest.fixture
def reply() -> Callable[..., str]:
    """``reply(task, name, **subs)``: a scripted reply, ``$NAME`` placeholders filled in."""

    def get(task: str, name: str, **subs: str) -> str:
        found = [r["reply"] for r in REPLIES if r["task"] == task and r["name"] == name]
        assert len(found) == 1, (task, name)
        return string.Template(found[0]).substitute(subs)

    return get


@pytest.fixture
def mock_model() -> Callable[[Any, dict[str, list[str]]], Any]:
    """``mock_model(dataset, replies)``: mockllm answering each task's prompt in turn.

    ``replies`` maps a task id to its replies, handed out one per call for that
    task's prompt (epochs of one task may run in any order: what counts is which
    replies a task got, and each row is read back from the log with its reply).
    """
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def make(dataset: Any, replies: dict[str, list[str]]) -> Any:
        by_prompt = {str(s.input): str(s.id) for s in dataset}
        queues = {task: iter(list(texts)) for task, texts in replies.items()}

        def answer(messages: list[Any], *_: Any) -> ModelOutput:
            task = by_prompt[messages[-1].text]
            out = ModelOutput.from_content(model="mockllm/model", content=next(queues[task]))
            out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
            return out

        return get_model("mockllm/model", custom_outputs=answer, memoize=False)

    return make


@pytest.fixture
def log_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "logs"
    path.mkdir()
    yield path
